/**
 * The pull at start (`npm run bench:pull`): what `go`/`run`/`once` pay before the first step when
 * the task is kept in PostgreSQL (runtime/shared/pull.ts), against raw pg + better-sqlite3 doing
 * the least the same job needs, on a real server (FLOWER_BENCH_POSTGRES_URL, else
 * FLOWER_TEST_POSTGRES_URL, else postgres://postgres@127.0.0.1:5432/test).
 *
 * The task: BENCH_SESSIONS realistic Claude Code sessions (default 20; `realistic-transcript.mjs`,
 * BENCH_ENTRIES entries each, default 1 000, over the main transcript and BENCH_SUBAGENTS subagent
 * transcripts each, default 4, stored under `subagents/agent-<id>` keys with their `agent_metadata`
 * entry as the SDK mirrors them) and 200 manifest rows, sent up once by a first pull from a
 * filled run directory.
 *  1. new machine: an empty run directory pulled from the database (open the store, pull) against
 *     a raw SELECT of every entry of the task's project (main and subagent transcripts),
 *     JSON.parse, and one transaction of prepared inserts into a fresh SQLite file. Target ≤ 1.5×
 *     on CPU.
 *  2. level start (the usual start: both sides already agree): a pull into a copy of a run
 *     directory that matches the database against a raw per-key count on both sides (target:
 *     flat in transcript length; the ratio is shown, and the absolute figure is what a user pays).
 * Every measurement is a fresh node child (a start pays its cold open) in the harness's clean
 * environment (`bench/support/measure.mjs`), run through this file in `child` mode; a child
 * imports only what its side needs. CPU (the verdict) is the child's own user+system (µs, from a
 * preload) over its whole life — node start and module loading included, alike on both sides —
 * not the server's; wall is spawn to exit, beside it. The sides of each case alternate round by
 * round, the order rotated, after one uncounted run each; medians count.
 *
 * Environment: BENCH_ROUNDS (default 5), BENCH_SESSIONS, BENCH_ENTRIES, BENCH_SUBAGENTS,
 * BENCH_NO_VERDICT=1 (exit 0 when the target is missed). Exits 1 when it is missed.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BASE_URL =
  process.env.FLOWER_BENCH_POSTGRES_URL ||
  process.env.FLOWER_TEST_POSTGRES_URL ||
  'postgres://postgres@127.0.0.1:5432/test';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 20);
const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 1000);
const SUBAGENTS = Number(process.env.BENCH_SUBAGENTS ?? 4);
const self = fileURLToPath(import.meta.url);
const withSchema = (schema) => `${BASE_URL}${BASE_URL.includes('?') ? '&' : '?'}schema=${schema}`;

/** The children: one measured job each; the harness measures the whole process. */
async function child([mode, base, url, workspace]) {
  const task = { workspace, runDir: join(workspace, 'runs') };
  const schema = new URL(url).searchParams.get('schema');
  if (mode === 'pull') {
    const { parseStoreTarget } = await import('../dist/config/store-url.js');
    const { pullTaskState } = await import('../dist/runtime/shared/pull.js');
    const { openSharedStore } = await import('../dist/store/shared/shared-store.js');
    const shared = await openSharedStore(parseStoreTarget(url));
    await pullTaskState(shared, task);
    await shared.close();
    return;
  }
  const { default: pg } = await import('pg');
  const { default: Database } = await import('better-sqlite3');
  const { projectKeyFor } = await import('../dist/store/session-key.js');
  const client = new pg.Client({ connectionString: base });
  await client.connect();
  if (mode === 'raw-copy') {
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
  } else throw new Error(`unknown mode ${mode}`);
}

