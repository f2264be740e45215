/**
 * Session store benchmark (`npm run bench:store`): what a user pays, in fresh child processes
 * (`bench/store-child.mjs`) started in the harness's clean environment (`bench/support/measure.mjs`),
 * interleaved round by round (order rotated) with the floor so both see the same load. Every time
 * is reported as CPU (the verdict: user+system of the child over the measured section, which does
 * not grow with the machine's load) beside wall, with the load average before and after.
 *
 * Two transcript kinds (BENCH_TRANSCRIPT=project|realistic|both, default both):
 * - `project`: the project's own long-run generator (`transcript-generator.mjs`): one main
 *   transcript, sequential ids, many small glances;
 * - `realistic`: a Claude Code 2.x-like session (`realistic-transcript.mjs`): random v4 uuids,
 *   one entry per block, per-tool `toolUseResult` copies, a few 50–500 KB results, a subagent
 *   sidechain per 500 entries (stored under `subagents/agent-<id>` keys with their
 *   `agent_metadata` entry, as the SDK imports them), file-history snapshots. A resume loads the
 *   main transcript and every subagent's; the floor reads the same keys.
 *
 * For each kind and size, the transcript is written once through the rewriting layer with trim on
 * (as `go` runs it, so spill files are written behind the appends; its close writes the last), then:
 *  1. first resume — a fresh process's first `load()` — and a later one — the same process's
 *     second — against the floor (better-sqlite3 reading the rows plus `JSON.parse` of each);
 *  2. peak memory added by the first resume against the floor's;
 *  3. the JSONL the SDK hands the binary on resume against the raw transcript's, and the
 *     characters the model receives;
 *  4. a "legacy" first resume: the same database with an empty spill directory;
 *  5. append of BENCH_APPEND entries (random v4 uuids) at batch size 1 (the SDK's eager mirroring)
 *     and 500, for the backend and the layered store, against a raw prepared insert (WAL); the
 *     layered store's spill files are written behind its appends (rewriting-store.ts), so its
 *     append path is judged and, beside it, the same with that write behind (the CPU a session
 *     still pays for them, while it waits for the model);
 *  6. the PostgreSQL backend (`bench/postgres.bench.mjs`, run as a child, its lines passed through).
 *
 * Targets (at 20k entries, both kinds; times on CPU, wall shown beside): first resume ≤ 1.5× the
 * floor, later resume ≤ 1.3×, peak memory ≤ 1.2×, append throughput at batch 1 ≥ 0.9× the raw
 * insert for the backend and ≥ 0.85× for the layered store (issue 23); and, for the project kind (the mix the trim targets were set on; the realistic kind's
 * figures are printed for information), resume JSONL ≤ 30% of the raw and ≥ 80% fewer characters
 * to the model.
 *
 * Environment: BENCH_ROUNDS (default 5), BENCH_SIZES (default "1000,20000,80000", project kind),
 * BENCH_REALISTIC_SIZES (default "1000,20000": the realistic kind is ≈ 5.5 KB an entry, 110 MB at
 * 20k), BENCH_TRANSCRIPT, BENCH_APPEND (default 20000 entries; 0 skips the append part),
 * BENCH_POSTGRES (0 skips the PostgreSQL part; 1 makes a missing server a failure),
 * BENCH_NO_VERDICT=1 (exit 0 even when a target is missed). Exits 1 when a target is missed.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { RewritingSessionStore } from '../dist/store/rewriting-store.js';
import { SqliteSessionStore } from '../dist/store/sqlite-session-store.js';
import { generateRealisticSession } from './realistic-transcript.mjs';
import {
  cleanEnv,
  finish,
  formatTarget,
  interleave,
  judged,
  loadAverage,
  median,
  printTable,
  ratio,
  repoRoot,
  runMeasured,
  scratchDir,
  summarize,
} from './support/measure.mjs';
import { generateTranscript } from './transcript-generator.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const sizes = (value) => value.split(',').filter(Boolean).map(Number);
const KINDS = { project: ['project'], realistic: ['realistic'], both: ['project', 'realistic'] }[
  process.env.BENCH_TRANSCRIPT ?? 'both'
];
if (!KINDS) throw new Error('BENCH_TRANSCRIPT is project, realistic or both');
const SIZES = {
  project: sizes(process.env.BENCH_SIZES ?? '1000,20000,80000'),
  realistic: sizes(process.env.BENCH_REALISTIC_SIZES ?? '1000,20000'),
};
const APPEND_COUNT = Number(process.env.BENCH_APPEND ?? 20_000);
const TARGET_SIZE = 20_000;
const child = path.join(repoRoot, 'bench', 'store-child.mjs');
const postgresBench = path.join(repoRoot, 'bench', 'postgres.bench.mjs');
/** postgres.bench.mjs's exit code when there is no server to measure. */
const NO_SERVER = 2;
const root = mkdtempSync(path.join(scratchDir(), 'store-'));
const key = { projectKey: '-home-dev-project', sessionId: '7f3c2a10-5b6d-4e8f-9a1b-2c3d4e5f6a7b' };
const storeKeyOf = (each) =>
  `${each.projectKey}/${each.sessionId}${each.subpath === undefined ? '' : `/${each.subpath}`}`;
