/**
 * The pull at start (`npm run bench:pull`): what `go`/`run`/`once` pay before the first step when
 * the task is kept in PostgreSQL (runtime/shared/pull.ts), against raw pg + better-sqlite3 doing
 * the least the same job needs, on a real server (FLOWER_BENCH_POSTGRES_URL, else
 * FLOWER_TEST_POSTGRES_URL, else postgres://postgres@127.0.0.1:5432/test).
 *
 * The task: BENCH_SESSIONS sessions (default 20) of BENCH_ENTRIES entries each (default 1 000,
 * the bench's seeded long-run transcript shapes) and 200 manifest rows, sent up once by a first
 * pull from a filled run directory.
 *  1. new machine: an empty run directory pulled from the database (open the store, pull) against
 *     a raw SELECT of every entry of the task's project, JSON.parse, and one transaction of
 *     prepared inserts into a fresh SQLite file (target ≤ 1.5×);
 *  2. level start (the usual start: both sides already agree): a pull into a copy of a run
 *     directory that matches the database against a raw per-key count on both sides (target:
 *     flat in transcript length; the ratio is shown, and the absolute figure is what a user pays).
 * Every measurement is a fresh child process (a start pays its cold open); the two sides of each
 * case alternate round by round and swap who goes first; medians count.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import { parseStoreTarget } from '../dist/config/store-url.js';
import { saveManifestRows } from '../dist/runtime/manifest.js';
import { prepareRunDirectory } from '../dist/runtime/run-directory.js';
import { pullTaskState } from '../dist/runtime/shared/pull.js';
import { newStepResult } from '../dist/runtime/step-result.js';
import { projectKeyFor } from '../dist/store/session-key.js';
import { openSharedStore } from '../dist/store/shared/shared-store.js';
import { SqliteSessionStore } from '../dist/store/sqlite-session-store.js';
import { generateTranscript } from './transcript-generator.mjs';

const BASE_URL =
  process.env.FLOWER_BENCH_POSTGRES_URL ||
  process.env.FLOWER_TEST_POSTGRES_URL ||
  'postgres://postgres@127.0.0.1:5432/test';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 20);
const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 1000);
const self = fileURLToPath(import.meta.url);
const withSchema = (schema) => `${BASE_URL}${BASE_URL.includes('?') ? '&' : '?'}schema=${schema}`;
const elapsed = (start) => Number(process.hrtime.bigint() - start) / 1e6;
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

/** The children: one measurement each, printed as `{"ms": …}` on the last line. */
async function child([mode, url, workspace]) {
  const task = { workspace, runDir: join(workspace, 'runs') };
  const schema = new URL(url).searchParams.get('schema');
  const start = process.hrtime.bigint();
  if (mode === 'pull') {
    const shared = await openSharedStore(parseStoreTarget(url));
    await pullTaskState(shared, task);
    await shared.close();
  } else if (mode === 'raw-copy') {
    const client = new pg.Client({ connectionString: BASE_URL });
    await client.connect();
    const { rows } = await client.query(
      `SELECT t.session_id, t.subpath, e.entry FROM "${schema}".session_entries e
         JOIN "${schema}".session_transcripts t ON t.id = e.transcript_id
        WHERE t.project_key = $1 ORDER BY t.id, e.seq`,
      [projectKeyFor(workspace)],
    );
    await client.end();
    const db = new Database(join(task.runDir, 'floor.db'));
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE entries (session_id TEXT, subpath TEXT, seq INTEGER, entry TEXT)');
    const insert = db.prepare('INSERT INTO entries VALUES (?, ?, ?, ?)');
    db.transaction(() => {
      rows.forEach((row, seq) => {
        JSON.parse(row.entry);
        insert.run(row.session_id, row.subpath, seq, row.entry);
      });
    })();
    db.close();
  } else if (mode === 'raw-count') {
    const client = new pg.Client({ connectionString: BASE_URL });
    await client.connect();
    await client.query(
      `SELECT t.session_id, t.subpath, count(*) FROM "${schema}".session_entries e
         JOIN "${schema}".session_transcripts t ON t.id = e.transcript_id
        WHERE t.project_key = $1 GROUP BY t.session_id, t.subpath`,
      [projectKeyFor(workspace)],
    );
    await client.end();
    const db = new Database(join(task.runDir, 'sessions.db'), { readonly: true });
    db.prepare('SELECT count(*) FROM sqlite_master').all();
    db.close();
  }
  console.log(JSON.stringify({ ms: elapsed(start) }));
}

