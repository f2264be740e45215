/**
 * The lease a task kept in PostgreSQL is owned through (`npm run bench:lease`; store/postgres/
 * task-lease.ts), on a real server (FLOWER_BENCH_POSTGRES_URL, else FLOWER_TEST_POSTGRES_URL, else
 * postgres://postgres@127.0.0.1:5432/test):
 *  1. renewal cost: statements the lease sends per minute per task while a process holds it, counted
 *     on the lease's own pool over a run of the keeper (a 6 s lease, scaled to the 60 s default:
 *     the count is per renewal period), with the CPU time those renewals cost;
 *  2. the fence on every transcript batch: `appendFenced` (the check and the append in one
 *     statement) against the plain `append`, batch of 1 (the SDK's eager flush), interleaved
 *     rounds, CPU time (this process's, where pg's parsing and the wait are) beside wall time;
 *  3. takeover after a holder's crash (target: at most the lease + 5 s): a child process takes the
 *     lease and is SIGKILLed; a contender that retries every 250 ms measures until it holds it.
 *     Once on the same host (the contender proves the holder dead at once), once from another host
 *     name (a UTS namespace, needs root and unshare: the lease must run out).
 * Prints one JSON document with every figure and the load average beside them.
 */
import { spawn, spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { parseStoreTarget } from '../dist/config/store-url.js';
import { LeaseKeeper } from '../dist/runtime/ownership/lease-keeper.js';
import { leaseOptionsFor } from '../dist/runtime/ownership/run-instance.js';
import { leasePolicy } from '../dist/store/postgres/task-lease.js';
import { openSharedStore } from '../dist/store/shared/shared-store.js';

const BASE_URL =
  process.env.FLOWER_BENCH_POSTGRES_URL ||
  process.env.FLOWER_TEST_POSTGRES_URL ||
  'postgres://postgres@127.0.0.1:5432/test';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const APPENDS = Number(process.env.BENCH_APPENDS ?? 400);
const LEASE_S = Number(process.env.BENCH_LEASE_SECONDS ?? 6);
const self = fileURLToPath(import.meta.url);
const schemaName = `flower_bench_lease_${process.pid}`;
const url = `${BASE_URL}${BASE_URL.includes('?') ? '&' : '?'}schema=${schemaName}`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const cpuMs = (since) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
};

/** The child of the takeover case: takes the lease, says so, and waits to be killed. */
async function holder(task, holderUrl) {
  const store = await openSharedStore(parseStoreTarget(holderUrl));
  const leases = store.leases(leaseOptionsFor(task.runDir, leasePolicy({ leaseMs: LEASE_S * 1000 })));
  const lease = await leases.acquire(task);
  const keeper = new LeaseKeeper(lease, leases.policy);
  keeper.start();
  process.stdout.write('held\n');
  setInterval(() => {}, 1000);
}

async function renewalCost(store) {
  const policy = leasePolicy({ leaseMs: LEASE_S * 1000 });
  const task = { workspace: '/bench/renew', runDir: '/bench/renew/runs' };
  const leases = store.leases(leaseOptionsFor(task.runDir, policy));
  let statements = 0;
  // Count what the lease's pool sends (its pool is private: count on the prototype, for this run only).
  const query = pg.Pool.prototype.query;
  pg.Pool.prototype.query = function (...args) {
    if (this.options.application_name === 'flower lease') statements += 1;
    return query.apply(this, args);
  };
  const lease = await leases.acquire(task);
  const keeper = new LeaseKeeper(lease, leases.policy);
  const since = process.cpuUsage();
  const started = performance.now();
  keeper.start();
  const periods = 12;
  await sleep(policy.renewEveryMs * periods);
  keeper.stop();
  const cpu = cpuMs(since);
  const wallMs = performance.now() - started;
  pg.Pool.prototype.query = query;
  await lease.release();
  await leases.close();
  const perPeriod = statements / (wallMs / policy.renewEveryMs);
  const defaults = leasePolicy();
  return {
    lease_s: LEASE_S,
    statements_per_renewal_period: Number(perPeriod.toFixed(2)),
    statements_per_minute_at_default_lease: Number(((perPeriod * 60_000) / defaults.renewEveryMs).toFixed(1)),
    cpu_ms_per_renewal: Number((cpu / Math.max(1, statements)).toFixed(3)),
    state_after: keeper.state,
  };
}