const childEnv = cleanEnv();

/** One child measurement: its JSON line, plus the harness's whole-process wall and CPU. */
function measure(mode, args) {
  const run = runMeasured(process.execPath, ['--expose-gc', child, mode, JSON.stringify(args)], {
    env: childEnv,
    cwd: repoRoot,
  });
  if (run.status !== 0) throw new Error(`store-child ${mode} failed: ${run.stderr}`);
  return {
    ...JSON.parse(run.stdout.trim().split('\n').at(-1)),
    processMs: run.wallMs,
    processCpuMs: run.cpuMs,
  };
}

/** [key, entries] pairs of a transcript kind: one key, or the main one and each subagent's. */
function transcriptOf(kind, size) {
  if (kind === 'project') return [[key, generateTranscript({ entries: size, seed: 42 })]];
  const session = generateRealisticSession({ entries: size, seed: 42, sessionId: key.sessionId });
  return [
    [key, session.main],
    ...[...session.subagents].map(([agentId, entries]) => [
      { ...key, subpath: `subagents/agent-${agentId}` },
      [...entries, { type: 'agent_metadata', ...session.meta.get(agentId) }],
    ]),
  ];
}

const chatChars = (entries) =>
  entries.reduce(
    (sum, entry) =>
      sum +
      (entry.type === 'user' || entry.type === 'assistant'
        ? JSON.stringify(entry.message?.content ?? '').length
        : 0),
    0,
  );

/** Write a transcript as flower would (layered, trim on: spill files written behind the appends). */
async function prepare(kind, size) {
  const directory = path.join(root, `${kind}-${size}`);
  const workspace = path.join(directory, 'ws');
  const file = path.join(workspace, 'runs', 'sessions.db');
  mkdirSync(workspace, { recursive: true });
  const keyed = transcriptOf(kind, size);
  const backend = new SqliteSessionStore(file);
  const store = new RewritingSessionStore(backend, { workspace, trim: { enabled: true } });
  for (const [each, entries] of keyed)
    for (let index = 0; index < entries.length; index += 500)
      await store.append(each, entries.slice(index, index + 500));
  await store.close();
  const all = keyed.flatMap(([, entries]) => entries);
  const rawBytes = all.reduce((sum, entry) => sum + Buffer.byteLength(JSON.stringify(entry)) + 1, 0);
  const spill = path.join(workspace, '.flower', 'spill');
  return {
    kind,
    size,
    label: `${kind} ${size}`,
    file,
    workspace,
    keys: keyed.map(([each]) => each),
    storeKeys: keyed.map(([each]) => storeKeyOf(each)),
    entries: all.length,
    rawBytes,
    rawChars: chatChars(all),
    spillFiles: readdirSync(spill).length,
  };
}

/** A copy of the workspace's database with an empty spill directory: a transcript from before. */
function legacyWorkspace(prepared) {
  const workspace = mkdtempSync(path.join(root, `legacy-${prepared.kind}-${prepared.size}-`));
  mkdirSync(path.join(workspace, 'runs'), { recursive: true });
  spawnSync('cp', [prepared.file, path.join(workspace, 'runs', 'sessions.db')]);
  return { file: path.join(workspace, 'runs', 'sessions.db'), workspace };
}

let pass = true;
const rows = [];
const notes = [''];
/** A CPU-time target: a table row with its verdict. */
function timed(name, summary, against, target, { checked = true } = {}) {
  const r = ratio(summary, against);
  const row = { name, summary, ratioWall: r.wall, ratioCpu: r.cpu };
  if (target && checked) {
    const { pass: met, ...judgement } = judged(name, r, target);
    if (!met) pass = false;
    Object.assign(row, judgement);
  }
  rows.push(row);
}
/** A target that is not a time (memory, bytes): a line, checked as it is. */
function plain(name, value, target, shown, { checked = true } = {}) {
  const ok = target.max !== undefined ? value <= target.max : value >= target.min;
  if (checked && !ok) pass = false;
  notes.push(
    `- ${name}: ${shown} (target ${target.text ?? formatTarget(target)}: ${checked ? (ok ? 'PASS' : 'FAIL') : 'info'})`,
  );
}

