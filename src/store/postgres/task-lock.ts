/**
 * One writer per task across machines: the task lock as a PostgreSQL session advisory lock, for
 * task state kept in PostgreSQL (the file lock in runtime/task-lock.ts only sees one disk).
 *
 * Invariants:
 * - The lock is `pg_try_advisory_lock` on a key derived from the task's name (workspace path and
 *   run directory, task-records.ts `taskNameOf`), held on a connection of its own (never a pooled
 *   one: a pooled connection goes back to the pool and another query would run inside the lock's
 *   session) for as long as the process holds the task. The server drops it when that connection
 *   dies, so a crashed or unplugged machine never leaves a stale lock.
 * - The holder writes its pid, host and start time into `task_holders` right after taking the
 *   lock; a refused process reads that row and throws `TaskBusyError` with the same line the file
 *   lock prints (the host included when it is another machine's).
 * - Re-entrant within a process, like the file lock.
 * - A lock connection that drops mid-run is said once (`onWarning`) and taken again as soon as the
 *   server answers; if another process took the task meanwhile, that is said too (the running
 *   step is not stopped: its writes are idempotent, and the records merge).
 * - The socket does not keep the process alive: the command's end releases the lock, and an exit
 *   without release closes the socket, which releases it on the server.
 */
import { hostname } from 'node:os';
import pg from 'pg';
import type { PostgresTarget } from '../../config/store-url.js';
import {
  type HeldTaskLock,
  handleOn,
  type LockHolder,
  TaskBusyError,
  type TaskLocks,
  type TaskRef,
} from '../shared/task-lock-types.js';
import { storeFailure } from './errors.js';
import { taskNameOf } from './task-records.js';

export interface PostgresTaskLockOptions {
  /** The lock connection dropped (the caller says it, once, with its other outage news). */
  onDropped?: (error: unknown) => void;
  /** The lock was taken again after a drop. */
  onRetaken?: () => void;
  /** Another process took the task while the lock connection was down. */
  onWarning?: (line: string) => void;
  /** First pause before taking a dropped lock again; doubles up to `maxRetryDelayMs`. */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
  connectTimeoutMs?: number;
  /** How long a refused process waits for the holder's row (the holder writes it right after locking). */
  holderWaitMs?: number;
}

/** The text the lock key is hashed from: distinct from the schema lock's. */
export function taskLockText(task: TaskRef): string {
  const name = taskNameOf(task);
  return `flower task\n${name.workspace}\n${name.runDir}`;
}

const lastError = new WeakMap<pg.Client, unknown>();

interface Hold {
  count: number;
  key: string;
  client: pg.Client;
  holder: LockHolder;
  released: boolean;
  /** Pending re-acquisition after a dropped connection. */
  retry: NodeJS.Timeout | undefined;
}

export class PostgresTaskLocks implements TaskLocks {
  private readonly held = new Map<string, Hold>();
  private readonly holders: string;

  constructor(
    private readonly target: PostgresTarget,
    /** Creates the schema (task_holders) if needed. */
    private readonly ready: () => Promise<void>,
    private readonly options: PostgresTaskLockOptions = {},
  ) {
    this.holders = `"${target.schema}".task_holders`;
  }

  async acquire(task: TaskRef): Promise<HeldTaskLock> {
    const text = taskLockText(task);
    const hold = this.held.get(text) ?? (await this.create(task, text));
    return handleOn(hold, (last) => this.remove(text, last));
  }

  private async create(task: TaskRef, text: string): Promise<Hold> {
    try {
      await this.ready();
    } catch (error) {
      throw storeFailure('take the task lock', error, this.target);
    }
    const holder: LockHolder = { pid: process.pid, host: hostname(), startedAt: new Date().toISOString() };
    const { client, key } = await this.lockOn(task, text, holder);
    const hold: Hold = { count: 0, key, client, holder, released: false, retry: undefined };
    this.watch(task, text, hold);
    this.held.set(text, hold);
    return hold;
  }

