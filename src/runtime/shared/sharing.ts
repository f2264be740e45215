/**
 * What the Runtime needs from a task shared through PostgreSQL (shared-task.ts), kept apart so
 * that runtime.ts loads no database driver for a task that has none.
 */
import type { SessionBackend } from '../../store/backend.js';

export interface RuntimeSharing {
  /** The backend the SDK's mirror writes through: the local store first, the database behind. */
  mirror(local: SessionBackend): SessionBackend;
  /** Waits (at most `timeoutMs`, not at all during an outage) for what was queued so far; true when it was all sent. */
  flush(timeoutMs: number): Promise<boolean>;
  /** Whether this process still owns the task (the lease); absent: always (a single machine). */
  readonly ownership?: TaskOwnership;
}

/**
 * The task's ownership as the runtime sees it (runtime/ownership/): while it is not `held` the
 * agent must not work; `regain` waits (bounded) and says whether the work may go on.
 */
export interface TaskOwnership {
  readonly state: 'held' | 'endangered' | 'lost';
  /** How long a stopped turn may take before its binary is ended: within the lease's margin. */
  readonly stopGraceMs: number;
  /** Called whenever the state changes; returns the unsubscribe. */
  onChange(listener: (state: 'held' | 'endangered' | 'lost') => void): () => void;
  /** Resolves undefined when the work may go on in the same sessions, else the one line to stop with. */
  regain(): Promise<string | undefined>;
}

/** How long a step's end waits for the write-behind to catch up. */
export const STEP_FLUSH_MS = 10_000;
/** How long the end of the process waits. */
export const CLOSE_FLUSH_MS = 15_000;
