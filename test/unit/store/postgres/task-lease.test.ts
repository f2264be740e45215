/**
 * The task lease and its fence on PostgreSQL (the real server where two sessions must run at once;
 * the rest also on PGlite): one holder per task key (workspace and run directory), a takeover only
 * after expiry or of a provably dead holder, with the next epoch; a renewal of a taken lease is
 * `lost` naming the new holder; writes and transcript batches of a stale epoch are kept aside,
 * never applied; a replay is applied only when no other copy of the task worked in between; a
 * refused start leaves no connection behind, and a held lease never keeps a process alive.
 */
import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { leasePolicy, type TaskLeaseOptions } from '../../../../src/store/postgres/task-lease.js';
import type { TaskRecordChange } from '../../../../src/store/postgres/task-records.js';
import { TaskBusyError } from '../../../../src/store/shared/task-lock-types.js';
import { realServerUrl, sharedStoresPerTest, usePostgres } from '../../../support/postgres.js';

const postgres = usePostgres();
const { open, schemaName } = sharedStoresPerTest(postgres, 'lease');

const task = { workspace: '/work', runDir: '/work/runs' };
const identity = (instance: string): TaskLeaseOptions => ({ identity: { instance } });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const put = (key: string, sessionId: string, at = 1): TaskRecordChange => ({
  op: 'put',
  kind: 'lineage-step',
  key,
  value: { sessionId },
  at,
});

async function lineageOf(
  store: Awaited<ReturnType<typeof open>>,
  of = task,
): Promise<Record<string, unknown>> {
  const { records } = await store.records.read(of, { kinds: ['lineage-step'] });
  return Object.fromEntries(
    records.map((record) => [record.key, (record.value as { sessionId: string }).sessionId]),
  );
}

describe('the task lease', () => {
  it('refuses a second holder naming the first; another run directory or workspace is another task', async () => {
    const [a, b] = [await open(), await open()];
    const held = await a.leases(identity('a')).acquire(task);
    const refused = await b
      .leases(identity('b'))
      .acquire(task)
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TaskBusyError);
    expect((refused as TaskBusyError).holder).toMatchObject({ pid: process.pid, host: hostname() });
    // Two workspaces that both keep ./runs share a database without blocking each other.
    const otherWorkspace = await b
      .leases(identity('b'))
      .acquire({ workspace: '/other', runDir: '/other/runs' });
    const otherRunDir = await b.leases(identity('b')).acquire({ workspace: '/work', runDir: '/work/runs-2' });
    expect([otherWorkspace.epoch, otherRunDir.epoch]).toEqual([1, 1]);
    await held.release();
    // Released: the next holder need not wait, and gets the next epoch.
    const next = await b.leases(identity('b')).acquire(task);
    expect([held.epoch, next.epoch]).toEqual([1, 2]);
  });

  it('an expired lease is taken with the next epoch; the old holder learns it at its renewal, naming the new one', async () => {
    const [a, b] = [await open(), await open()];
    const short = { ...identity('a'), policy: leasePolicy({ leaseMs: 600 }) };
    const old = await a.leases(short).acquire(task);
    await expect(b.leases(identity('b')).acquire(task)).rejects.toBeInstanceOf(TaskBusyError);
    await sleep(700);
    const taker = await b.leases(identity('b')).acquire(task);
    expect(taker.epoch).toBe(old.epoch + 1);
    expect(await old.renew()).toEqual({
      kind: 'lost',
      holder: expect.objectContaining({ pid: process.pid }),
    });
    expect(await taker.renew()).toEqual({ kind: 'renewed' });
  });

  it('a renewal after its own expiry that nobody took keeps the epoch', async () => {
    const a = await open();
    const held = await a.leases({ ...identity('a'), policy: leasePolicy({ leaseMs: 300 }) }).acquire(task);
    await sleep(400);
    expect(await held.renew()).toEqual({ kind: 'renewed' });
    await expect((await open()).leases(identity('b')).acquire(task)).rejects.toBeInstanceOf(TaskBusyError);
  });

  it('a holder this machine proves dead is taken over at once, one that is alive is not', async () => {
    const [a, b] = [await open(), await open()];
    await a.leases(identity('a')).acquire(task);
    await expect(
      b.leases({ ...identity('b'), isDeadHere: () => false }).acquire(task),
    ).rejects.toBeInstanceOf(TaskBusyError);
    const seen: unknown[] = [];
    const taker = await b
      .leases({
        ...identity('b'),
        isDeadHere: (holder) => {
          seen.push(holder);
          return true;
        },
      })
      .acquire(task);
    expect(taker.epoch).toBe(2);
    expect(seen).toEqual([expect.objectContaining({ pid: process.pid, host: hostname() })]);
  });

  it('records every grant with the run directory instance that took it', async () => {
    const a = await open();
    const leases = a.leases(identity('copy-a'));
    await (await leases.acquire(task)).release();
    await (await a.leases(identity('copy-b')).acquire(task)).release();
    const { rows } = await postgres.admin(
      `SELECT epoch::int, instance FROM "${schemaName()}".task_lease_epochs ORDER BY epoch`,
    );
    expect(rows).toEqual([
      { epoch: 1, instance: 'copy-a' },
      { epoch: 2, instance: 'copy-b' },
    ]);
  });
});