  /** Connects, takes the lock (or throws `TaskBusyError`) and records the holder. */
  private async lockOn(
    task: TaskRef,
    text: string,
    holder: LockHolder,
  ): Promise<{ client: pg.Client; key: string }> {
    const client = new pg.Client({
      connectionString: this.target.connectionString,
      application_name: 'flower task lock',
      connectionTimeoutMillis: this.options.connectTimeoutMs ?? 10_000,
      keepAlive: true,
    });
    client.on('error', (error) => {
      // Also seen through 'end' (watch); an error event without a listener would crash the process.
      lastError.set(client, error);
    });
    try {
      await client.connect();
      const { rows } = await client.query<{ key: string; locked: boolean }>(
        'SELECT hashtextextended($1, 0)::text AS key, pg_try_advisory_lock(hashtextextended($1, 0)) AS locked',
        [text],
      );
      const { key, locked } = rows[0] as { key: string; locked: boolean };
      if (!locked) throw new TaskBusyError(await this.holderOf(client, key));
      const name = taskNameOf(task);
      await client.query(
        `INSERT INTO ${this.holders} (lock_key, workspace, run_dir, pid, host, started_at, backend_pid)
         VALUES ($1, $2, $3, $4, $5, $6, pg_backend_pid())
         ON CONFLICT (lock_key) DO UPDATE SET workspace = excluded.workspace, run_dir = excluded.run_dir,
           pid = excluded.pid, host = excluded.host, started_at = excluded.started_at, backend_pid = excluded.backend_pid`,
        [key, name.workspace, name.runDir, holder.pid, holder.host, holder.startedAt],
      );
      // Only now: an unreferenced socket with a query pending would let the process exit under it.
      refSocket(client, false);
      return { client, key };
    } catch (error) {
      await client.end().catch(() => {});
      if (error instanceof TaskBusyError) throw error;
      throw storeFailure('take the task lock', error, this.target);
    }
  }

  /** The holder's row; it may lag the lock by a moment, so wait for it briefly. */
  private async holderOf(client: pg.Client, key: string): Promise<LockHolder> {
    const deadline = Date.now() + (this.options.holderWaitMs ?? 2000);
    for (;;) {
      // Only a row whose backend still holds the lock names the holder (a dead holder's row stays).
      const { rows } = await client.query<{ pid: number; host: string; started_at: Date }>(
        `SELECT h.pid, h.host, h.started_at FROM ${this.holders} h
          WHERE h.lock_key = $1 AND EXISTS (
            SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.pid = h.backend_pid)`,
        [key],
      );
      const row = rows[0];
      if (row !== undefined) return { pid: row.pid, host: row.host, startedAt: row.started_at.toISOString() };
      if (Date.now() > deadline) return { pid: 0, host: 'an unknown host', startedAt: '' };
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** A dropped connection lost the lock on the server: say so once, and take it again. */
  private watch(task: TaskRef, text: string, hold: Hold): void {
    hold.client.once('end', () => {
      if (hold.released) return;
      this.options.onDropped?.(
        lastError.get(hold.client) ?? new Error('the connection holding the task lock was terminated'),
      );
      let delay = this.options.retryDelayMs ?? 1000;
      const attempt = () => {
        hold.retry = undefined;
        if (hold.released) return;
        this.lockOn(task, text, hold.holder).then(
          ({ client }) => {
            if (hold.released) {
              void client.end().catch(() => {});
              return;
            }
            hold.client = client;
            this.options.onRetaken?.();
            this.watch(task, text, hold);
          },
          (error: unknown) => {
            if (error instanceof TaskBusyError) {
              this.options.onWarning?.(
                `While the lock connection was down, ${error.message.replace(/; wait for it.*$/, '')}: two flowers now work on this task; stop one of them.`,
              );
              return;
            }
            delay = Math.min(delay * 2, this.options.maxRetryDelayMs ?? 30_000);
            hold.retry = setTimeout(attempt, delay);
            hold.retry.unref();
          },
        );
      };
      hold.retry = setTimeout(attempt, delay);
      hold.retry.unref();
    });
  }

  private async remove(text: string, hold: Hold): Promise<void> {
    if (this.held.get(text) !== hold) return;
    this.held.delete(text);
    hold.released = true;
    if (hold.retry !== undefined) clearTimeout(hold.retry);
    refSocket(hold.client, true);
    try {
      await hold.client.query(
        `DELETE FROM ${this.holders} WHERE lock_key = $1 AND backend_pid = pg_backend_pid()`,
        [hold.key],
      );
      await hold.client.query('SELECT pg_advisory_unlock($1::bigint)', [hold.key]);
    } catch {
      // The connection is gone: so is the lock on the server.
    }
    await hold.client.end().catch(() => {});
  }
}

/** The lock's idle socket must not keep a finished command alive; its queries must. */
function refSocket(client: pg.Client, referenced: boolean): void {
  const stream = (client as unknown as { connection?: { stream?: { ref?: () => void; unref?: () => void } } })
    .connection?.stream;
  if (referenced) stream?.ref?.();
  else stream?.unref?.();
}