async function fenceCost(store) {
  const task = { workspace: '/bench/fence', runDir: '/bench/fence/runs' };
  const leases = store.leases(leaseOptionsFor(task.runDir));
  const lease = await leases.acquire(task);
  const name = { workspace: '/bench/fence', runDir: 'runs' };
  const entry = (i, side) => ({
    type: 'assistant',
    uuid: `${side}-${process.pid}-${i}-${Math.random().toString(36).slice(2)}`,
    parentUuid: null,
    message: { role: 'assistant', content: [{ type: 'text', text: 'x'.repeat(400) }] },
  });
  const sides = {
    plain: (i) => store.sessions.append({ projectKey: '-bench', sessionId: 'plain' }, [entry(i, 'p')]),
    fenced: (i) =>
      store.sessions.appendFenced(
        { projectKey: '-bench', sessionId: 'fenced' },
        [entry(i, 'f')],
        name,
        lease.fence,
      ),
  };
  const results = { plain: { cpu: [], wall: [] }, fenced: { cpu: [], wall: [] } };
  for (let round = 0; round < ROUNDS; round += 1) {
    const order = round % 2 === 0 ? ['plain', 'fenced'] : ['fenced', 'plain'];
    for (const side of order) {
      const since = process.cpuUsage();
      const started = performance.now();
      for (let i = 0; i < APPENDS; i += 1) await sides[side](i);
      results[side].wall.push(performance.now() - started);
      results[side].cpu.push(cpuMs(since));
    }
  }
  await lease.release();
  await leases.close();
  const per = (values) => median(values) / APPENDS;
  return {
    appends_per_round: APPENDS,
    rounds: ROUNDS,
    plain_ms_per_append: { wall: per(results.plain.wall), cpu: per(results.plain.cpu) },
    fenced_ms_per_append: { wall: per(results.fenced.wall), cpu: per(results.fenced.cpu) },
    fenced_vs_plain: {
      wall: Number((median(results.fenced.wall) / median(results.plain.wall)).toFixed(3)),
      cpu: Number((median(results.fenced.cpu) / median(results.plain.cpu)).toFixed(3)),
    },
  };
}

async function takeover(store, viaOtherHost) {
  const task = { workspace: `/bench/takeover-${viaOtherHost ? 'far' : 'near'}`, runDir: 'runs' };
  const argv = [process.execPath, self, 'holder', JSON.stringify(task), url];
  const [file, args] = viaOtherHost
    ? ['unshare', ['--uts', 'sh', '-c', 'hostname bench-far-host && exec "$@"', 'sh', ...argv]]
    : [argv[0], argv.slice(1)];
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk) => String(chunk).includes('held') && resolve());
    child.on('exit', (code) => reject(new Error(`the holder exited (${code})`)));
  });
  child.removeAllListeners('exit');
  const leases = store.leases(
    leaseOptionsFor(`/tmp/bench-contender-${process.pid}`, leasePolicy({ leaseMs: LEASE_S * 1000 })),
  );
  const killedAt = performance.now();
  child.kill('SIGKILL');
  let tries = 0;
  for (;;) {
    tries += 1;
    try {
      const lease = await leases.acquire(task);
      const ms = performance.now() - killedAt;
      await lease.release();
      await leases.close();
      return { ms: Math.round(ms), tries };
    } catch (error) {
      if (error?.name !== 'TaskBusyError') throw error;
      await sleep(250);
    }
  }
}

async function main() {
  const store = await openSharedStore(parseStoreTarget(url));
  try {
    const renewal = await renewalCost(store);
    const fence = await fenceCost(store);
    const near = await takeover(store, false);
    const canUnshare = process.getuid?.() === 0 && spawnSync('unshare', ['--uts', 'true']).status === 0;
    const far = canUnshare ? await takeover(store, true) : null;
    const targetMs = LEASE_S * 1000 + 5000;
    process.stdout.write(
      `${JSON.stringify(
        {
          command: 'npm run bench:lease',
          load_average: loadavg().map((value) => Number(value.toFixed(2))),
          renewal,
          fence,
          takeover_after_crash: {
            lease_s: LEASE_S,
            same_host_ms: near.ms,
            other_host_ms: far?.ms ?? null,
            target_ms: targetMs,
            within_target: far === null ? null : far.ms <= targetMs,
          },
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    await store.close();
    const admin = new pg.Client({ connectionString: BASE_URL });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${schemaName}" CASCADE`);
    await admin.end();
  }
}

if (process.argv[2] === 'holder') await holder(JSON.parse(process.argv[3]), process.argv[4]);
else await main();