describe('the fence', () => {
  it('applies the current epoch, keeps a stale one aside and never merges it', async () => {
    const [a, b] = [await open(), await open()];
    const old = await a.leases(identity('a')).acquire(task);
    expect(await a.records.write(task, [put('work', 's-a')], old.fence)).toBe('applied');
    await old.release();
    const current = await b.leases(identity('b')).acquire(task);
    expect(await b.records.write(task, [put('work', 's-b', 2)], current.fence)).toBe('applied');
    // The old owner's late write (a newer `at`, which last-writer-wins alone would take).
    expect(await a.records.write(task, [put('work', 's-a-late', 99)], old.fence)).toBe('fenced');
    expect(await lineageOf(b)).toEqual({ work: 's-b' });
    const fenced = await b.records.readFenced(task);
    expect(fenced.changes).toEqual([
      expect.objectContaining({ epoch: old.epoch, change: put('work', 's-a-late', 99) }),
    ]);
    // An unfenced write (no lease: a library caller's own use) is applied as before.
    expect(await a.records.write(task, [put('plain', 's-p')])).toBe('applied');
  });

  it('a replay of older work is applied when no other copy worked since, kept aside when one did', async () => {
    const a = await open();
    const first = await a.leases(identity('copy-a')).acquire(task);
    await first.release();
    const second = await a.leases(identity('copy-a')).acquire(task);
    // Same copy, the epoch right after: its outbox is its own unsent work.
    expect(await a.records.write(task, [put('work', 's-1')], { ...second.fence, origin: first.epoch })).toBe(
      'applied',
    );
    await second.release();
    await (await a.leases(identity('copy-b')).acquire(task)).release();
    const fourth = await a.leases(identity('copy-a')).acquire(task);
    // Copy b worked in between: copy a's work from its second epoch is overtaken.
    expect(await a.records.write(task, [put('work', 's-2')], { ...fourth.fence, origin: second.epoch })).toBe(
      'fenced',
    );
    expect(await lineageOf(a)).toEqual({ work: 's-1' });
  });

  it('a stale transcript batch goes to fenced_entries, not into the transcript another owner continues', async () => {
    const [a, b] = [await open(), await open()];
    const old = await a.leases(identity('a')).acquire(task);
    const key = { projectKey: '-work', sessionId: 's-1' };
    const entry = (uuid: string) => ({ type: 'user', uuid, message: { role: 'user', content: uuid } });
    const name = { workspace: '/work', runDir: 'runs' };
    expect(await a.sessions.appendFenced(key, [entry('u-1')], name, old.fence)).toEqual({
      outcome: 'stored',
    });
    await old.release();
    const current = await b.leases(identity('b')).acquire(task);
    expect(await b.sessions.appendFenced(key, [entry('u-2')], name, current.fence)).toEqual({
      outcome: 'stored',
    });
    // u-1 is in the transcript already (a re-sent batch): only u-late is new, and kept aside.
    expect(await a.sessions.appendFenced(key, [entry('u-1'), entry('u-late')], name, old.fence)).toEqual({
      outcome: 'fenced',
      kept: 1,
    });
    expect((await b.sessions.load(key))?.map((each) => each.uuid)).toEqual(['u-1', 'u-2']);
    const fenced = await b.records.readFenced(task);
    expect(fenced.entries).toEqual([
      expect.objectContaining({ epoch: old.epoch, sessionId: 's-1', subpath: '', uuid: 'u-late' }),
    ]);
  });
});

