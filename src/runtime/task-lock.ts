/**
 * One writer per task. A task is a workspace and its run directory; two flower processes working on
 * one at the same time resume each other's live sessions (seen: the second of two flowers started
 * 2 s apart in one directory continued the first one's session, and its own request never reached
 * the model). So every process that writes a task holds its lock for as long as it lives.
 *
 * Callers see only `TaskLocks` (acquire → a held lock, or `TaskBusyError` naming the holder), so a
 * backend that keeps the lock elsewhere (a PostgreSQL advisory lock for run directories shared
 * between machines) replaces the file lock without touching them. Everything about files is in
 * `FileTaskLocks` below.
 *
 * Who takes it: the commands that write a task (`go`, `run`, `once`), before they touch anything in
 * it: `go` reads the wake state, archives a brief for `--new` and bumps the wake counter before any
 * step runs, so a lock taken by the Runtime would come too late. The Runtime does not take it:
 * side questions run their own Runtime beside the main one, and a library caller may run several
 * Runtimes on one task in one process. Library callers who start several processes call
 * `lockTask` themselves. Readers (`flower status`, reports, asides) never take it and are never
 * blocked by it: it is a separate file, not a lock on the data.
 *
 * File lock invariants (`<run dir>/task.lock`, JSON `{ pid, host, startedAt, … }`):
 * - Taken atomically: the record is written to a private file and hard-linked into place, so the
 *   lock exists only with its whole content, and only one process can create it.
 * - A dead holder's lock is taken over: same host and its pid gone or a zombie, or the pid now
 *   belongs to a process started at another time, or the machine rebooted since (Linux boot id);
 *   the judgement is `holderIsGone` (process-liveness.ts, unit-tested on real /proc data). A lock
 *   from another host is never judged: its pid means nothing here, and the message says which host.
 * - Re-entrant within a process: a process never locks itself out (a `flower run` workflow that
 *   takes the lock again gets it).
 * - Released when the last holder in the process releases it, at process exit, and on SIGTERM or
 *   SIGHUP; only the file this process created is removed, and so are the directories taking the
 *   lock created if they are still empty (a command that stopped at once leaves nothing behind).
 */
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, rmdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { PRIVATE_FILE_MODE } from '../config/private-files.js';
import {
  type HeldTaskLock,
  handleOn,
  type LockHolder,
  TaskBusyError,
  type TaskLocks,
  type TaskRef,
} from '../store/shared/task-lock-types.js';
import { takeOverStaleLock } from './locked-json-file.js';
import { holderIsGone, ownIdentity } from './process-liveness.js';
import { onTerminationSignal } from './signals.js';

export const TASK_LOCK_FILE = 'task.lock';

export {
  type HeldTaskLock,
  type LockHolder,
  TaskBusyError,
  type TaskLocks,
  type TaskRef,
  taskBusyMessage,
} from '../store/shared/task-lock-types.js';

/** What the lock file holds: the holder, plus what tells a live holder from a dead one. */
interface LockRecord extends LockHolder {
  workspace: string;
  /** Linux boot id: a lock from before a reboot is dead whatever its pid (process-liveness.ts). */
  bootId?: string;
  /** Start time of the pid (clock ticks since boot, Linux): tells the holder from a reused pid. */
  processStart?: string;
  /** This acquisition's identity: release removes only its own file. */
  token: string;
}

function readText(path: string): string | undefined {
  let text: string | undefined;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    // gone or unreadable: no text
  }
  return text;
}

function parseRecord(text: string): LockRecord | undefined {
  let value: Partial<LockRecord> | null | undefined;
  try {
    value = JSON.parse(text) as Partial<LockRecord> | null;
  } catch {
    // not JSON: no record
  }
  if (typeof value?.pid !== 'number' || typeof value.host !== 'string') return undefined;
  return { startedAt: '', workspace: '', token: '', ...value } as LockRecord;
}

interface Hold {
  count: number;
  token: string;
  holder: LockHolder;
  stopSignalRelease: () => void;
  /** The top-most directory `mkdir` created for the lock, if any. */
  createdDir: string | undefined;
}

/** The file lock: `<run dir>/task.lock`. */
export class FileTaskLocks implements TaskLocks {
  private readonly held = new Map<string, Hold>();

  async acquire(task: TaskRef): Promise<HeldTaskLock> {
    const path = join(resolve(task.runDir), TASK_LOCK_FILE);
    const hold = this.held.get(path) ?? this.create(path, resolve(task.workspace));
    return handleOn(hold, (last) => this.remove(path, last));
  }

