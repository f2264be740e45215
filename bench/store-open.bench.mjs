/**
 * What opening the task's stores costs at start (`npm run bench:store-open`), CPU time (the
 * verdict) beside wall time, through `bench/support/measure.mjs`; every child starts in the
 * harness's clean environment (`env -i` plus PATH, a temp HOME, LANG).
 *
 * Part `level` (the target, issue 23): a level start with `--store` against one without. Two
 * workspaces run `flower once hi` against the mock model (on 127.0.0.1 in this process;
 * `mockModelEnv` on the clean base, FLOWER_NO_UPDATE=1): one with `--store <PostgreSQL URL>` (a
 * schema of its own on FLOWER_BENCH_POSTGRES_URL, else FLOWER_TEST_POSTGRES_URL, else
 * postgres://postgres@127.0.0.1:5432/test), one without. The uncounted warm-up run of each leaves
 * its run directory — and, with `--store`, the database — holding the task, so every counted run
 * is a level start: both sides agree, the pull has nothing to bring (each run adds its session
 * and pushes it, so they agree again after it). Measured at the moment the mock receives the
 * first model request: the CPU of flower's own node process (/proc/<pid>/stat utime+stime plus
 * the cutime+cstime of children it reaped; clock ticks, 10 ms) — what the lease and the pull add
 * before the binary is asked to start — and, beside it for information, the CPU of the whole tree
 * (the binary's start included, the same work on both sides and the noisiest part). Wall is spawn
 * to that request. Clean `node -e 0` runs in the same interleaved rounds as the scale.
 * Target: `--store` adds at most 30 ms of CPU over the plain start, on a quiet machine where
 * clean `node -e 0` takes 23 ms (issue 23's measurement); CPU milliseconds stretch with the load,
 * so the target is scaled by this run's clean `node -e 0` CPU over 23 ms, as in
 * `bench/startup.bench.mjs`. Skipped, with a note, when no PostgreSQL server answers.
 *
 * Part `open` (for information, no target): the cost of the integrity check when `sessions.db`
 * is opened, for stores of several sizes built from the generated long-run transcript, each open
 * in a fresh node process, timed (wall and the process's `process.cpuUsage()`) over the open only:
 * - baseline: better-sqlite3 with the store's pragmas and schema statements, no check;
 * - after a clean close: `new SqliteSessionStore(file)` with the stamp the last close left (the
 *   usual start: only the small tables are checked);
 * - after a crash: the same without the stamp (the whole file is checked).
 * The three alternate round by round; the page cache is warm for all (the file was just
 * written), as it usually is for a store used minutes earlier.
 *
 * Environment: BENCH_ROUNDS (default 7), BENCH_SIZES_MB (default "25,100,250"; "" skips the
 * part), BENCH_ONLY (`level` or `open`), BENCH_NO_VERDICT=1 (exit 0 when the target is missed).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { ensureSchema } from '../dist/store/postgres/schema.js';
import { SqliteSessionStore } from '../dist/store/sqlite-session-store.js';
import { mock, mockModelEnv, startMockModel } from '../dist/testing/index.js';
import {
  CLOCK_TICKS,
  cleanEnv,
  difference,
  finish,
  interleave,
  interleaveAsync,
  judged,
  loadAverage,
  printTable,
  processTreeCpuMs,
  QUIET_NODE_START_MS,
  repoRoot,
  runMeasured,
  scaledStartTarget,
  scratchDir,
  spawnMeasured,
  summarize,
} from './support/measure.mjs';
import { generateTranscript } from './transcript-generator.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const SIZES_MB = (process.env.BENCH_SIZES_MB ?? '25,100,250').split(',').filter(Boolean).map(Number);
const ONLY = process.env.BENCH_ONLY;
const runs = (part) => ONLY === undefined || ONLY === part;
const BASE_URL =
  process.env.FLOWER_BENCH_POSTGRES_URL ||
  process.env.FLOWER_TEST_POSTGRES_URL ||
  'postgres://postgres@127.0.0.1:5432/test';
const TARGET_MS = 30;
const bin = path.join(repoRoot, 'dist', 'cli', 'bin.js');
const directory = mkdtempSync(path.join(scratchDir(), 'open-'));

const loadBefore = loadAverage();
const rows = [];
const notes = [];
let pass = true;

/** utime+stime+cutime+cstime of one process, in ms. */
function processCpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (
    ((Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 1000) / CLOCK_TICKS
  );
}

