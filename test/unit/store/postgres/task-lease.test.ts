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
import { type PostgresTarget, parseStoreTarget } from '../../../../src/config/store-url.js';
import {
  defaultLeasePolicy,
  leasePolicy,
  type TaskLeaseOptions,
  TaskLeases,
} from '../../../../src/store/postgres/task-lease.js';
import type { TaskRecordChange } from '../../../../src/store/postgres/task-records.js';
import { openSharedStore } from '../../../../src/store/shared/shared-store.js';
import { TaskBusyError } from '../../../../src/store/shared/task-lock-types.js';
import { closedPort } from '../../../support/closed-port.js';
import { FaultProxy } from '../../../support/fault-proxy.js';
import { onlyOnRealServer, sharedStoresPerTest, usePostgres } from '../../../support/postgres.js';

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

describe('the lease policy', () => {
  it('keeps the default proportions for a shorter or longer lease, with a floor of 1 s per statement', () => {
    expect(leasePolicy()).toEqual(defaultLeasePolicy);
    expect(leasePolicy({ leaseMs: 30_000 })).toEqual({
      leaseMs: 30_000,
      renewEveryMs: 5000,
      stopAfterMs: 20_000,
      regainWaitMs: 300_000,
      statementTimeoutMs: 4000,
    });
    expect(leasePolicy({ leaseMs: 600 }).statementTimeoutMs).toBe(1000);
    expect(leasePolicy({ leaseMs: 600, regainWaitMs: 5, statementTimeoutMs: 7 })).toMatchObject({
      regainWaitMs: 5,
      statementTimeoutMs: 7,
    });
  });

  it('refuses a policy that would stop the work only after the lease ran out, or renew too late', () => {
    expect(() => leasePolicy({ stopAfterMs: 60_000 })).toThrow(RangeError);
    expect(() => leasePolicy({ renewEveryMs: 40_000 })).toThrow(/renewEveryMs < stopAfterMs < leaseMs/);
    expect(() => leasePolicy({ renewEveryMs: 39_999, stopAfterMs: 40_000, leaseMs: 40_001 })).not.toThrow();
  });
});