  private create(path: string, workspace: string): Hold {
    const createdDir = mkdirSync(dirname(path), { recursive: true });
    const record: LockRecord = {
      ...ownIdentity(),
      startedAt: new Date().toISOString(),
      workspace,
      token: randomBytes(8).toString('hex'),
    };
    const text = `${JSON.stringify(record)}\n`;
    // A dead holder's lock is moved aside in one round and its place taken in the next; a third
    // round covers a release that happened between the two.
    // Stryker disable next-line EqualityOperator: a fourth round ends as the third did unless another process races it, which no test can time
    for (let round = 0; round < 3; round += 1) {
      if (this.place(path, text)) {
        const hold: Hold = {
          count: 0,
          token: record.token,
          holder: { pid: record.pid, host: record.host, startedAt: record.startedAt },
          stopSignalRelease: () => {},
          createdDir,
        };
        const releaseNow = () => this.remove(path, hold);
        process.once('exit', releaseNow);
        const stopSignal = onTerminationSignal(releaseNow);
        hold.stopSignalRelease = () => {
          process.off('exit', releaseNow);
          stopSignal();
        };
        this.held.set(path, hold);
        return hold;
      }
      const found = readText(path);
      if (found === undefined) continue; // released meanwhile: try again
      const holder = parseRecord(found);
      // Always written whole (hard link), so an unreadable lock is damage, not a holder mid-write.
      if (holder !== undefined && !holderIsGone(holder)) throw new TaskBusyError(holder);
      takeOverStaleLock(path, found);
    }
    // A live holder that took the lock between the rounds; a dead one whose lock could not be moved
    // aside (a run directory this user cannot write) is no one to wait for.
    // Stryker disable next-line StringLiteral: any text that is no record reads as none
    const holder = parseRecord(readText(path) ?? '');
    if (holder !== undefined && !holderIsGone(holder)) throw new TaskBusyError(holder);
    removeEmptyDirectories(dirname(path), createdDir);
    throw new Error(`could not take the lock ${path}; if no flower works on this task, delete that file`);
  }

  /** Creates the lock file with its whole content at once; false when it exists already. */
  private place(path: string, text: string): boolean {
    const draft = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.new`;
    try {
      writeFileSync(draft, text, { mode: PRIVATE_FILE_MODE });
    } catch (error) {
      // A holder that just released removed the directory it had created: make it again.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(draft, text, { mode: PRIVATE_FILE_MODE });
    }
    try {
      linkSync(draft, path);
      return true;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return false;
      if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw error;
      // A file system without hard links: exclusive create, then the content (a reader in the
      // microseconds between the two would take the empty file for damage).
      try {
        writeFileSync(path, text, { flag: 'wx', mode: PRIVATE_FILE_MODE });
        return true;
      } catch (fallback) {
        if ((fallback as NodeJS.ErrnoException).code === 'EEXIST') return false;
        throw fallback;
      }
    } finally {
      try {
        unlinkSync(draft);
      } catch {
        // already gone
      }
    }
  }

  private remove(path: string, hold: Hold): void {
    if (this.held.get(path) !== hold) return;
    this.held.delete(path);
    hold.stopSignalRelease();
    // Stryker disable next-line StringLiteral: any text that is no record reads as none
    const record = parseRecord(readText(path) ?? '');
    if (record?.token !== hold.token) return; // taken over (wrongly): the new holder's file stays
    try {
      unlinkSync(path);
    } catch {
      // already gone
    }
    removeEmptyDirectories(dirname(path), hold.createdDir);
  }
}

/** Removes `dir` and its parents up to `top` while they are empty; `top` undefined: nothing. */
function removeEmptyDirectories(dir: string, top: string | undefined): void {
  // Stryker disable next-line ConditionalExpression: without it the loop does not start (no path starts with "undefined")
  if (top === undefined) return;
  for (let current = dir; current.startsWith(top); current = dirname(current)) {
    // Stryker disable next-line BooleanLiteral: a directory that is not empty has parents that are not empty either
    let removed = false;
    try {
      rmdirSync(current);
      removed = true;
    } catch {
      // not empty (the run wrote into it) or already gone
    }
    // Stryker disable next-line ConditionalExpression: a directory that is not empty has parents that are not empty either
    if (!removed) return;
    // Stryker disable next-line ConditionalExpression: the parent of `top` does not start with `top`, so the loop ends there anyway
    if (current === top) return;
  }
}

/** The default backend: lock files in run directories. */
export const fileTaskLocks: TaskLocks = new FileTaskLocks();

/** Takes `task`'s lock with `locks` (default: the file lock); throws `TaskBusyError` if it is held. */
export function lockTask(task: TaskRef, locks: TaskLocks = fileTaskLocks): Promise<HeldTaskLock> {
  return locks.acquire(task);
}