async function levelStart() {
  const admin = new pg.Pool({ connectionString: BASE_URL, max: 2 });
  try {
    await admin.query('SELECT 1');
  } catch (error) {
    notes.push(`level start with --store: skipped, no PostgreSQL server at ${BASE_URL} (${error.message})`);
    await admin.end();
    return;
  }
  const schema = `flower_bench_open_${process.pid}`;
  const storeUrl = `${BASE_URL}${BASE_URL.includes('?') ? '&' : '?'}schema=${schema}`;
  const model = await startMockModel([]);
  try {
    await ensureSchema(admin, schema, BASE_URL);
    const workspaces = { store: path.join(directory, 'ws-store'), plain: path.join(directory, 'ws-plain') };
    for (const workspace of Object.values(workspaces)) mkdirSync(workspace);
    let current;
    model.setScript({
      main: [],
      fallback: () => {
        if (current && current.first === undefined)
          current.first = {
            wallMs: current.run.elapsed(),
            ownCpuMs: processCpuMs(current.run.pid),
            treeCpuMs: processTreeCpuMs(current.run.pid),
          };
        return mock.text('ok');
      },
    });
    const env = () =>
      mockModelEnv(model, {
        configDir: mkdtempSync(path.join(directory, 'cfg-')),
        maxRetries: 0,
        base: cleanEnv(),
        extra: { FLOWER_NO_UPDATE: '1' },
      });
    const variants = [
      { name: 'clean `node -e 0`', node: true },
      { name: 'level start: `flower once hi`', args: [bin, '-w', workspaces.plain, 'once', 'hi'] },
      {
        name: 'level start: `flower --store <pg> once hi`',
        args: [bin, '-w', workspaces.store, '--store', storeUrl, 'once', 'hi'],
      },
    ];
    const samples = await interleaveAsync(variants, ROUNDS, async (variant) => {
      if (variant.node)
        return runMeasured(process.execPath, ['-e', '0'], { env: cleanEnv(), cwd: directory });
      current = { run: spawnMeasured(process.execPath, variant.args, { env: env(), cwd: directory }) };
      const result = await current.run.done;
      const { first } = current;
      current = undefined;
      if (result.status !== 0 || first === undefined)
        throw new Error(`${variant.name} exited ${result.status}: ${result.stderr.slice(-1500)}`);
      return { ...result, ...first };
    });
    const bare = summarize(samples.get(variants[0].name));
    const own = { wall: 'wallMs', cpu: 'ownCpuMs' };
    const tree = { wall: 'wallMs', cpu: 'treeCpuMs' };
    const [plain, store] = variants.slice(1).map((variant) => summarize(samples.get(variant.name), own));
    const [plainTree, storeTree] = variants
      .slice(1)
      .map((variant) => summarize(samples.get(variant.name), tree));
    const over = difference(store, plain);
    const overTree = difference(storeTree, plainTree);
    const { pass: met, ...judgement } = judged(
      '--store level start over plain',
      over,
      scaledStartTarget(TARGET_MS, bare.cpu.median),
      ' ms',
    );
    if (!met) pass = false;
    rows.push(
      { name: variants[0].name, summary: bare },
      { name: `${variants[1].name}: flower process, to 1st request`, summary: plain },
      {
        name: `${variants[2].name}: flower process, to 1st request`,
        summary: store,
        ...judgement,
      },
      { name: `${variants[1].name}: whole tree, to 1st request (info)`, summary: plainTree },
      {
        name: `${variants[2].name}: whole tree, to 1st request (info)`,
        summary: storeTree,
        ratioCpu: overTree.cpu,
        ratioWall: overTree.wall,
        unit: ' ms',
      },
    );
    const list = (name, field) =>
      samples
        .get(name)
        .map((sample) => Math.round(sample[field]))
        .join(', ');
    notes.push(
      `level start: "ratio" columns are differences of medians over the plain start (ms); the target is ${TARGET_MS} ms × this run's clean \`node -e 0\` CPU (${Math.round(bare.cpu.median)} ms) / ${QUIET_NODE_START_MS} ms. Wall is spawn to the first request (it includes the binary's start). Flower process CPU per round: plain [${list(variants[1].name, 'ownCpuMs')}] ms, --store [${list(variants[2].name, 'ownCpuMs')}] ms; whole tree: plain [${list(variants[1].name, 'treeCpuMs')}], --store [${list(variants[2].name, 'treeCpuMs')}]`,
    );
  } finally {
    await model.close();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
    await admin.end();
  }
}

