/**
 * `<run dir>/shared-outbox.jsonl`: the task-record changes this process made that PostgreSQL has
 * not confirmed yet, one JSON line per change set (`{ epoch, changes }`: the lease epoch it was
 * made under, so a replay is fenced as that epoch's work). Written before a change is sent, emptied when
 * everything sent was confirmed, and replayed by the next start (the pull) before it reads the
 * database: so a change is never lost because the database was away or the process was killed,
 * and a change that was pulled (never written here) is never sent back.
 *
 * Invariants:
 * - Appends are synchronous (`appendFileSync`, O_APPEND): signal handlers write markers and rows.
 * - Replaying is safe: every change is idempotent or guarded by its time (task-records.ts), and
 *   the database applies it only if no other copy of the task worked since its epoch.
 * - A line from before leases (a bare array) reads as made under no known epoch.
 * - A torn last line (a crash mid-write) is skipped; the rest still replays.
 * - Never throws: an outbox that cannot be written costs only the retry after a restart.
 */
import { appendFileSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { PRIVATE_FILE_MODE } from '../../config/private-files.js';
import type { TaskRecordChange } from '../../store/postgres/task-records.js';

export const OUTBOX_FILE = 'shared-outbox.jsonl';

export function outboxPath(runDir: string): string {
  return join(runDir, OUTBOX_FILE);
}

/** One change set as the outbox keeps it. */
export interface OutboxEntry {
  /** The lease epoch the changes were made under; undefined for lines written before leases. */
  epoch: number | undefined;
  changes: TaskRecordChange[];
}

export function appendOutbox(runDir: string, changes: readonly TaskRecordChange[], epoch?: number): void {
  if (changes.length === 0) return;
  try {
    appendFileSync(outboxPath(runDir), `${JSON.stringify({ epoch, changes })}\n`, {
      mode: PRIVATE_FILE_MODE,
    });
  } catch {
    // Sent from memory anyway; only a restart before it is sent would lose it.
  }
}

/** Every change set the outbox holds, in order. */
export function readOutbox(runDir: string): OutboxEntry[] {
  let text: string;
  try {
    text = readFileSync(outboxPath(runDir), 'utf8');
  } catch {
    return [];
  }
  // A blank line (the file ends with one) fails to parse and is skipped like a torn one.
  return text.split('\n').flatMap((line) => {
    try {
      const parsed = JSON.parse(line) as unknown;
      if (Array.isArray(parsed)) return [{ epoch: undefined, changes: parsed as TaskRecordChange[] }];
      const entry = parsed as Partial<OutboxEntry> | null;
      // Stryker disable next-line OptionalChaining: `null.changes` throws, and the catch below skips the line just the same
      if (!Array.isArray(entry?.changes)) return [];
      return [{ epoch: typeof entry.epoch === 'number' ? entry.epoch : undefined, changes: entry.changes }];
    } catch {
      return [];
    }
  });
}

export function clearOutbox(runDir: string): void {
  try {
    rmSync(outboxPath(runDir));
  } catch {
    // Gone already; or it could not be removed and is replayed once more next time: harmless.
  }
}