async function main() {
  const { default: pg } = await import('pg');
  const { prepareRunDirectory } = await import('../dist/runtime/run-directory.js');
  const { saveManifestRows } = await import('../dist/runtime/manifest.js');
  const { newStepResult } = await import('../dist/runtime/step-result.js');
  const { parseStoreTarget } = await import('../dist/config/store-url.js');
  const { pullTaskState } = await import('../dist/runtime/shared/pull.js');
  const { projectKeyFor } = await import('../dist/store/session-key.js');
  const { openSharedStore } = await import('../dist/store/shared/shared-store.js');
  const { SqliteSessionStore } = await import('../dist/store/sqlite-session-store.js');
  const { generateRealisticSession } = await import('./realistic-transcript.mjs');
  const h = await import('./support/measure.mjs');

  /** A filled run directory: sessions through the store, manifest rows through the runtime's writer. */
  async function fillRunDirectory(workspace) {
    const runDir = join(workspace, 'runs');
    prepareRunDirectory(runDir, workspace);
    const store = new SqliteSessionStore(join(runDir, 'sessions.db'));
    const projectKey = projectKeyFor(workspace);
    let entries = 0;
    let transcripts = 0;
    for (let index = 0; index < SESSIONS; index += 1) {
      const sessionId = `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`;
      const session = generateRealisticSession({
        entries: ENTRIES,
        subagents: SUBAGENTS,
        seed: 100 + index,
        sessionId,
        cwd: workspace,
      });
      const keyed = [
        [{ projectKey, sessionId }, session.main],
        ...[...session.subagents].map(([agentId, list]) => [
          { projectKey, sessionId, subpath: `subagents/agent-${agentId}` },
          [...list, { type: 'agent_metadata', ...session.meta.get(agentId) }],
        ]),
      ];
      for (const [key, list] of keyed) {
        for (let at = 0; at < list.length; at += 500) await store.append(key, list.slice(at, at + 500));
        entries += list.length;
        transcripts += 1;
      }
    }
    store.close();
    const results = Array.from({ length: 200 }, (_, index) => ({
      ...newStepResult(`step-${index % 7}`, `run-${index}`),
      ok: true,
      endedAt: 1,
      costUsd: 0.01,
    }));
    saveManifestRows(runDir, 'run-bench', results);
    return { entries, transcripts };
  }

  const root = mkdtempSync(join(h.scratchDir(), 'pull-'));
  const schema = `flower_bench_pull_${process.pid}`;
  const url = withSchema(schema);
  const admin = new pg.Client({ connectionString: BASE_URL });
  await admin.connect();
  try {
    // One path for the task on every "machine": the source, then copies made at that path.
    const workspace = join(root, 'work');
    const filled = await fillRunDirectory(workspace);
    const upStart = performance.now();
    const shared = await openSharedStore(parseStoreTarget(url));
    await pullTaskState(shared, { workspace, runDir: join(workspace, 'runs') });
    await shared.close();
    const size = await admin.query(
      `SELECT pg_size_pretty(sum(octet_length(entry))::bigint) AS size FROM "${schema}".session_entries`,
    );
    const task = `${SESSIONS} realistic sessions, ${filled.transcripts} transcripts (main + ${SUBAGENTS} subagents each), ${filled.entries} entries (${size.rows[0].size} of JSON), 200 manifest rows; sent up in ${Math.round(performance.now() - upStart)} ms`;
    const level = join(root, 'level');
    cpSync(workspace, level, { recursive: true });

    const env = h.cleanEnv();
    const measure = (mode) => {
      const run = h.runMeasured(process.execPath, [self, 'child', mode, BASE_URL, url, workspace], {
        env,
        cwd: h.repoRoot,
      });
      if (run.status !== 0) throw new Error(`${mode} failed: ${run.stderr}`);
      return run;
    };
    const fresh = () => {
      rmSync(workspace, { recursive: true, force: true });
      prepareRunDirectory(join(workspace, 'runs'), workspace);
    };
    // A copied sessions.db has a new inode, which flower takes for a file it did not close itself
    // and checks whole (a third of a second here); a user's level start finds the stamp of its
    // own clean close, so the copy is opened and closed once, unmeasured, as bench:runtime does.
    const levelCopy = () => {
      rmSync(workspace, { recursive: true, force: true });
      cpSync(level, workspace, { recursive: true });
      new SqliteSessionStore(join(workspace, 'runs', 'sessions.db')).close();
    };

    const loadBefore = h.loadAverage();
    const newMachine = [
      { name: 'new machine: flower pull (empty run dir)', mode: 'pull' },
      { name: 'new machine: raw SELECT + parse + SQLite copy', mode: 'raw-copy' },
    ];
    const levelStart = [
      { name: 'level start: flower pull (nothing differs)', mode: 'pull' },
      { name: 'level start: raw per-key counts', mode: 'raw-count' },
    ];
    const firstSamples = h.interleave(newMachine, ROUNDS, (variant) => {
      fresh();
      return measure(variant.mode);
    });
    const levelSamples = h.interleave(levelStart, ROUNDS, (variant) => {
      levelCopy();
      return measure(variant.mode);
    });
    const loadAfter = h.loadAverage();

    const [pull, copy] = newMachine.map((variant) => h.summarize(firstSamples.get(variant.name)));
    const [levelPull, count] = levelStart.map((variant) => h.summarize(levelSamples.get(variant.name)));
    const over = h.ratio(pull, copy);
    const levelOver = h.ratio(levelPull, count);
    const { pass: met, ...judgement } = h.judged('new-machine pull over a raw copy', over, { max: 1.5 });
    const list = (samples) => samples.map((sample) => Math.round(sample.cpuMs)).join(', ');
    h.printTable({
      title: `pull at start from PostgreSQL: ${ROUNDS} alternated rounds per side, fresh processes`,
      loadBefore,
      loadAfter,
      rows: [
        { name: newMachine[1].name, summary: copy },
        {
          name: newMachine[0].name,
          summary: pull,
          ...judgement,
        },
        { name: levelStart[1].name, summary: count },
        {
          name: `${levelStart[0].name} (info)`,
          summary: levelPull,
          ratioCpu: levelOver.cpu,
          ratioWall: levelOver.wall,
        },
      ],
      notes: [
        '',
        `task: ${task}. CPU: the child process's own (node start and imports included), not the server's.`,
        `CPU per round (ms): pull [${list(firstSamples.get(newMachine[0].name))}], raw copy [${list(firstSamples.get(newMachine[1].name))}]; level pull [${list(levelSamples.get(levelStart[0].name))}], raw counts [${list(levelSamples.get(levelStart[1].name))}]`,
      ],
    });
    h.finish(met);
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
    await admin.end();
    rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'child') await child(process.argv.slice(3));
else await main();