const openChecked = `
const { SqliteSessionStore } = await import(${JSON.stringify(path.join(repoRoot, 'dist/store/sqlite-session-store.js'))});
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const start = performance.now();
const startCpu = cpu();
const store = new SqliteSessionStore(process.argv[1]);
const result = { ms: performance.now() - start, cpuMs: cpu() - startCpu };
store.close();
console.log(JSON.stringify(result));
`;
const openBaseline = `
const { default: Database } = await import('better-sqlite3');
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const start = performance.now();
const startCpu = cpu();
const db = new Database(process.argv[1]);
db.pragma('busy_timeout = 5000');
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec("CREATE TABLE IF NOT EXISTS entries (store_key TEXT NOT NULL, seq INTEGER NOT NULL, uid TEXT, payload TEXT NOT NULL, PRIMARY KEY (store_key, seq)); CREATE UNIQUE INDEX IF NOT EXISTS entries_uid ON entries(store_key, uid) WHERE uid IS NOT NULL; CREATE TABLE IF NOT EXISTS meta (store_key TEXT PRIMARY KEY, mtime INTEGER NOT NULL, next_seq INTEGER NOT NULL); CREATE TABLE IF NOT EXISTS summaries (project_key TEXT NOT NULL, session_id TEXT NOT NULL, mtime INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (project_key, session_id));");
const result = { ms: performance.now() - start, cpuMs: cpu() - startCpu };
db.close();
console.log(JSON.stringify(result));
`;

const openEnv = cleanEnv();
function openOnce(script, file) {
  const run = runMeasured(process.execPath, ['--input-type=module', '-e', script, file], {
    env: openEnv,
    cwd: repoRoot,
  });
  if (run.status !== 0) throw new Error(`open failed: ${run.stderr}`);
  return JSON.parse(run.stdout.trim().split('\n').at(-1));
}

function build(file, targetMb) {
  const store = new SqliteSessionStore(file);
  const entries = generateTranscript({ entries: 20_000 });
  for (let session = 0; statSync(file).size / 1e6 < targetMb; session += 1) {
    const key = {
      projectKey: '-home-dev-project',
      sessionId: `${String(session).padStart(8, '0')}-5b6d-4e8f-9a1b-2c3d4e5f6a7b`,
    };
    for (let start = 0; start < entries.length && statSync(file).size / 1e6 < targetMb; start += 500) {
      store.appendNow(
        key,
        entries
          .slice(start, start + 500)
          .map((entry) => ({ ...entry, ...(entry.uuid ? { uuid: `${entry.uuid}-${session}` } : {}) })),
      );
    }
  }
  store.close();
}

function openParts() {
  for (const mb of SIZES_MB) {
    const file = path.join(directory, `${mb}.db`);
    build(file, mb);
    const variants = [
      { name: 'baseline', run: () => openOnce(openBaseline, file) },
      {
        name: 'clean close',
        run: () => {
          openOnce(openChecked, file); // leaves the stamp of a clean close
          if (!existsSync(`${file}.verified`)) throw new Error('no stamp after a clean close');
          return openOnce(openChecked, file);
        },
      },
      {
        name: 'after a crash',
        run: () => {
          rmSync(`${file}.verified`, { force: true });
          return openOnce(openChecked, file);
        },
      },
    ];
    const samples = interleave(variants, ROUNDS, (variant) => variant.run());
    const size = `${(statSync(file).size / 1e6).toFixed(0)} MB`;
    const summaries = variants.map((variant) =>
      summarize(samples.get(variant.name), { wall: 'ms', cpu: 'cpuMs' }),
    );
    summaries.forEach((summary, index) => {
      const over =
        index === 0
          ? undefined
          : {
              cpu: summary.cpu.median / summaries[0].cpu.median,
              wall: summary.wall.median / summaries[0].wall.median,
            };
      rows.push({
        name: `open ${size}: ${variants[index].name} (info)`,
        summary,
        ratioCpu: over?.cpu,
        ratioWall: over?.wall,
      });
    });
  }
  notes.push(
    "open: times cover the open only (wall and the process's CPU, µs); ratios over the baseline open; no target.",
  );
}

try {
  if (runs('level')) await levelStart();
  if (runs('open')) openParts();
} finally {
  rmSync(directory, { recursive: true, force: true });
}

printTable({
  title: `opening the task's stores at start: ${ROUNDS} alternated rounds per variant, fresh processes`,
  loadBefore,
  loadAfter: loadAverage(),
  rows,
  notes: ['', ...notes],
});
finish(pass);
