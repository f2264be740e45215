/**
 * Cost of the integrity check when `sessions.db` is opened (`npm run bench:store-open`).
 *
 * For stores of several sizes built from the generated long-run transcript, each measurement runs
 * in a fresh Node process (a user pays this once per start) and times only the open:
 * - baseline: better-sqlite3 with the store's pragmas and schema statements, no check;
 * - after a clean close: `new SqliteSessionStore(file)` with the stamp the last close left (the
 *   usual start: only the small tables are checked);
 * - after a crash: the same without the stamp (the whole file is checked).
 * The three alternate round by round and the medians count. The page cache is warm for all (the
 * file was just written), as it usually is for a store used minutes earlier; a cold cache adds
 * the time to read the file once.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SqliteSessionStore } from '../dist/store/sqlite-session-store.js';
import { generateTranscript } from './transcript-generator.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const SIZES_MB = (process.env.BENCH_SIZES_MB ?? '25,100,250').split(',').map(Number);
const root = path.join(import.meta.dirname, '..');
const directory = mkdtempSync(path.join(tmpdir(), 'flower-bench-open-'));

const checked = `
const { SqliteSessionStore } = await import(${JSON.stringify(path.join(root, 'dist/store/sqlite-session-store.js'))});
const start = process.hrtime.bigint();
const store = new SqliteSessionStore(process.argv[1]);
const ms = Number(process.hrtime.bigint() - start) / 1e6;
store.close();
console.log(ms);
`;
const baseline = `
const { default: Database } = await import('better-sqlite3');
const start = process.hrtime.bigint();
const db = new Database(process.argv[1]);
db.pragma('busy_timeout = 5000');
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec("CREATE TABLE IF NOT EXISTS entries (store_key TEXT NOT NULL, seq INTEGER NOT NULL, uid TEXT, payload TEXT NOT NULL, PRIMARY KEY (store_key, seq)); CREATE UNIQUE INDEX IF NOT EXISTS entries_uid ON entries(store_key, uid) WHERE uid IS NOT NULL; CREATE TABLE IF NOT EXISTS meta (store_key TEXT PRIMARY KEY, mtime INTEGER NOT NULL, next_seq INTEGER NOT NULL); CREATE TABLE IF NOT EXISTS summaries (project_key TEXT NOT NULL, session_id TEXT NOT NULL, mtime INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (project_key, session_id));");
const ms = Number(process.hrtime.bigint() - start) / 1e6;
db.close();
console.log(ms);
`;

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const run = (script, file) =>
  Number(
    execFileSync(process.execPath, ['--input-type=module', '-e', script, file], {
      cwd: root,
      encoding: 'utf8',
    }).trim(),
  );

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

try {
  console.log(`open of sessions.db, fresh process each, ${ROUNDS} rounds, medians`);
  console.log('size    | baseline | clean close        | after a crash');
  for (const mb of SIZES_MB) {
    const file = path.join(directory, `${mb}.db`);
    build(file, mb);
    const samples = { baseline: [], clean: [], crash: [] };
    for (let round = 0; round < ROUNDS; round += 1) {
      samples.baseline.push(run(baseline, file));
      run(checked, file); // leaves the stamp of a clean close
      if (!existsSync(`${file}.verified`)) throw new Error('no stamp after a clean close');
      samples.clean.push(run(checked, file));
      rmSync(`${file}.verified`, { force: true });
      samples.crash.push(run(checked, file));
    }
    const [b, clean, crash] = [samples.baseline, samples.clean, samples.crash].map(median);
    const size = `${(statSync(file).size / 1e6).toFixed(0)} MB`.padEnd(7);
    const cell = (ms) => `${ms.toFixed(1).padStart(6)} ms ${`(${(ms / b).toFixed(1)}×)`.padEnd(7)}`;
    console.log(`${size} | ${b.toFixed(1).padStart(5)} ms | ${cell(clean)}  | ${cell(crash)}`);
  }
} finally {
  rmSync(directory, { recursive: true, force: true });
}
