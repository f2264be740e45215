/**
 * Last words on SIGTERM and SIGHUP: the step in flight is written to the manifest (error
 * `killed-by-signal`) before the process ends.
 *
 * A closed terminal (SIGHUP) or a `docker stop` / `kill` (SIGTERM) runs no `finally` block, so
 * without this the step that was running simply vanishes from the books. The run loop registers
 * a rescue callback while a step is in flight and unregisters it when the step ends.
 *
 * Invariants:
 * - Handlers are installed only while something is registered; a process with nothing in flight
 *   keeps Node's default behaviour.
 * - Rescue callbacks must be small and synchronous (a stamp and one locked file write); each runs
 *   once, and one that throws does not stop the others.
 * - After the rescue the signal takes its normal course: the process re-raises it to itself, so
 *   it ends "killed by SIGTERM" (exit status 143) as its parent expects. If some other part of
 *   the program also listens for the signal, ending the process is left to that listener.
 */

export type TerminationSignal = 'SIGTERM' | 'SIGHUP';

const HANDLED: readonly TerminationSignal[] = ['SIGTERM', 'SIGHUP'];

const rescues = new Set<(signal: TerminationSignal) => void>();

function handle(signal: TerminationSignal): void {
  const pending = [...rescues];
  rescues.clear();
  uninstall();
  for (const rescue of pending) {
    try {
      rescue(signal);
    } catch {
      // A failed rescue must not keep the others from writing, nor keep the process alive.
    }
  }
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
}

const handlers: Record<TerminationSignal, () => void> = {
  SIGTERM: () => handle('SIGTERM'),
  SIGHUP: () => handle('SIGHUP'),
};

function install(): void {
  for (const signal of HANDLED) process.on(signal, handlers[signal]);
}

function uninstall(): void {
  for (const signal of HANDLED) process.off(signal, handlers[signal]);
}

/** Whether something is in flight that a termination signal would rescue (a step not yet booked). */
export function rescuesPending(): boolean {
  return rescues.size > 0;
}

/**
 * Calls `rescue` if the process receives SIGTERM or SIGHUP before the returned function is
 * called. Use it around the part of a step that has not yet been written to the manifest.
 */
export function onTerminationSignal(rescue: (signal: TerminationSignal) => void): () => void {
  if (rescues.size === 0) install();
  rescues.add(rescue);
  return () => {
    if (!rescues.delete(rescue)) return;
    if (rescues.size === 0) uninstall();
  };
}
