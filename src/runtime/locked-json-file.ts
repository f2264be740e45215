/**
 * JSON files that several processes update at once: `runs/manifest.json` and `runs/lineage.json`.
 *
 * Red lines:
 * - Readers never see a half-written file: every write goes through `writeFileAtomic`
 *   (temporary sibling, fsync, rename).
 * - Read-modify-write happens under an advisory lock (`<file>.lock`, created with O_EXCL), so two
 *   processes merging their changes cannot both start from the same old content and drop the
 *   other's change.
 * - A lock left behind by a dead process cannot block flower forever: it is taken over when the
 *   recorded pid no longer runs on this host (gone, or a zombie: `processIsAlive` in
 *   process-liveness.ts), or when the lock is older than `staleAfterMs`
 *   (the holder only ever keeps it for one small read and write). Takeover moves the stale lock
 *   aside under a unique name and checks that it moved the lock it judged stale, so two
 *   processes taking over at once cannot both win.
 * - Unreadable content is never a crash and never lost: the bad file is kept beside the original
 *   as `<file>.corrupt-<timestamp>`, the caller's warning callback is told where, and the file
 *   starts again from fresh content. A directory where the file should be counts as unreadable
 *   content too (it would otherwise make every later write fail).
 * - Files and locks are created owner-only (0600): they sit in the private run directory.
 *
 * Everything here is synchronous on purpose: a SIGTERM handler must be able to finish its write
 * before the process ends, and the lock is only held for one small read and write (milliseconds).
 */
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { writeFileAtomic } from '../config/atomic-file.js';
import { PRIVATE_FILE_MODE } from '../config/private-files.js';
import { processIsAlive } from './process-liveness.js';
import { compactTimestamp } from './run-id.js';

export interface LockPolicy {
  /** A lock older than this is abandoned: holders keep it for one small read and write only. */
  staleAfterMs: number;
  /** Give up waiting after this long; longer than `staleAfterMs` so a stuck lock gets taken over first. */
  waitTimeoutMs: number;
  /** Pause between attempts to take the lock; short, because holders release it within milliseconds. */
  retryDelayMs: number;
}

export const defaultLockPolicy: Readonly<LockPolicy> = Object.freeze({
  staleAfterMs: 15_000,
  waitTimeoutMs: 20_000,
  retryDelayMs: 5,
});

/** How a caller's document type is read from and checked against parsed JSON. */
export interface JsonDocumentCodec<Document> {
  /** The document's content when the file is absent (or had to be set aside). */
  empty(): Document;
  /** The document held by `value`, or undefined when `value` does not have the expected shape. */
  decode(value: unknown): Document | undefined;
}

export interface JsonFileOptions {
  /** Receives one line when a corrupt file is set aside. */
  onWarning?: (message: string) => void;
  lock?: Partial<LockPolicy>;
}

/** Thrown when the lock could not be taken within `waitTimeoutMs`. */
export class LockTimeoutError extends Error {
  constructor(readonly lockPath: string) {
    super(
      `Timed out waiting for the lock ${lockPath}. If no other flower process is running in this ` +
        'run directory, delete that file and try again.',
    );
    this.name = 'LockTimeoutError';
  }
}

const pauseCell = new Int32Array(new SharedArrayBuffer(4));

/** Blocks the thread for `ms` milliseconds without spinning the CPU. */
// Stryker disable next-line BlockStatement: the pause only spares the CPU between attempts; no outcome depends on it
function pause(ms: number): void {
  Atomics.wait(pauseCell, 0, 0, ms);
}

interface LockRecord {
  pid: number;
  host: string;
  createdAt: number;
  token: string;
}

function readLockRecord(lockPath: string): { text: string; record: Partial<LockRecord> } | undefined {
  let text: string | undefined;
  try {
    text = readFileSync(lockPath, 'utf8');
  } catch {
    // gone: no lock to judge
  }
  if (text === undefined) return undefined;
  try {
    return { text, record: JSON.parse(text) as Partial<LockRecord> };
  } catch {
    // A holder that died between creating and filling the lock leaves it empty or partial.
    return { text, record: {} };
  }
}

// Re-exported for the callers that judged pids through this module before it had its own home.
export { processIsAlive } from './process-liveness.js';

