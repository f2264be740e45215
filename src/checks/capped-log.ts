/**
 * The log of one check: private, and capped while the check runs.
 *
 * Seen (issue 19, observation 5): a check that printed 100 MB left a 100 MB log every round, and the
 * log kept the workspace's umask (0644), so whatever a check printed — a key it read by mistake —
 * was readable by every user of the machine.
 *
 * Invariants:
 * - The log holds the first `headBytes` and the last `tailBytes` of what the check printed; when
 *   that is not all of it, a notice between the two says how many bytes were cut. Both ends are
 *   trimmed to whole lines where a line break is near (within half of each end), so the notice
 *   stands on a line of its own and no character is split.
 * - Streaming: the output passes through in chunks; the head goes to disk as it comes, and only the
 *   last `tailBytes` (plus the chunk being read) are held in memory. The whole output never is.
 * - Private: the file is created afresh with mode 0600 (an old file or a symlink planted at its
 *   path is removed first, never followed), and `privateDirectory` makes its directory 0700.
 * - Writing the log never fails the check: a write error (a full disk) stops the log, not the
 *   reading, so the check does not block on a full pipe and its exit code still counts.
 */
import {
  chmodSync,
  closeSync,
  constants,
  ftruncateSync,
  lstatSync,
  mkdirSync,
  openSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';

export interface CheckLogPolicy {
  /** Kept from the start: what the check set out to do, and usually the first error. */
  readonly headBytes: number;
  /** Kept from the end: the summary and the last error; the judge's tail is read from here. */
  readonly tailBytes: number;
}

/** 128 KiB per check at most: a test run's start and its summary fit, a runaway loop's 100 MB does not. */
export const defaultCheckLogPolicy: CheckLogPolicy = { headBytes: 64 * 1024, tailBytes: 64 * 1024 };

const PRIVATE_FILE = 0o600;
const PRIVATE_DIRECTORY = 0o700;
const NEWLINE = 0x0a;

/** The line in the middle of a capped log. */
export function cutNotice(cutBytes: number, printedBytes: number, policy: CheckLogPolicy): string {
  return (
    `[flower cut ${cutBytes} bytes here: the check printed ${printedBytes} bytes, and its log keeps ` +
    `about the first ${policy.headBytes} and the last ${policy.tailBytes}. Run the command yourself to see all of it.]`
  );
}

/**
 * Makes `dir` (and its missing parents) exist, with `dir` itself a real directory of mode 0700: a
 * symlink or file in its place is removed first, so the logs cannot be sent elsewhere.
 */
export function privateDirectory(dir: string): void {
  mkdirSync(dirname(dir), { recursive: true });
  const existing = lstatOrUndefined(dir);
  if (existing && !existing.isDirectory()) rmSync(dir, { force: true });
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIRECTORY });
  chmodSync(dir, PRIVATE_DIRECTORY);
}

/** Writes `text` as a fresh private file at `path` (the reason a check did not run). */
export function writePrivateFile(path: string, text: string): void {
  const log = CappedLog.create(path, { headBytes: Number.MAX_SAFE_INTEGER, tailBytes: 0 });
  log.write(Buffer.from(text));
  log.close();
}

/** What was printed and what of it the log lost. */
export interface CappedLogSummary {
  /** Everything the check printed, in bytes. */
  readonly printedBytes: number;
  /** Bytes left out of the middle of the log (0 when it holds everything). */
  readonly cutBytes: number;
}

export class CappedLog {
  private printed = 0;
  /** Bytes of the head on disk; the head's own last bytes are kept to find a line break at the end. */
  private headWritten = 0;
  private headEnd: Buffer = Buffer.alloc(0);
  /**
   * The last `tailBytes` after the head, in a ring allocated once: copying each chunk in (instead
   * of keeping the chunks) makes no garbage per chunk, so memory stays flat however much is printed.
   */
  private ring: Buffer | undefined;
  /** Where the next byte goes in the ring, and how many of its bytes hold output. */
  private ringAt = 0;
  private ringFilled = 0;
  private broken = false;
  private closed = false;

  private constructor(
    private readonly fd: number,
    private readonly policy: CheckLogPolicy,
  ) {}

  /** Creates the log file afresh (0600, never through a symlink). Throws when it cannot. */
  static create(path: string, policy: CheckLogPolicy = defaultCheckLogPolicy): CappedLog {
    mkdirSync(dirname(path), { recursive: true, mode: PRIVATE_DIRECTORY });
    // O_EXCL after removing what was there: an old log or a planted symlink is replaced, not written through.
    rmSync(path, { force: true });
    const fd = openSync(
      path,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      PRIVATE_FILE,
    );
    return new CappedLog(fd, policy);
  }

