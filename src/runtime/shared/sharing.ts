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
}

/** How long a step's end waits for the write-behind to catch up. */
export const STEP_FLUSH_MS = 10_000;
/** How long the end of the process waits. */
export const CLOSE_FLUSH_MS = 15_000;