function measure(mode, url, workspace) {
  const run = spawnSync(process.execPath, [self, 'child', mode, url, workspace], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`${mode} failed: ${run.stderr}`);
  return JSON.parse(run.stdout.trim().split('\n').at(-1)).ms;
}

/** A filled run directory: sessions through the store, manifest rows through the runtime's writer. */
async function fillRunDirectory(workspace) {
  const runDir = join(workspace, 'runs');
  prepareRunDirectory(runDir, workspace);
  const store = new SqliteSessionStore(join(runDir, 'sessions.db'));
  const projectKey = projectKeyFor(workspace);
  for (let index = 0; index < SESSIONS; index += 1) {
    const entries = generateTranscript({ entries: ENTRIES, seed: 100 + index });
    await store.append({ projectKey, sessionId: `session-${index}` }, entries);
  }
  store.close();
  const results = Array.from({ length: 200 }, (_, index) => ({
    ...newStepResult(`step-${index % 7}`, `run-${index}`),
    ok: true,
    endedAt: 1,
    costUsd: 0.01,
  }));
  saveManifestRows(runDir, 'run-bench', results);
}

async function main() {
  const root = mkdtempSync(join(tmpdir(), 'flower-bench-pull-'));
  const schema = `flower_bench_pull_${process.pid}`;
  const url = withSchema(schema);
  const admin = new pg.Client({ connectionString: BASE_URL });
  await admin.connect();
  try {
    // One path for the task on every "machine": the source, then copies made at that path.
    const workspace = join(root, 'work');
    await fillRunDirectory(workspace);
    const upStart = process.hrtime.bigint();
    const shared = await openSharedStore(parseStoreTarget(url));
    await pullTaskState(shared, { workspace, runDir: join(workspace, 'runs') });
    await shared.close();
    console.log(
      `task: ${SESSIONS} sessions × ${ENTRIES} entries, 200 manifest rows; sent up in ${elapsed(upStart).toFixed(0)} ms`,
    );
    const level = join(root, 'level');
    cpSync(workspace, level, { recursive: true });

    const times = { pull: [], 'raw-copy': [], level: [], 'raw-count': [] };
    const fresh = () => {
      rmSync(workspace, { recursive: true, force: true });
      prepareRunDirectory(join(workspace, 'runs'), workspace);
    };
    const levelCopy = () => {
      rmSync(workspace, { recursive: true, force: true });
      cpSync(level, workspace, { recursive: true });
    };
    for (let round = 0; round < ROUNDS; round += 1) {
      const order = round % 2 === 0 ? ['pull', 'raw-copy'] : ['raw-copy', 'pull'];
      for (const mode of order) {
        fresh();
        times[mode].push(measure(mode, url, workspace));
      }
      const levelOrder = round % 2 === 0 ? ['level', 'raw-count'] : ['raw-count', 'level'];
      for (const mode of levelOrder) {
        levelCopy();
        times[mode].push(measure(mode === 'level' ? 'pull' : mode, url, workspace));
      }
    }
    const line = (label, ours, floor) => {
      const ratio = median(times[ours]) / median(times[floor]);
      console.log(
        `${label}: flower ${median(times[ours]).toFixed(0)} ms (${times[ours].map((t) => t.toFixed(0)).join(', ')}) vs floor ${median(times[floor]).toFixed(0)} ms (${times[floor].map((t) => t.toFixed(0)).join(', ')}) → ${ratio.toFixed(2)}×`,
      );
      return ratio;
    };
    const newMachine = line('new machine (empty run directory)', 'pull', 'raw-copy');
    line('level start (nothing differs)', 'level', 'raw-count');
    if (newMachine > 1.5) {
      console.log('target missed: new-machine pull > 1.5× the floor');
      process.exitCode = 1;
    }
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
    await admin.end();
    rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'child') await child(process.argv.slice(3));
else await main();