describe('the lease row and its readers', () => {
  it('names its holder with the boot id and process start that prove it dead, and only while held', async () => {
    const [a, b] = [await open(), await open()];
    const leases = a.leases({ identity: { instance: 'a', bootId: 'boot-1', processStart: '4242' } });
    expect(await leases.holder(task)).toBeUndefined();
    const held = await leases.acquire(task);
    const holder = { pid: process.pid, host: hostname(), startedAt: held.holder.startedAt };
    const full = { ...holder, bootId: 'boot-1', processStart: '4242' };
    expect(await b.leases(identity('b')).holder(task)).toEqual(full);
    const refused = await b
      .leases(identity('b'))
      .acquire(task)
      .catch((error: unknown) => error);
    expect((refused as TaskBusyError).holder).toEqual(full);
    await held.release();
    expect(await leases.holder(task)).toBeUndefined();
    // A holder that said nothing of its boot is named without one (not as null).
    await b.leases(identity('b')).acquire(task);
    const next = await leases.holder(task);
    expect(next).toMatchObject({ pid: process.pid, host: hostname() });
    expect([next?.bootId, next?.processStart]).toEqual([undefined, undefined]);
  });

  it('a renewal of a lease it gave back is lost, naming nobody when nobody took it since', async () => {
    const a = await open();
    const held = await a.leases(identity('a')).acquire(task);
    await held.release();
    await held.release();
    expect(await held.renew()).toEqual({ kind: 'lost', holder: undefined });
  });

  it('uses one connection, kept from one renewal to the next, that never keeps the process alive', async () => {
    const a = await open();
    // Warm the store's own pool first: only the lease's connection is counted.
    await (await a.leases(identity('warm')).acquire({ workspace: '/warm', runDir: '/warm/runs' })).release();
    await new Promise((resolve) => setImmediate(resolve));
    const sockets = () => process.getActiveResourcesInfo().filter((kind) => kind === 'TCPSocketWrap').length;
    const before = sockets();
    const leases = a.leases({ ...identity('a'), policy: leasePolicy({ leaseMs: 600 }) });
    const held = await leases.acquire(task);
    await Promise.all([held.renew(), held.renew(), leases.holder(task)]);
    expect(leases.connections).toBe(1);
    // Renewals come every 100 ms here; the connection outlives the gap between two of them.
    await sleep(150);
    expect(leases.connections).toBe(1);
    // (With PGlite the server's end of the socket is in this process too, and keeps it alive.)
    if (postgres.kind === 'server') expect(sockets()).toBe(before);
    await held.renew();
    if (postgres.kind === 'server') {
      // A database administrator tells the lease's connection from the store's by its name.
      const { rows } = await postgres.admin(
        `SELECT application_name FROM pg_stat_activity WHERE query LIKE '%' || $1 || '%SET expires_at%'`,
        [`"${schemaName()}".task_leases`],
      );
      expect(rows).toEqual([{ application_name: 'flower lease' }]);
    }
    await leases.close();
  });

  it('a held lease keeps one connection from its start through its renewals', async () => {
    const a = await open();
    const proxy = await FaultProxy.start(a.target.connectionString);
    const url = new URL(a.target.connectionString);
    url.host = `127.0.0.1:${proxy.port}`;
    url.searchParams.set('schema', schemaName() ?? '');
    const leases = new TaskLeases(parseStoreTarget(url.toString()) as PostgresTarget, async () => {}, {
      ...identity('a'),
      policy: leasePolicy({ leaseMs: 600 }),
    });
    try {
      const held = await leases.acquire(task);
      await sleep(150);
      expect(await held.renew()).toEqual({ kind: 'renewed' });
      expect(proxy.accepted).toBe(1);
    } finally {
      await leases.close();
      await proxy.close();
    }
  });

  it('a start that cannot reach the database or its tables says it could not take the task lease', async () => {
    const a = await open();
    const failing = new TaskLeases(a.target, () => Promise.reject(new Error('no schema')), identity('a'));
    await expect(failing.acquire(task)).rejects.toThrow(/could not take the task lease/);
    const port = await closedPort();
    const unreachable = new TaskLeases(
      parseStoreTarget(`postgres://postgres@127.0.0.1:${port}/test`) as PostgresTarget,
      async () => {},
      identity('a'),
    );
    await expect(unreachable.acquire(task)).rejects.toThrow(/could not take the task lease/);
    await unreachable.close();
    const url = new URL(a.target.connectionString);
    url.searchParams.set('schema', `${schemaName()}_missing`);
    const noTables = new TaskLeases(
      parseStoreTarget(url.toString()) as PostgresTarget,
      async () => {},
      identity('a'),
    );
    await expect(noTables.acquire(task)).rejects.toThrow(/could not take the task lease/);
    await noTables.close();
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

/**
 * Runs `during` while another connection holds a write of `epoch` open past the fence (its share of
 * the task's lease lock), then rolls that write back.
 */
async function duringFencedWrite(connectionString: string, epoch: number, during: () => Promise<void>) {
  const writer = new pg.Client({ connectionString });
  await writer.connect();
  try {
    await writer.query('BEGIN');
    await writer.query(`SELECT "${schemaName()}".task_fence_ok($1, $2, $3, NULL, 'a')`, [
      '/work',
      'runs',
      epoch,
    ]);
    await during();
  } finally {
    await writer.query('ROLLBACK');
    await writer.end();
  }
}

describe('the lease on the real server', () => {
  onlyOnRealServer();
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

  it('a start that finds the lease locked by a write of the holder is refused in time, naming the holder', async () => {
    const [a, b] = [await open(), await open()];
    const held = await a.leases({ identity: { instance: 'a', bootId: 'boot-a' } }).acquire(task);
    await duringFencedWrite(a.target.connectionString, held.epoch, async () => {
      // Statements of one second at most: the start waits for the lock half of that, then says who holds it.
      const leases = b.leases({ ...identity('b'), policy: leasePolicy({ leaseMs: 600 }) });
      const refused = await leases.acquire(task).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(TaskBusyError);
      expect((refused as TaskBusyError).holder).toMatchObject({ pid: process.pid, bootId: 'boot-a' });
      expect(leases.connections).toBeLessThanOrEqual(1);
    });
  });

  it('a write held open in one schema does not hold up a start of the same task in another schema', async () => {
    const a = await open();
    const held = await a.leases(identity('a')).acquire(task);
    const other = await postgres.freshSchema('lease_other');
    const b = await openSharedStore(parseStoreTarget(other.url) as PostgresTarget);
    try {
      await duringFencedWrite(a.target.connectionString, held.epoch, async () => {
        const leases = b.leases({ ...identity('b'), policy: leasePolicy({ leaseMs: 600 }) });
        const started = await leases.acquire(task);
        expect(started.epoch).toBe(1);
      });
    } finally {
      await b.close();
      await other.drop();
    }
  });

  it('a start blocked by a write on a task nobody held yet fails as a store error, naming no holder', async () => {
    const b = await open();
    await duringFencedWrite(b.target.connectionString, 1, async () => {
      const leases = b.leases({ ...identity('b'), policy: leasePolicy({ leaseMs: 600 }) });
      const failed = await leases.acquire(task).catch((error: unknown) => error);
      expect(failed).not.toBeInstanceOf(TaskBusyError);
      expect(String(failed)).toMatch(/could not take the task lease: .*lock timeout/);
    });
  });

  it('a start that fails for another reason is a store error, never busy naming the last holder', async () => {
    const [a, b] = [await open(), await open()];
    await (await a.leases(identity('a')).acquire(task)).release();
    // A grant the next start would collide with (as a damaged table would make it).
    await postgres.admin(
      `INSERT INTO "${schemaName()}".task_lease_epochs (workspace, run_dir, epoch, instance, host, pid)
       VALUES ('/work', 'runs', 2, 'x', 'x', 1)`,
    );
    const failed = await b
      .leases(identity('b'))
      .acquire(task)
      .catch((error: unknown) => error);
    expect(failed).not.toBeInstanceOf(TaskBusyError);
    expect(String(failed)).toMatch(/could not take the task lease/);
    expect(await b.leases(identity('b')).holder(task)).toBeUndefined();
  });

  it('a refused start whose connection dies on the way still names the holder, and the next start works', async () => {
    const [a, b] = [await open(), await open()];
    await a.leases(identity('a')).acquire(task);
    const proxy = await FaultProxy.start(b.target.connectionString);
    const url = new URL(b.target.connectionString);
    url.host = `127.0.0.1:${proxy.port}`;
    url.searchParams.set('schema', schemaName() ?? '');
    const leases = new TaskLeases(
      parseStoreTarget(url.toString()) as PostgresTarget,
      async () => {},
      identity('b'),
    );
    try {
      const cut = proxy.when(/ROLLBACK/, 'cut');
      await expect(leases.acquire(task)).rejects.toBeInstanceOf(TaskBusyError);
      await cut;
      proxy.restore();
      await expect(leases.acquire(task)).rejects.toBeInstanceOf(TaskBusyError);
      expect(leases.connections).toBeLessThanOrEqual(1);
    } finally {
      await leases.close();
      await proxy.close();
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
