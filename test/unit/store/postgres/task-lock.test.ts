/**
 * The task lock as a PostgreSQL advisory lock (real server only: PGlite is one session, where
 * advisory locks of all clients are one holder's): a second holder of the same task is refused
 * with the first one's pid, host and start; another task is not; a holder whose connection the
 * server ends is told once and takes the lock again; a release lets the next one in.
 */
import { hostname } from 'node:os';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { taskLockText } from '../../../../src/store/postgres/task-lock.js';
import { TaskBusyError } from '../../../../src/store/shared/task-lock-types.js';
import { realServerUrl, sharedStoresPerTest, usePostgres } from '../../../support/postgres.js';

const postgres = usePostgres();
const { open, schemaName } = sharedStoresPerTest(postgres, 'lock');

const task = { workspace: '/work', runDir: '/work/runs' };

describe.runIf(realServerUrl !== undefined)('the PostgreSQL task lock', () => {
  it('refuses a second holder naming the first, lets another task in, and the next one after release', async () => {
    const [a, b] = [await open(), await open()];
    const held = await a.locks().acquire(task);
    const refused = await b
      .locks({ holderWaitMs: 200 })
      .acquire(task)
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TaskBusyError);
    expect((refused as TaskBusyError).holder).toEqual(held.holder);
    expect(held.holder).toMatchObject({ pid: process.pid, host: hostname() });
    const other = await b.locks().acquire({ workspace: '/work', runDir: '/work/runs-2' });
    await other.release();
    await held.release();
    const next = await b.locks().acquire(task);
    expect(await postgres.admin(`SELECT pid FROM "${schemaName()}".task_holders`)).toMatchObject({
      rows: [{ pid: process.pid }],
    });
    await next.release();
    expect((await postgres.admin(`SELECT pid FROM "${schemaName()}".task_holders`)).rows).toEqual([]);
  });

  it('a lock connection the server ends is said once and taken again', async () => {
    const [a, b] = [await open(), await open()];
    const dropped: unknown[] = [];
    let retaken = 0;
    const held = await a
      .locks({ onDropped: (error) => dropped.push(error), onRetaken: () => retaken++, retryDelayMs: 50 })
      .acquire(task);
    // Only this test's holder: the server is shared with other test runs.
    await postgres.admin(`SELECT pg_terminate_backend(backend_pid) FROM "${schemaName()}".task_holders`);
    const deadline = Date.now() + 10_000;
    while (retaken === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(dropped).toHaveLength(1);
    expect(retaken).toBe(1);
    await expect(b.locks({ holderWaitMs: 200 }).acquire(task)).rejects.toBeInstanceOf(TaskBusyError);
    await held.release();
    // The release gives up the lock taken again, not the dead connection's.
    const next = await b.locks().acquire(task);
    await next.release();
  });

  it('is re-entrant within a process: the lock goes with the last release', async () => {
    const [a, b] = [await open(), await open()];
    const locks = a.locks();
    const outer = await locks.acquire(task);
    const inner = await locks.acquire(task);
    await inner.release();
    await expect(b.locks({ holderWaitMs: 200 }).acquire(task)).rejects.toBeInstanceOf(TaskBusyError);
    await outer.release();
    const next = await b.locks().acquire(task);
    await next.release();
  });

  it('a release is no drop: nothing is said and the lock is not taken again', async () => {
    const [a, b] = [await open(), await open()];
    const dropped: unknown[] = [];
    const held = await a.locks({ onDropped: (error) => dropped.push(error), retryDelayMs: 20 }).acquire(task);
    await held.release();
    const next = await b.locks().acquire(task);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(dropped).toEqual([]);
    await next.release();
  });

  it('names no holder from the row of a holder whose connection is gone', async () => {
    const [a, b] = [await open(), await open()];
    const held = await a.locks({ retryDelayMs: 60_000 }).acquire(task);
    // The holder's connection dies: its row stays, the server frees its lock.
    await postgres.admin(`SELECT pg_terminate_backend(backend_pid) FROM "${schemaName()}".task_holders`);
    // Another session takes the lock before it wrote a row of its own.
    const other = new pg.Client({ connectionString: realServerUrl });
    await other.connect();
    try {
      await other.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [taskLockText(task)]);
      const refused = await b
        .locks({ holderWaitMs: 200 })
        .acquire(task)
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(TaskBusyError);
      expect((refused as TaskBusyError).holder).toMatchObject({ pid: 0, host: 'an unknown host' });
    } finally {
      await other.end();
      await held.release();
    }
  });
});
