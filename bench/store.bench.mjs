/**
 * Session store benchmark (`npm run bench:store`): what a user pays, in fresh child processes
 * (`bench/store-child.mjs`), interleaved round by round with the floor so both see the same load.
 *
 * On generated long-run transcripts (`transcript-generator.mjs`) of 1k, 20k (≈ ten hours, 50 MB)
 * and 80k entries, each written once through the rewriting layer with trim on (as `go` runs it,
 * so spill files are written as results are appended):
 *  1. first resume — a fresh process's first `load()` — and a later one — the same process's
 *     second `load()` — against the floor: better-sqlite3 reading the rows plus `JSON.parse` of
 *     each, first and second time in a fresh process; and the spill files the first resume wrote;
 *  2. peak memory added by the first resume against the floor's;
 *  3. the JSONL the SDK hands the binary on resume against the raw transcript's, and the
 *     characters the model receives;
 *  4. a "legacy" first resume: the same transcript with an empty spill directory (written before
 *     spill-at-write), which has to write the files;
 *  5. append of 20k entries with random v4 uuids at batch size 1 (the SDK's eager mirroring: one
 *     entry per call, each awaited) and 500, for the backend and the layered store, against a raw
 *     prepared insert into the same schema in WAL mode.
 *
 *  6. the PostgreSQL backend (`bench/postgres.bench.mjs`, run as a child, its lines passed
 *     through): append at batch sizes 1 and 500 against a raw `pg` INSERT, and resume of the 20k
 *     transcript against a raw SELECT + JSON.parse, on a real server (see that file).
 *
 * Environment: BENCH_ROUNDS (default 5; 7 for the PostgreSQL part when unset), BENCH_SIZES
 * (default "1000,20000,80000"), BENCH_APPEND (default 20000 entries; 0 skips the append part),
 * BENCH_POSTGRES (0 skips the PostgreSQL part; 1 makes a missing server a failure, otherwise it is
 * reported and skipped). Exits non-zero when a target is missed.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RewritingSessionStore } from '../dist/store/rewriting-store.js';
import { SqliteSessionStore } from '../dist/store/sqlite-session-store.js';
import { generateTranscript } from './transcript-generator.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SIZES = (process.env.BENCH_SIZES ?? '1000,20000,80000').split(',').map(Number);
const APPEND_COUNT = Number(process.env.BENCH_APPEND ?? 20_000);
const child = path.join(path.dirname(fileURLToPath(import.meta.url)), 'store-child.mjs');
const postgresBench = path.join(path.dirname(fileURLToPath(import.meta.url)), 'postgres.bench.mjs');
/** postgres.bench.mjs's exit code when there is no server to measure. */
const NO_SERVER = 2;
const root = mkdtempSync(path.join(tmpdir(), 'flower-bench-store-'));
const key = { projectKey: '-home-dev-project', sessionId: '7f3c2a10-5b6d-4e8f-9a1b-2c3d4e5f6a7b' };
const storeKey = `${key.projectKey}/${key.sessionId}`;

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const ms = (value) => `${Math.round(value)} ms`;
const ratio = (value) => `${value.toFixed(2)}×`;

function measure(mode, args) {
  const run = spawnSync(process.execPath, ['--expose-gc', child, mode, JSON.stringify(args)], {
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  });
  if (run.status !== 0) throw new Error(`store-child ${mode} failed: ${run.stderr}`);
  return JSON.parse(run.stdout.trim().split('\n').at(-1));
}

/** Write a transcript as flower would (layered, trim on: spill files as results arrive). */
async function prepare(size) {
  const directory = path.join(root, `n${size}`);
  const workspace = path.join(directory, 'ws');
  const file = path.join(workspace, 'runs', 'sessions.db');
  mkdirSync(workspace, { recursive: true });
  const entries = generateTranscript({ entries: size, seed: 42 });
  const backend = new SqliteSessionStore(file);
  const store = new RewritingSessionStore(backend, { workspace, trim: { enabled: true } });
  for (let index = 0; index < entries.length; index += 500)
    await store.append(key, entries.slice(index, index + 500));
  backend.close();
  const rawBytes = entries.reduce((sum, entry) => sum + Buffer.byteLength(JSON.stringify(entry)) + 1, 0);
  const rawChars = entries.reduce(
    (sum, entry) =>
      sum +
      (entry.type === 'user' || entry.type === 'assistant'
        ? JSON.stringify(entry.message?.content ?? '').length
        : 0),
    0,
  );
  const spill = path.join(workspace, '.flower', 'spill');
  return { size, file, workspace, rawBytes, rawChars, spillFiles: readdirSync(spill).length };
}