const loadBefore = loadAverage();
const prepared = [];
for (const kind of KINDS) for (const size of SIZES[kind]) prepared.push(await prepare(kind, size));

// Resume: every prepared transcript's floor, resume and legacy resume, interleaved.
const variants = prepared.flatMap((each) => [
  { name: `${each.label} floor`, each, mode: 'floor' },
  { name: `${each.label} resume`, each, mode: 'resume' },
  { name: `${each.label} legacy`, each, mode: 'legacy' },
]);
const samples = interleave(variants, ROUNDS, ({ each, mode }) => {
  if (mode === 'floor') return measure('floor', { file: each.file, storeKeys: each.storeKeys });
  if (mode === 'resume')
    return measure('resume', { file: each.file, keys: each.keys, workspace: each.workspace });
  const legacy = legacyWorkspace(each);
  try {
    return measure('resume', { ...legacy, keys: each.keys });
  } finally {
    rmSync(legacy.workspace, { recursive: true, force: true });
  }
});

const FIRST = { wall: 'firstMs', cpu: 'firstCpuMs' };
const LATER = { wall: 'laterMs', cpu: 'laterCpuMs' };
const PROCESS = { wall: 'processMs', cpu: 'processCpuMs' };
for (const each of prepared) {
  const floor = samples.get(`${each.label} floor`);
  const resume = samples.get(`${each.label} resume`);
  const legacy = samples.get(`${each.label} legacy`);
  const atTarget = each.size === TARGET_SIZE;
  const pick = (list, field) => median(list.map((item) => item[field]));
  notes.push(
    `${each.label}: ${each.entries} entries in ${each.keys.length} key(s), ${(each.rawBytes / 1e6).toFixed(1)} MB, ${each.spillFiles} spill files written behind the appends; first resume wrote ${Math.max(...resume.map((item) => item.spillWritten))}, legacy ${Math.max(...legacy.map((item) => item.spillWritten))}`,
  );
  timed(`${each.label}: floor, first read`, summarize(floor, FIRST), summarize(floor, FIRST));
  timed(
    `${each.label}: first resume / floor`,
    summarize(resume, FIRST),
    summarize(floor, FIRST),
    atTarget && { max: 1.5 },
  );
  timed(
    `${each.label}: later resume / floor`,
    summarize(resume, LATER),
    summarize(floor, LATER),
    atTarget && { max: 1.3 },
  );
  timed(`${each.label}: legacy first resume / floor`, summarize(legacy, FIRST), summarize(floor, FIRST));
  timed(
    `${each.label}: whole resume process / floor's`,
    summarize(resume, PROCESS),
    summarize(floor, PROCESS),
  );
  if (atTarget) {
    const memory = pick(resume, 'peakMb') / pick(floor, 'peakMb');
    plain(
      `${each.label} peak memory added`,
      memory,
      { max: 1.2 },
      `${pick(resume, 'peakMb').toFixed(0)} MB vs floor ${pick(floor, 'peakMb').toFixed(0)} MB → ${memory.toFixed(2)}×`,
    );
    const jsonl = pick(resume, 'jsonlBytes') / each.rawBytes;
    plain(
      `${each.label} resume JSONL / raw`,
      jsonl,
      { max: 0.3, text: '≤ 30%' },
      `${(pick(resume, 'jsonlBytes') / 1e6).toFixed(1)} MB = ${(100 * jsonl).toFixed(1)}%`,
      { checked: each.kind === 'project' },
    );
    const fewer = 1 - pick(resume, 'charsFedBack') / each.rawChars;
    plain(
      `${each.label} fewer characters to the model`,
      fewer,
      { min: 0.8, text: '≥ 80%' },
      `${(100 * fewer).toFixed(1)}%`,
      {
        checked: each.kind === 'project',
      },
    );
  }
  notes.push(
    `  ${each.label} first-resume CPU rounds [${resume.map((item) => Math.round(item.firstCpuMs)).join(', ')}] floor [${floor.map((item) => Math.round(item.firstCpuMs)).join(', ')}] ms`,
  );
}

