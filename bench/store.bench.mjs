/**
 * Session store benchmark (`npm run bench:store`): on a generated long-run transcript (~20k
 * entries, ~50 MB), compare in one process
 *  1. append throughput of SqliteSessionStore against a plain better-sqlite3 prepared-statement
 *     batch insert of the same rows into the same schema (target: at least 0.7×);
 *  2. load with all three rewrite layers against reading the same rows and JSON.parse-ing them
 *     (target: at most 2.5×), and against JSON.parse alone of already-read rows;
 *  3. characters fed back to the model (message content of user/assistant entries) after the
 *     rewrite against the raw transcript.
 * Both sides of each comparison get the same inputs, pragmas (WAL, synchronous=NORMAL) and batch
 * size (500 entries, the SDK's flush threshold); rounds alternate and the median counts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { SqliteSessionStore } from '../dist/store/sqlite-session-store.js';
import { generateTranscript } from './transcript-generator.mjs';

const ROUNDS = 5;
const BATCH = 500;
const directory = mkdtempSync(path.join(tmpdir(), 'flower-bench-store-'));
const key = { projectKey: '-home-dev-project', sessionId: '7f3c2a10-5b6d-4e8f-9a1b-2c3d4e5f6a7b' };
const storeKey = `${key.projectKey}/${key.sessionId}`;

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const time = (action) => {
  globalThis.gc?.();
  const start = process.hrtime.bigint();
  action();
  return Number(process.hrtime.bigint() - start) / 1e6;
};
const batches = (entries) =>
  Array.from({ length: Math.ceil(entries.length / BATCH) }, (_, index) =>
    entries.slice(index * BATCH, (index + 1) * BATCH),
  );

const SCHEMA = `
CREATE TABLE entries (store_key TEXT NOT NULL, seq INTEGER NOT NULL, uid TEXT, payload TEXT NOT NULL, PRIMARY KEY (store_key, seq));
CREATE UNIQUE INDEX entries_uid ON entries(store_key, uid) WHERE uid IS NOT NULL;`;

function baselineAppend(file, entries) {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(SCHEMA);
  const insert = db.prepare('INSERT INTO entries (store_key, seq, uid, payload) VALUES (?, ?, ?, ?)');
  let seq = 0;
  const insertBatch = db.transaction((batch) => {
    for (const entry of batch)
      insert.run(storeKey, seq++, typeof entry.uuid === 'string' ? entry.uuid : null, JSON.stringify(entry));
  });
  const elapsed = time(() => {
    for (const batch of batches(entries)) insertBatch(batch);
  });
  db.close();
  return elapsed;
}

function storeAppend(file, entries) {
  const store = new SqliteSessionStore(file);
  const elapsed = time(() => {
    for (const batch of batches(entries)) store.appendNow(key, batch);
  });
  store.close();
  return elapsed;
}

/** What the model is sent: the message content of conversation entries. */
const charsFedBack = (entries) =>
  entries.reduce(
    (sum, entry) =>
      sum +
      (entry.type === 'user' || entry.type === 'assistant'
        ? JSON.stringify(entry.message?.content ?? '').length
        : 0),
    0,
  );

try {
  console.log('Generating the transcript…');
  const entries = generateTranscript({ entries: 20_000, seed: 42 });
  const bytes = entries.reduce((sum, entry) => sum + Buffer.byteLength(JSON.stringify(entry)), 0);
  console.log(`transcript: ${entries.length} entries, ${(bytes / 1e6).toFixed(1)} MB`);

  // 1. append
  const baseline = [];
  const ours = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    baseline.push(baselineAppend(path.join(directory, `baseline-${round}.db`), entries));
    ours.push(storeAppend(path.join(directory, `store-${round}.db`), entries));
  }
  const appendRatio = median(baseline) / median(ours);
  console.log(
    `append: store ${median(ours).toFixed(0)} ms, plain insert ${median(baseline).toFixed(0)} ms → throughput ${appendRatio.toFixed(2)}× the baseline (target ≥ 0.7×)`,
  );

  // 2. load
  const file = path.join(directory, 'store-0.db');
  const workspace = path.join(directory, 'workspace');
  const store = new SqliteSessionStore(file, { workspace, trim: { enabled: true } });
  const reader = new Database(file, { readonly: true });
  const select = reader.prepare('SELECT payload FROM entries WHERE store_key = ? ORDER BY seq').pluck();
  const rows = select.all(storeKey);
  let loaded;
  const firstLoad = time(() => {
    store.load(key).then((value) => {
      loaded = value;
    });
  });
  const readAndParse = [];
  const parseOnly = [];
  const layered = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    readAndParse.push(time(() => select.all(storeKey).map((payload) => JSON.parse(payload))));
    parseOnly.push(time(() => rows.map((payload) => JSON.parse(payload))));
    layered.push(time(() => store.load(key)));
  }
  await Promise.resolve();
  const loadRatio = median(layered) / median(readAndParse);
  const parseRatio = median(layered) / median(parseOnly);
  console.log(
    `load (all layers): first ${firstLoad.toFixed(0)} ms (writes spill files), then ${median(layered).toFixed(0)} ms`,
  );
  console.log(
    `  vs read + JSON.parse of the same rows ${median(readAndParse).toFixed(0)} ms → ${loadRatio.toFixed(2)}× (target ≤ 2.5×)`,
  );
  console.log(
    `  vs JSON.parse alone of already-read rows ${median(parseOnly).toFixed(0)} ms → ${parseRatio.toFixed(2)}×`,
  );

  // 3. characters fed back
  const raw = charsFedBack(entries);
  const rewritten = charsFedBack(loaded ?? []);
  const report = store.lastLoadReport(key);
  console.log(
    `chars fed back: raw ${raw}, rewritten ${rewritten} → ${(100 * (1 - rewritten / raw)).toFixed(1)}% less`,
  );
  console.log(`load report: ${JSON.stringify(report)}`);
  reader.close();
  store.close();

  const pass = appendRatio >= 0.7 && loadRatio <= 2.5;
  console.log(pass ? 'targets met' : 'TARGETS MISSED');
  process.exitCode = pass ? 0 : 1;
} finally {
  rmSync(directory, { recursive: true, force: true });
}
