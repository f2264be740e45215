/**
 * The task lock's contract, shared by its backends: the file lock (runtime/task-lock.ts) and the
 * PostgreSQL lease (store/postgres/task-lease.ts). Here because the store layer may not
 * import the runtime, and both must throw the same `TaskBusyError` with the same line.
 */

export interface TaskRef {
  readonly workspace: string;
  readonly runDir: string;
}

/** Who holds a task. */
export interface LockHolder {
  readonly pid: number;
  readonly host: string;
  /** ISO time the holder took the lock. */
  readonly startedAt: string;
}

export interface HeldTaskLock {
  readonly holder: LockHolder;
  /** Gives the lock up (idempotent). */
  release(): Promise<void>;
}

export interface TaskLocks {
  /** Takes the task's lock, or throws `TaskBusyError` when another live process holds it. */
  acquire(task: TaskRef): Promise<HeldTaskLock>;
}

/** One process's hold on a task: every `acquire` of the task in this process shares it. */
export interface CountedHold {
  count: number;
  readonly holder: LockHolder;
}

/**
 * A handle on `hold` for one `acquire`: releasing it twice counts once, and the last handle
 * released gives the lock up (`giveUp`), so a library user's nested acquire never drops the
 * lock under the outer one.
 */
export function handleOn<Hold extends CountedHold>(
  hold: Hold,
  giveUp: (hold: Hold) => Promise<void> | void,
): HeldTaskLock {
  hold.count += 1;
  let released = false;
  return {
    holder: hold.holder,
    release: async () => {
      if (released) return;
      released = true;
      hold.count -= 1;
      if (hold.count === 0) await giveUp(hold);
    },
  };
}

/** `09:12` today, else `2025-05-03 09:12` (local time). */
function sinceText(startedAt: string, now: Date): string {
  const at = new Date(startedAt);
  if (Number.isNaN(at.getTime())) return 'an unknown time';
  const pad = (value: number) => String(value).padStart(2, '0');
  const clock = `${pad(at.getHours())}:${pad(at.getMinutes())}`;
  return at.toDateString() === now.toDateString()
    ? clock
    : `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())} ${clock}`;
}

/**
 * The one line a second flower prints. The host is always named, this one's too: a pid says
 * nothing without it once run directories are shared between machines, and a person reading the
 * line should not have to know whether the name was left out because it is local.
 */
export function taskBusyMessage(holder: LockHolder, now: Date = new Date()): string {
  return (
    `another flower (pid ${holder.pid}, on host ${holder.host}, since ${sinceText(holder.startedAt, now)}) ` +
    'is working on this task; wait for it, or use -w for another directory'
  );
}

export class TaskBusyError extends Error {
  override name = 'TaskBusyError';
  constructor(readonly holder: LockHolder) {
    super(taskBusyMessage(holder));
  }
}
