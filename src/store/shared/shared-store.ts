/**
 * The shared record of a task in PostgreSQL, as one handle: the session store (transcripts), the
 * task records (everything else), the tombstones of sessions gc dropped and the task locks, over
 * one pool and one schema.
 *
 * This room (store/shared/) is "local-first, PostgreSQL as the shared record": a running flower
 * keeps working on its run directory exactly as without a database (SQLite sessions.db and the
 * JSON files, which synchronous callers and signal handlers need), and
 * - at start, the run directory is brought up to date from the database, and the database from
 *   what earlier processes left unsent (runtime/shared/pull.ts);
 * - while it runs, every appended transcript batch and every change of the task's files is sent
 *   behind the work, in order, with retry (write-behind.ts, mirrored-store.ts);
 * - an outage is said once, the work goes on locally, and what is still unsent at the end stays
 *   in the run directory for the next start to send.
 *
 * Invariants:
 * - `openSharedStore` resolves only with a usable database (connected, schema current), so a bad
 *   URL, password, database or server fails the start with one line, before anything is written.
 * - `close` ends the pool; it never throws.
 */
import type { PostgresTarget } from '../../config/store-url.js';
import { PostgresSessionStore, type PostgresSessionStoreOptions } from '../postgres/session-store.js';
import { type TaskLeaseOptions, TaskLeases } from '../postgres/task-lease.js';
import { PostgresTaskRecords } from '../postgres/task-records.js';
import { PostgresTombstones } from '../postgres/tombstones.js';

export interface SharedStore {
  readonly target: PostgresTarget;
  /** Where it is, for messages: the URL with its password masked. */
  readonly display: string;
  readonly sessions: PostgresSessionStore;
  readonly records: PostgresTaskRecords;
  /** The sessions gc dropped from this database (never sent back). */
  readonly tombstones: PostgresTombstones;
  /** The task leases over this database (a one-connection pool of their own; close them). */
  leases(options: TaskLeaseOptions): TaskLeases;
  close(): Promise<void>;
}

export async function openSharedStore(
  target: PostgresTarget,
  options: PostgresSessionStoreOptions = {},
): Promise<SharedStore> {
  const sessions = new PostgresSessionStore(target, options);
  try {
    await sessions.open();
  } catch (error) {
    await sessions.close().catch(() => {});
    throw error;
  }
  const ready = () => sessions.open();
  const records = new PostgresTaskRecords(sessions.pool, target, ready);
  return {
    target,
    display: target.display,
    sessions,
    records,
    tombstones: new PostgresTombstones(sessions.pool, target, ready),
    leases: (leaseOptions) => new TaskLeases(target, ready, leaseOptions),
    close: async () => {
      await sessions.close().catch(() => {});
    },
  };
}
