/**
 * The log of one check: private, capped while the check runs, and written for people (masked and
 * inert) when it ends.
 *
 * Seen (issue 19, observation 5): a check that printed 100 MB left a 100 MB log every round, and the
 * log kept the workspace's umask (0644), so whatever a check printed — a key it read by mistake —
 * was readable by every user of the machine. Seen again (issue 20, observation 5): the log kept
 * whatever the check printed, secrets and escape sequences included, for anyone who opened it.
 *
 * Invariants:
 * - The log holds the first `headBytes` and the last `tailBytes` of what the check printed; when
 *   that is not all of it, a notice between the two says how many bytes were cut. Both ends are
 *   trimmed to whole lines where a line break is near (within half of each end), so the notice
 *   stands on a line of its own. (A byte count, of the output as printed: the file itself may be a
 *   little longer or shorter once masked and made inert.)
 * - Streaming: the output passes through in chunks; only the head (at most `headBytes`) and the
 *   last `tailBytes` (plus the chunk being read) are held in memory. The whole output never is.
 * - Shown, never raw: the file receives its text once, when the log closes, through the output
 *   sink's `shown` (secrets masked, controls and bidi characters visible and inert). Nothing the
 *   check printed reaches the disk before that — not even the head — because a secret can span two
 *   chunks and a private key block spans many lines, and only the whole kept text can be masked.
 *   Output that is not UTF-8 is read as UTF-8 (an invalid byte becomes U+FFFD): the log is text.
 * - The raw text (before `shown`) is handed back by `close` and goes nowhere on disk: the runner
 *   derives the judge's tail from it (runner.ts says how that tail is made safe).
 * - Private: the file is created afresh with mode 0600 whatever the umask (an old file or a symlink
 *   planted at its path is removed first, never followed), and `privateDirectory` makes its
 *   directory 0700, tightening one an older run left readable.
 * - Writing the log never fails the check: a write error (a full disk) stops the log, not the
 *   reading, so the check does not block on a full pipe and its exit code still counts.
 */
import {
  chmodSync,
  closeSync,
  constants,
  fchmodSync,
  lstatSync,
  mkdirSync,
  openSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { shown } from '../output/sink.js';

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
 * symlink or file in its place is removed first, so the logs cannot be sent elsewhere, and one an
 * older run left 0755 is tightened. The parents are the workbench's and keep the user's umask.
 */
export function privateDirectory(dir: string): void {
  mkdirSync(dirname(dir), { recursive: true });
  const existing = lstatOrUndefined(dir);
  if (existing && !existing.isDirectory()) rmSync(dir, { force: true });
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIRECTORY });
  // `mkdir` applies the umask and leaves an existing directory as it was: set the mode outright.
  chmodSync(dir, PRIVATE_DIRECTORY);
}

/** Writes `text` as a fresh private file at `path`, through `shown` (the reason a check did not run). */
export function writePrivateFile(path: string, text: string): void {
  const log = CappedLog.create(path, { headBytes: Number.MAX_SAFE_INTEGER, tailBytes: 0 });
  log.write(Buffer.from(text));
  log.close();
}

/** What was printed, what of it the log lost, and what it kept before it was shown. */
export interface CappedLogSummary {
  /** Everything the check printed, in bytes. */
  readonly printedBytes: number;
  /** Bytes left out of the middle of the log (0 when it holds everything). */
  readonly cutBytes: number;
  /**
   * The log's text as kept (head, notice, tail) before `shown`: secrets in clear, controls raw.
   * Never written anywhere; the runner makes the judge's tail of it (see runner.ts).
   */
  readonly raw: string;
}

export class CappedLog {
  private printed = 0;
  /** The head as it came, at most `headBytes` in all: copies, so a reused chunk buffer cannot change it. */
  private head: Buffer[] = [];
  private headHeld = 0;
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

  /** Creates the log file afresh (0600, never through a symlink), empty until `close`. Throws when it cannot. */
  static create(path: string, policy: CheckLogPolicy = defaultCheckLogPolicy): CappedLog {
    mkdirSync(dirname(path), { recursive: true, mode: PRIVATE_DIRECTORY });
    // O_EXCL after removing what was there: an old log or a planted symlink is replaced, not written through.
    rmSync(path, { force: true });
    const fd = openSync(
      path,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      PRIVATE_FILE,
    );
    try {
      // `open` applies the umask (a stricter one would make the file unreadable to its owner).
      fchmodSync(fd, PRIVATE_FILE);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
    return new CappedLog(fd, policy);
  }

  /** How many bytes of output this log holds in memory now (for the streaming promise). */
  get heldBytes(): number {
    return (this.ring?.length ?? 0) + this.headHeld;
  }

  /** Takes the next chunk of output. */
  write(chunk: Buffer): void {
    if (this.closed) return;
    this.printed += chunk.length;
    let rest = chunk;
    const headRoom = this.policy.headBytes - this.headHeld;
    if (headRoom > 0) {
      const head = rest.subarray(0, headRoom);
      if (head.length > 0) this.head.push(Buffer.from(head));
      this.headHeld += head.length;
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

  /**
   * Puts head, notice and tail together, writes them through `shown`, closes the file, and says
   * what was printed and cut.
   */
  close(): CappedLogSummary {
    if (this.closed) throw new Error('the check log is closed already');
    this.closed = true;
    try {
      const { kept, cutBytes } = this.assemble();
      const raw = kept.toString('utf8');
      // The whole text at once: a secret split between two chunks, or a private key block over
      // many lines (even one the cut runs through), is masked whole.
      this.writeAt(Buffer.from(shown(raw)), 0);
      return { printedBytes: this.printed, cutBytes, raw };
    } finally {
      this.head = [];
      this.ring = undefined;
      closeSync(this.fd);
    }
  }

  /** What the log keeps, as printed: everything, or the head, the notice and the tail. */
  private assemble(): { kept: Buffer; cutBytes: number } {
    const head = Buffer.concat(this.head);
    const after = this.kept();
    if (this.printed - head.length <= this.policy.tailBytes)
      return { kept: Buffer.concat([head, after]), cutBytes: 0 };
    // The head ends at its last line break when one is in its second half.
    const headEnd = head.subarray(Math.max(0, head.length - Math.ceil(this.policy.headBytes / 2)));
    const headKept = head.length - bytesAfterLastBreak(headEnd);
    const tail = afterFirstBreak(after.subarray(after.length - this.policy.tailBytes));
    const cutBytes = this.printed - headKept - tail.length;
    // The notice starts a line of its own: after the head's last line break, or after a new one.
    const headEndsLine = headKept < head.length || head.at(-1) === NEWLINE;
    const lead = headKept > 0 && !headEndsLine ? '\n' : '';
    const notice = Buffer.from(`${lead}${cutNotice(cutBytes, this.printed, this.policy)}\n`);
    return { kept: Buffer.concat([head.subarray(0, headKept), notice, tail]), cutBytes };
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