/** A copy of the workspace's database with an empty spill directory: a transcript from before. */
function legacyWorkspace(prepared) {
  const workspace = path.join(root, `legacy-${prepared.size}-${Date.now()}`);
  mkdirSync(path.join(workspace, 'runs'), { recursive: true });
  spawnSync('cp', [prepared.file, path.join(workspace, 'runs', 'sessions.db')]);
  return { file: path.join(workspace, 'runs', 'sessions.db'), workspace };
}

const lines = [];
const say = (line = '') => {
  lines.push(line);
  console.log(line);
};
let pass = true;
const check = (ok) => {
  if (!ok) pass = false;
  return ok ? 'met' : 'MISSED';
};

try {
  say(
    `load average at start: ${loadavg()
      .map((value) => value.toFixed(1))
      .join(' ')}; ${ROUNDS} rounds`,
  );
  const prepared = [];
  for (const size of SIZES) prepared.push(await prepare(size));
  const results = new Map(prepared.map((each) => [each.size, { floor: [], resume: [], legacy: [] }]));
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const each of prepared) {
      const slot = results.get(each.size);
      slot.floor.push(measure('floor', { file: each.file, storeKey }));
      slot.resume.push(measure('resume', { file: each.file, key, workspace: each.workspace }));
      const legacy = legacyWorkspace(each);
      slot.legacy.push(measure('resume', { ...legacy, key }));
      rmSync(legacy.workspace, { recursive: true, force: true });
    }
  }
  say();
  say('Resume (fresh processes; medians):');
  const perEntry = [];
  for (const each of prepared) {
    const { floor, resume, legacy } = results.get(each.size);
    const pick = (list, field) => median(list.map((item) => item[field]));
    const first = pick(resume, 'firstMs') / pick(floor, 'firstMs');
    const later = pick(resume, 'laterMs') / pick(floor, 'laterMs');
    const memory = pick(resume, 'peakMb') / pick(floor, 'peakMb');
    const jsonl = pick(resume, 'jsonlBytes') / each.rawBytes;
    const fed = 1 - pick(resume, 'charsFedBack') / each.rawChars;
    const written = Math.max(...resume.map((item) => item.spillWritten));
    perEntry.push({ size: each.size, ms: pick(resume, 'firstMs') / each.size });
    say(
      `  ${each.size} entries (${(each.rawBytes / 1e6).toFixed(1)} MB, ${each.spillFiles} spill files written at append):`,
    );
    say(
      `    first resume ${ms(pick(resume, 'firstMs'))} vs floor ${ms(pick(floor, 'firstMs'))} → ${ratio(first)}` +
        (each.size === 20_000 ? ` (target ≤ 1.5×: ${check(first <= 1.5)})` : ''),
    );
    say(
      `    later resume ${ms(pick(resume, 'laterMs'))} vs floor ${ms(pick(floor, 'laterMs'))} → ${ratio(later)}` +
        (each.size === 20_000 ? ` (target ≤ 1.3×: ${check(later <= 1.3)})` : ''),
    );
    const cpuFirst = pick(resume, 'firstCpuMs') / pick(floor, 'firstCpuMs');
    const cpuLater = pick(resume, 'laterCpuMs') / pick(floor, 'laterCpuMs');
    say(
      `    CPU time: first ${ms(pick(resume, 'firstCpuMs'))} vs ${ms(pick(floor, 'firstCpuMs'))} → ${ratio(cpuFirst)}, later ${ms(pick(resume, 'laterCpuMs'))} vs ${ms(pick(floor, 'laterCpuMs'))} → ${ratio(cpuLater)}`,
    );
    say(`    spill files the first resume wrote: ${written}`);
    say(
      `    peak memory added ${pick(resume, 'peakMb').toFixed(0)} MB vs floor ${pick(floor, 'peakMb').toFixed(0)} MB → ${ratio(memory)}` +
        (each.size === 20_000 ? ` (target ≤ 1.2×: ${check(memory <= 1.2)})` : ''),
    );
    say(
      `    resume JSONL ${(pick(resume, 'jsonlBytes') / 1e6).toFixed(1)} MB = ${(100 * jsonl).toFixed(1)}% of the raw transcript's` +
        (each.size === 20_000 ? ` (target ≤ 30%: ${check(jsonl <= 0.3)})` : ''),
    );
    say(
      `    characters the model receives: ${(100 * fed).toFixed(1)}% fewer` +
        (each.size === 20_000 ? ` (target ≥ 80%: ${check(fed >= 0.8)})` : ''),
    );
    say(
      `    legacy first resume (empty spill directory): ${ms(pick(legacy, 'firstMs'))} → ${ratio(pick(legacy, 'firstMs') / pick(floor, 'firstMs'))}, wrote ${Math.max(...legacy.map((item) => item.spillWritten))} files`,
    );
    say(
      `    first-resume rounds: [${resume.map((item) => Math.round(item.firstMs)).join(', ')}] floor: [${floor.map((item) => Math.round(item.firstMs)).join(', ')}]`,
    );
  }
  if (perEntry.length > 1) {
    say(
      `  growth: first resume per entry ${perEntry.map((item) => `${item.size}: ${(item.ms * 1000).toFixed(1)} µs`).join(', ')}`,
    );
  }

  say();
  if (APPEND_COUNT > 0)
    say(`Append ${APPEND_COUNT} entries with random v4 uuids (fresh processes; medians):`);
  for (const batch of APPEND_COUNT > 0 ? [1, 500] : []) {
    const times = { raw: [], backend: [], layered: [] };
    let spillFiles = 0;
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const kind of ['raw', 'backend', 'layered']) {
        const workspace = mkdtempSync(path.join(root, 'append-'));
        const result = measure('append', { kind, batch, count: APPEND_COUNT, seed: 7 + round, workspace });
        times[kind].push(result.elapsedMs);
        if (kind === 'layered') spillFiles = result.spillFiles;
        rmSync(workspace, { recursive: true, force: true });
      }
    }
    const backend = median(times.raw) / median(times.backend);
    const layered = median(times.raw) / median(times.layered);
    say(
      `  batch ${batch}: raw insert ${ms(median(times.raw))}, backend ${ms(median(times.backend))} → throughput ${ratio(backend)}` +
        (batch === 1 ? ` (target ≥ 0.9×: ${check(backend >= 0.9)})` : ''),
    );
    say(
      `           layered (writes ${spillFiles} spill files) ${ms(median(times.layered))} → ${ratio(layered)} of the raw insert`,
    );
    say(
      `           rounds raw [${times.raw.map(Math.round).join(', ')}] backend [${times.backend.map(Math.round).join(', ')}]`,
    );
  }
  if (process.env.BENCH_POSTGRES !== '0') {
    say();
    say(
      'PostgreSQL backend (bench/postgres.bench.mjs; FLOWER_BENCH_POSTGRES_URL or FLOWER_TEST_POSTGRES_URL):',
    );
    const run = spawnSync(process.execPath, [postgresBench], { encoding: 'utf8', maxBuffer: 1 << 22 });
    for (const line of `${run.stdout}${run.stderr}`.trimEnd().split('\n')) say(`  ${line}`);
    if (run.status === NO_SERVER) {
      if (process.env.BENCH_POSTGRES === '1') check(false);
      else say('  (skipped: no server; BENCH_POSTGRES=1 makes that a failure)');
    } else check(run.status === 0);
  }
  say();
  say(
    `load average at end: ${loadavg()
      .map((value) => value.toFixed(1))
      .join(' ')}`,
  );
  say(pass ? 'targets met' : 'TARGETS MISSED');
  process.exitCode = pass ? 0 : 1;
} finally {
  rmSync(root, { recursive: true, force: true });
}