describe.runIf(realServerUrl !== undefined)('the lease on the real server', () => {
  it('a takeover waits for a write of the old epoch that passed the fence, and none passes after it', async () => {
    const [a, b] = [await open(), await open()];
    const old = await a.leases({ ...identity('a'), policy: leasePolicy({ leaseMs: 300 }) }).acquire(task);
    const writer = new pg.Client({ connectionString: a.target.connectionString });
    await writer.connect();
    try {
      await writer.query('BEGIN');
      const { rows } = await writer.query(
        `SELECT "${schemaName()}".task_fence_ok($1, $2, $3, NULL, 'a') AS ok`,
        ['/work', 'runs', old.epoch],
      );
      expect(rows[0].ok).toBe(true);
      await sleep(400);
      // Expired, but the old epoch's write is still open: the takeover cannot happen under it.
      const taking = b.leases(identity('b')).acquire(task);
      const early = await Promise.race([
        taking.then(
          () => 'taken',
          () => 'refused',
        ),
        sleep(300).then(() => 'waiting'),
      ]);
      expect(early).toBe('waiting');
      await writer.query('COMMIT');
      expect((await taking).epoch).toBe(old.epoch + 1);
      expect(await a.records.write(task, [put('work', 's-a')], old.fence)).toBe('fenced');
    } finally {
      await writer.end();
    }
  });

  it('refused starts leave no connection behind', async () => {
    const [a, b] = [await open(), await open()];
    await a.leases(identity('a')).acquire(task);
    const leases = b.leases(identity('b'));
    for (let i = 0; i < 10; i += 1) await expect(leases.acquire(task)).rejects.toBeInstanceOf(TaskBusyError);
    // One pooled connection for those ten, given back when the pool closes.
    expect(leases.connections).toBeLessThanOrEqual(1);
    await leases.close();
    expect(leases.connections).toBe(0);
  });
});

describe('a held lease and the process', () => {
  it('never keeps a finished process alive', async () => {
    const store = await open();
    const module = fileURLToPath(new URL('../../../../dist/store/shared/shared-store.js', import.meta.url));
    const parse = fileURLToPath(new URL('../../../../dist/config/store-url.js', import.meta.url));
    const script = `
      const { openSharedStore } = await import(${JSON.stringify(module)});
      const { parseStoreTarget } = await import(${JSON.stringify(parse)});
      const store = await openSharedStore(parseStoreTarget(${JSON.stringify(
        `${store.target.connectionString}${store.target.connectionString.includes('?') ? '&' : '?'}schema=${schemaName()}`,
      )}));
      await store.leases({ identity: { instance: 'child' } }).acquire({ workspace: '/child', runDir: '/child/runs' });
      await store.close();
      console.log('held');`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr.on('data', (chunk) => {
      output += chunk;
    });
    const code = await Promise.race([
      new Promise<number | null>((resolve) => child.on('exit', resolve)),
      sleep(20_000).then(() => 'still running'),
    ]);
    if (code === 'still running') child.kill('SIGKILL');
    expect(output.trim()).toBe('held');
    expect(code).toBe(0);
  });
});