// Append: raw insert, backend, layered, for each kind, at batch 1 and 500.
if (APPEND_COUNT > 0) {
  const appendVariants = [];
  for (const kind of KINDS) {
    let entriesFile;
    if (kind === 'realistic') {
      const session = generateRealisticSession({ entries: APPEND_COUNT, seed: 7, sessionId: key.sessionId });
      entriesFile = path.join(root, 'append-realistic.jsonl');
      const lines = session.main.map((entry) => JSON.stringify([null, entry]));
      for (const [agentId, entries] of session.subagents)
        for (const entry of entries) lines.push(JSON.stringify([`subagents/agent-${agentId}`, entry]));
      writeFileSync(entriesFile, `${lines.join('\n')}\n`);
    }
    for (const batch of [1, 500])
      for (const store of ['raw', 'backend', 'layered'])
        appendVariants.push({
          name: `${kind} append batch ${batch} ${store}`,
          kind,
          batch,
          store,
          entriesFile,
        });
  }
  const spillFiles = new Map();
  const appended = interleave(appendVariants, ROUNDS, (variant, round) => {
    const workspace = mkdtempSync(path.join(root, 'append-'));
    try {
      const result = measure('append', {
        kind: variant.store,
        batch: variant.batch,
        count: APPEND_COUNT,
        seed: 7 + Math.max(round, 0),
        workspace,
        entriesFile: variant.entriesFile,
      });
      if (variant.store === 'layered') spillFiles.set(variant.name, result.spillFiles);
      return result;
    } finally {
      rmSync(workspace, { recursive: true, force: true });
    }
  });
  const ELAPSED = { wall: 'elapsedMs', cpu: 'elapsedCpuMs' };
  for (const kind of KINDS) {
    for (const batch of [1, 500]) {
      const of = (store) => summarize(appended.get(`${kind} append batch ${batch} ${store}`), ELAPSED);
      const raw = of('raw');
      // Throughput against the raw insert: raw time / store time.
      const throughput = (store) => {
        const r = ratio(raw, of(store));
        return { name: `${kind} append ${APPEND_COUNT} at batch ${batch}: ${store} throughput / raw`, r };
      };
      rows.push({ name: `${kind} append ${APPEND_COUNT} at batch ${batch}: raw insert`, summary: raw });
      for (const store of ['backend', 'layered']) {
        const { name, r } = throughput(store);
        const row = { name, summary: of(store), ratioWall: r.wall, ratioCpu: r.cpu };
        // At batch 1 (the SDK's eager flush): the backend alone ≥ 0.9×, and the layered store
        // the Runtime appends through ≥ 0.85× (issue 23).
        if (batch === 1) {
          const target = { min: store === 'backend' ? 0.9 : 0.85 };
          const { pass: met, ...judgement } = judged(name, r, target);
          if (!met) pass = false;
          Object.assign(row, judgement);
        }
        if (store === 'layered')
          row.name += ` (append path; ${spillFiles.get(`${kind} append batch ${batch} layered`)} spill files written behind it)`;
        rows.push(row);
      }
      // For information: the layered store's appends with the spill files it writes behind them.
      const withWriteBehind = summarize(appended.get(`${kind} append batch ${batch} layered`), {
        wall: 'withWriteBehindMs',
        cpu: 'withWriteBehindCpuMs',
      });
      const whole = ratio(raw, withWriteBehind);
      rows.push({
        name: `${kind} append ${APPEND_COUNT} at batch ${batch}: layered with its spill write behind / raw`,
        summary: withWriteBehind,
        ratioWall: whole.wall,
        ratioCpu: whole.cpu,
      });
    }
  }
}

const loadAfter = loadAverage();
printTable({
  title: `session store: ${ROUNDS} interleaved rounds, fresh processes (${KINDS.join(' and ')} transcripts)`,
  loadBefore,
  loadAfter,
  rows,
  notes: [
    ...notes,
    '',
    'Times are of the measured section inside the child (CPU: process.cpuUsage, every thread); "whole resume process" is the child from spawn to exit (CPU: its rusage, through the harness preload). Ratios are of medians; targets at 20k entries, on CPU.',
  ],
});

if (process.env.BENCH_POSTGRES !== '0') {
  console.log(
    '\nPostgreSQL backend (bench/postgres.bench.mjs; FLOWER_BENCH_POSTGRES_URL or FLOWER_TEST_POSTGRES_URL):',
  );
  const passThrough = Object.fromEntries(
    Object.entries(process.env).filter(([name]) =>
      ['FLOWER_BENCH_POSTGRES_URL', 'FLOWER_TEST_POSTGRES_URL', 'BENCH_ROUNDS'].includes(name),
    ),
  );
  const run = runMeasured(process.execPath, [postgresBench], { env: cleanEnv(passThrough), cwd: repoRoot });
  for (const line of `${run.stdout}${run.stderr}`.trimEnd().split('\n')) console.log(`  ${line}`);
  if (run.status === NO_SERVER) {
    if (process.env.BENCH_POSTGRES === '1') pass = false;
    else console.log('  (skipped: no server; BENCH_POSTGRES=1 makes that a failure)');
  } else if (run.status !== 0) {
    // Not converted to the harness yet: postgres.bench.mjs's verdicts are on wall time.
    console.log("  (that verdict is postgres.bench.mjs's own, on wall time; it counts here as before)");
    pass = false;
  }
}
finish(pass);