  /** How many bytes of output this log holds in memory now (for the streaming promise). */
  get heldBytes(): number {
    return (this.ring?.length ?? 0) + this.headEnd.length;
  }

  /** Takes the next chunk of output. */
  write(chunk: Buffer): void {
    if (this.closed) return;
    this.printed += chunk.length;
    let rest = chunk;
    const headRoom = this.policy.headBytes - this.headWritten;
    if (headRoom > 0) {
      const head = rest.subarray(0, headRoom);
      this.writeAt(head, this.headWritten);
      this.headWritten += head.length;
      this.headEnd = lastBytes([this.headEnd, head], Math.ceil(this.policy.headBytes / 2));
      rest = rest.subarray(head.length);
    }
    if (rest.length > 0 && this.policy.tailBytes > 0) this.keep(rest);
  }

  /** Copies `bytes` into the ring, over its oldest bytes once it is full. */
  private keep(bytes: Buffer): void {
    const size = this.policy.tailBytes;
    this.ring ??= Buffer.alloc(size);
    // Only the last `size` bytes of a long chunk can survive.
    let rest = bytes.length > size ? bytes.subarray(bytes.length - size) : bytes;
    while (rest.length > 0) {
      const copied = rest.copy(this.ring, this.ringAt, 0, Math.min(rest.length, size - this.ringAt));
      this.ringAt = (this.ringAt + copied) % size;
      this.ringFilled = Math.min(size, this.ringFilled + copied);
      rest = rest.subarray(copied);
    }
  }

  /** The ring's bytes, oldest first. */
  private kept(): Buffer {
    if (!this.ring) return Buffer.alloc(0);
    if (this.ringFilled < this.ring.length) return this.ring.subarray(0, this.ringFilled);
    return Buffer.concat([this.ring.subarray(this.ringAt), this.ring.subarray(0, this.ringAt)]);
  }

  /** Writes the notice and the tail, closes the file, and says what was printed and cut. */
  close(): CappedLogSummary {
    if (this.closed) throw new Error('the check log is closed already');
    this.closed = true;
    try {
      const after = this.kept();
      const printedAfterHead = this.printed - this.headWritten;
      if (printedAfterHead <= this.policy.tailBytes) {
        this.writeAt(after, this.headWritten);
        return { printedBytes: this.printed, cutBytes: 0 };
      }
      const headKept = this.headWritten - bytesAfterLastBreak(this.headEnd);
      const tail = afterFirstBreak(after.subarray(after.length - this.policy.tailBytes));
      const cutBytes = this.printed - headKept - tail.length;
      // The notice starts a line of its own: after the head's last line break, or after a new one.
      const headEndsLine = headKept < this.headWritten || this.headEnd.at(-1) === NEWLINE;
      const lead = headKept > 0 && !headEndsLine ? '\n' : '';
      const notice = Buffer.from(`${lead}${cutNotice(cutBytes, this.printed, this.policy)}\n`);
      this.truncateTo(headKept);
      this.writeAt(notice, headKept);
      this.writeAt(tail, headKept + notice.length);
      return { printedBytes: this.printed, cutBytes };
    } finally {
      this.ring = undefined;
      closeSync(this.fd);
    }
  }

  private writeAt(bytes: Buffer, position: number): void {
    if (this.broken) return;
    try {
      let done = 0;
      while (done < bytes.length)
        done += writeSync(this.fd, bytes, done, bytes.length - done, position + done);
    } catch {
      // A full disk or the like: the log stops here; the check's result does not depend on it.
      this.broken = true;
    }
  }

  private truncateTo(length: number): void {
    if (this.broken) return;
    try {
      ftruncateSync(this.fd, length);
    } catch {
      this.broken = true;
    }
  }
}

/** The last `count` bytes of the concatenation of `parts`. */
function lastBytes(parts: Buffer[], count: number): Buffer {
  const joined = Buffer.concat(parts);
  return joined.length <= count ? joined : Buffer.from(joined.subarray(joined.length - count));
}

/** How many bytes follow the last line break of `end` (0 when it ends with one or has none). */
function bytesAfterLastBreak(end: Buffer): number {
  const at = end.lastIndexOf(NEWLINE);
  return at === -1 ? 0 : end.length - at - 1;
}

/** `tail` from just after its first line break, when that break is in its first half. */
function afterFirstBreak(tail: Buffer): Buffer {
  const at = tail.indexOf(NEWLINE);
  return at === -1 || at >= tail.length / 2 ? tail : tail.subarray(at + 1);
}

function lstatOrUndefined(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}