function lockIsStale(lockPath: string, record: Partial<LockRecord>, staleAfterMs: number): boolean {
  let createdAt = record.createdAt;
  if (typeof createdAt !== 'number') {
    try {
      createdAt = statSync(lockPath).mtimeMs;
    } catch {
      // gone already: the next attempt simply creates it
    }
    // Stryker disable next-line ConditionalExpression,BooleanLiteral: a lock gone meanwhile cannot be moved aside, so judging it stale only leads to the next attempt too
    if (typeof createdAt !== 'number') return false;
  }
  // Stryker disable next-line EqualityOperator: a lock exactly staleAfterMs old is a millisecond from stale either way
  if (Date.now() - createdAt > staleAfterMs) return true;
  // A pid only means something on the host that wrote it (run dirs can sit on shared storage).
  const sameHost = record.host === undefined || record.host === hostname();
  return sameHost && typeof record.pid === 'number' && !processIsAlive(record.pid);
}

/**
 * Removes the lock at `lockPath` if it is still the one whose content was `staleText`: moves it
 * aside atomically (only one process can move a given file), then verifies what it moved.
 */
export function takeOverStaleLock(lockPath: string, staleText: string): void {
  const aside = `${lockPath}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  // Stryker disable next-line BooleanLiteral: with nothing moved, nothing can be read, put back or removed below either (as the return below)
  let moved = false;
  try {
    renameSync(lockPath, aside);
    moved = true;
  } catch {
    // someone else moved or released it first
  }
  // Stryker disable next-line ConditionalExpression: with nothing moved, nothing can be read, put back or removed below either
  if (!moved) return;
  let movedText: string | undefined;
  try {
    movedText = readFileSync(aside, 'utf8');
  } catch {
    // gone meanwhile
  }
  if (movedText !== staleText) {
    // We moved a fresh lock that replaced the stale one in the meantime: put it back. If another
    // process created a lock in this instant, linking fails and that process keeps the lock.
    try {
      linkSync(aside, lockPath);
    } catch {
      // nothing more to do
    }
  }
  try {
    unlinkSync(aside);
  } catch {
    // already gone
  }
}

function acquireLock(lockPath: string, policy: LockPolicy): () => void {
  const token = randomBytes(8).toString('hex');
  const deadline = Date.now() + policy.waitTimeoutMs;
  for (;;) {
    let fd: number | undefined;
    try {
      fd = openSync(lockPath, 'wx', PRIVATE_FILE_MODE);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (fd !== undefined) {
      const record: LockRecord = { pid: process.pid, host: hostname(), createdAt: Date.now(), token };
      try {
        writeSync(fd, JSON.stringify(record));
      } catch (error) {
        // A full disk: an empty lock left behind would make the next process wait `staleAfterMs`.
        closeSync(fd);
        fd = undefined;
        try {
          unlinkSync(lockPath);
        } catch {
          // already gone
        }
        throw error;
      } finally {
        if (fd !== undefined) closeSync(fd);
      }
      return () => releaseLock(lockPath, token);
    }
    const current = readLockRecord(lockPath);
    if (current && lockIsStale(lockPath, current.record, policy.staleAfterMs)) {
      takeOverStaleLock(lockPath, current.text);
      continue;
    }
    // Stryker disable next-line EqualityOperator: the deadline's own millisecond decides nothing
    if (Date.now() >= deadline) throw new LockTimeoutError(lockPath);
    pause(policy.retryDelayMs);
  }
}

function releaseLock(lockPath: string, token: string): void {
  // Only remove our own lock: if it was (wrongly) taken over, the new holder's lock must survive.
  if (readLockRecord(lockPath)?.record.token !== token) return;
  try {
    unlinkSync(lockPath);
  } catch {
    // already gone
  }
}

/** Runs `action` while holding the advisory lock of `path` (`<path>.lock`). */
export function withFileLock<Value>(
  path: string,
  action: () => Value,
  lock: Partial<LockPolicy> = {},
): Value {
  mkdirSync(dirname(path), { recursive: true });
  const release = acquireLock(`${path}.lock`, { ...defaultLockPolicy, ...lock });
  try {
    return action();
  } finally {
    release();
  }
}

/** Moves an unreadable file aside (never over an existing file) and returns where it went. */
function setAside(path: string): string {
  const base = `${path}.corrupt-${compactTimestamp()}`;
  let target = base;
  // Stryker disable next-line AssignmentOperator: any unused name keeps the copy; the numbering is no promise
  for (let copy = 2; existsSync(target); copy += 1) target = `${base}-${copy}`;
  renameSync(path, target);
  return target;
}

/** These files live in the private run directory and carry step texts: owner-only, like it. */
function writePrivate(path: string, document: unknown): void {
  writeFileAtomic(path, formatJson(document), { mode: PRIVATE_FILE_MODE });
}

/** Serialises a document the way flower writes all its JSON: 2-space indent, trailing newline. */
export function formatJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/**
 * Loads the document at `path`; the caller must hold the lock. A file that is not valid JSON, or
 * whose content the codec rejects, is set aside and replaced by the empty document.
 */
function loadLocked<Document>(
  path: string,
  codec: JsonDocumentCodec<Document>,
  onWarning: ((message: string) => void) | undefined,
): Document {
  let text: string | undefined;
  try {
    // Stryker disable next-line StringLiteral: without an encoding the Buffer is parsed as the same text
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return codec.empty();
    if (code !== 'EISDIR') throw error;
  }
  let decoded: Document | undefined;
  try {
    // Stryker disable next-line ConditionalExpression: JSON.parse(undefined) throws, which leaves decoded undefined as well
    decoded = text === undefined ? undefined : codec.decode(JSON.parse(text));
  } catch {
    // not JSON: set aside below
  }
  if (decoded !== undefined) return decoded;
  const keptAt = setAside(path);
  const fresh = codec.empty();
  writePrivate(path, fresh);
  const what =
    text === undefined
      ? 'is a directory, not a file'
      : 'could not be read (not valid JSON, or not the expected structure)';
  onWarning?.(`${path} ${what}. It was kept as ${keptAt} for inspection, and a fresh file was started.`);
  return fresh;
}

/** Reads the document at `path` under its lock (a corrupt file is set aside, see above). */
export function readJsonDocument<Document>(
  path: string,
  codec: JsonDocumentCodec<Document>,
  options: JsonFileOptions = {},
): Document {
  // Nothing to read: skip the lock, which would create the directory as a side effect.
  if (!existsSync(path)) return codec.empty();
  return withFileLock(path, () => loadLocked(path, codec, options.onWarning), options.lock);
}

/** What a lock-free read found: the document, or why there is none to show. */
export type PeekedDocument<Document> =
  | { state: 'ok'; document: Document }
  | { state: 'missing'; document: Document }
  | { state: 'corrupt'; document: Document; reason: string };

/**
 * Reads the document at `path` without the lock and without repairing anything: for readers that
 * must never change a run directory (status, report, the budget). Writers replace the file by
 * rename, so a lock-free read sees either the old or the new content, never half of it. A corrupt
 * file is reported, not set aside: that is the next writer's job, and it says so when it does.
 */
export function peekJsonDocument<Document>(
  path: string,
  codec: JsonDocumentCodec<Document>,
): PeekedDocument<Document> {
  let text: string;
  try {
    // Stryker disable next-line StringLiteral: without an encoding the Buffer is parsed as the same text
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      return { state: 'missing', document: codec.empty() };
    return { state: 'corrupt', document: codec.empty(), reason: (error as Error).message };
  }
  try {
    const decoded = codec.decode(JSON.parse(text));
    if (decoded !== undefined) return { state: 'ok', document: decoded };
    return { state: 'corrupt', document: codec.empty(), reason: 'not the expected structure' };
  } catch {
    return { state: 'corrupt', document: codec.empty(), reason: 'not valid JSON' };
  }
}

/**
 * Read-modify-write under the lock: loads the current document, applies `change`, and writes the
 * result atomically. Returns the document as written.
 */
export function updateJsonDocument<Document>(
  path: string,
  codec: JsonDocumentCodec<Document>,
  change: (current: Document) => Document,
  options: JsonFileOptions = {},
): Document {
  return withFileLock(
    path,
    () => {
      const next = change(loadLocked(path, codec, options.onWarning));
      writePrivate(path, next);
      return next;
    },
    options.lock,
  );
}
