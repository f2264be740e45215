/**
 * Report benchmark (`npm run bench:report`): what `flower report --json` costs on a long run,
 * against the floor of reading the same transcript at all.
 *
 * The run directory holds the 20k-entry generated transcript (`transcript-generator.mjs`, seed
 * 42, ~50 MB of JSON) as one step's session in `runs/sessions.db`, plus its manifest row. Both
 * sides are whole fresh processes, as a user pays them, alternated round by round:
 *  - floor: `node` that opens the database read-only with better-sqlite3, selects the session's
 *    payloads in order and `JSON.parse`s every one (nothing less can read the transcript);
 *  - report: `node dist/cli/bin.js report --json -w <workspace>` with its output discarded.
 * Target: report ≤ 3× the floor (medians). Also prints the size of the `--html` page for the same
 * run (target: under 2 MB).
 *
 * Run with `npm run bench:report`; BENCH_ROUNDS sets the rounds (default 7).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { projectKeyFor } from '../dist/store/session-key.js';
import { SqliteSessionStore } from '../dist/store/sqlite-session-store.js';
import { generateTranscript } from './transcript-generator.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const repoRoot = path.join(fileURLToPath(import.meta.url), '..', '..');
const bin = path.join(repoRoot, 'dist', 'cli', 'bin.js');
const root = mkdtempSync(path.join(tmpdir(), 'flower-bench-report-'));
const workspace = path.join(root, 'ws');
const runDir = path.join(workspace, 'runs');
const database = path.join(runDir, 'sessions.db');
const sessionId = '7f3c2a10-5b6d-4e8f-9a1b-2c3d4e5f6a7b';

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

function timed(args) {
  const start = process.hrtime.bigint();
  const result = spawnSync(process.execPath, args, {
    cwd: root,
    env: { ...process.env, FLOWER_NO_UPDATE: '1' },
    stdio: ['ignore', 'ignore', 'pipe'],
    maxBuffer: 1 << 30,
  });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (result.status !== 0) throw new Error(`${args.join(' ')} failed: ${result.stderr}`);
  return ms;
}

const floorScript = `
const Database = (await import(${JSON.stringify(path.join(repoRoot, 'node_modules', 'better-sqlite3', 'lib', 'index.js'))})).default;
const db = new Database(${JSON.stringify(database)}, { readonly: true, fileMustExist: true });
const rows = db.prepare('SELECT payload FROM entries WHERE store_key = ? ORDER BY seq').pluck().all(process.argv.at(-1));
let count = 0;
for (const payload of rows) if (JSON.parse(payload)) count += 1;
db.close();
if (count !== rows.length) process.exit(1);
`;

try {
  mkdirSync(runDir, { recursive: true });
  const entries = generateTranscript({ entries: 20_000, seed: 42 }).map((entry) => ({ ...entry, sessionId }));
  const projectKey = projectKeyFor(workspace);
  const store = new SqliteSessionStore(database);
  for (let index = 0; index < entries.length; index += 500)
    store.appendNow({ projectKey, sessionId }, entries.slice(index, index + 500));
  store.close();
  const times = entries.map((entry) => Date.parse(entry.timestamp ?? '')).filter(Number.isFinite);
  const startedAt = Math.min(...times) / 1000 - 1;
  const endedAt = Math.max(...times) / 1000 + 1;
  writeFileSync(
    path.join(runDir, 'manifest.json'),
    JSON.stringify([
      {
        step: 'work',
        session_id: sessionId,
        ok: true,
        cost_usd: 12.5,
        num_turns: 4000,
        text: 'done',
        error: null,
        started_at: startedAt,
        ended_at: endedAt,
        attempts: 1,
        errors: [],
        resumed: false,
        retired: [],
        context: 0,
        duration_s: endedAt - startedAt,
        run: 'bench',
      },
    ]),
  );
  const bytes = statSync(database).size;
  console.log(
    `run directory: ${entries.length} entries in one step, sessions.db ${(bytes / 1e6).toFixed(1)} MB`,
  );

  const floor = [];
  const report = [];
  const storeKey = `${projectKey}/${sessionId}`;
  for (let round = 0; round < ROUNDS; round += 1) {
    const sides = [
      () => floor.push(timed(['--input-type=module', '-e', floorScript, '--', storeKey])),
      () => report.push(timed([bin, 'report', '--json', '-w', workspace])),
    ];
    // Alternate which side goes first, so both see the same cache and load.
    if (round % 2 === 1) sides.reverse();
    for (const side of sides) side();
  }
  const ratio = median(report) / median(floor);
  console.log(`floor (fresh node: read + JSON.parse every entry): median ${median(floor).toFixed(0)} ms`);
  console.log(`flower report --json (fresh process):             median ${median(report).toFixed(0)} ms`);
  console.log(`→ ${ratio.toFixed(2)}× the floor (target ≤ 3×)`);

  const page = path.join(root, 'report.html');
  timed([bin, 'report', '--html', page, '-w', workspace]);
  const pageBytes = statSync(page).size;
  console.log(`--html page: ${(pageBytes / 1024).toFixed(0)} KB (target < 2048 KB)`);

  const pass = ratio <= 3 && pageBytes < 2 * 1024 * 1024;
  console.log(pass ? 'targets met' : 'TARGETS MISSED');
  process.exitCode = pass ? 0 : 1;
} finally {
  rmSync(root, { recursive: true, force: true });
}
