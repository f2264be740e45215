/**
 * One measurement of `bench/store.bench.mjs`, in a fresh process (the way a resume after a crash
 * or a new `flower` run pays it): `node bench/store-child.mjs <mode> <json args>`. Prints one JSON
 * line. Every mode imports the same modules first, so the processes start alike; timers cover
 * only the measured work, and `peakMb` is the resident-memory high-water mark it added.
 *
 * Modes:
 * - `floor {file, storeKeys}`: read the rows of each store key with better-sqlite3 and
 *   `JSON.parse` each, twice (the second time after a garbage collection, see `settle`).
 * - `resume {file, keys, workspace}`: the rewriting layer over the SQLite backend with trim on (as
 *   `go` runs it): `load()` of every key (the main transcript, then its subagents'), twice in the
 *   same way, plus what the first load left behind (spill files written) and what the load hands
 *   the SDK (the size of the JSONL it writes for the binary, characters the model receives).
 * - `append {kind, batch, count, seed, workspace, entriesFile?}`: append `count` generated entries
 *   with random v4 uuids in batches of `batch`, awaiting each call as the SDK does: `raw` (a
 *   prepared insert into the same schema, WAL), `backend` (SqliteSessionStore) or `layered` (the
 *   rewriting layer over it, trim on). The section is the appends and the backend's close; the
 *   layered store's spill files, written behind its appends, are timed after it by its `close`
 *   (`withWriteBehind…` is the sum). With `entriesFile` (JSONL of `[subpath or null, entry]`,
 *   the realistic generator's session as the parent wrote it), those entries under their own
 *   keys instead; a batch never spans two keys.
 *
 * Every timed section reports wall (`…Ms`) and this process's CPU (`…CpuMs`, process.cpuUsage:
 * user+system of every thread, µs resolution) over the same work.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { RewritingSessionStore } from '../dist/store/rewriting-store.js';
import { SqliteSessionStore } from '../dist/store/sqlite-session-store.js';
import { generateTranscript } from './transcript-generator.mjs';

const [mode, rawArgs] = process.argv.slice(2);
const args = JSON.parse(rawArgs ?? '{}');

const now = () => performance.now();
/** CPU time of this process (all threads: the GC's helpers too), less sensitive to a busy machine. */
const cpu = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};
const mb = (kilobytes) => kilobytes / 1024;
const rssMb = () => process.memoryUsage.rss() / 1024 / 1024;
const peakMb = () => mb(process.resourceUsage().maxRSS);
/**
 * Between a first and a later load: collect the first one's garbage. A later resume comes minutes
 * after the first, not back to back, so neither side should pay for the other load's leftovers.
 */
const settle = () => globalThis.gc?.();

const countFiles = (directory) => {
  try {
    return readdirSync(directory).filter((name) => name.endsWith('.txt')).length;
  } catch {
    return 0;
  }
};

/** What the SDK writes for the binary to parse on resume: one JSON line per entry. */
const jsonlBytes = (entries) =>
  entries.reduce((sum, entry) => sum + Buffer.byteLength(JSON.stringify(entry)) + 1, 0);

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

const SCHEMA = `
CREATE TABLE entries (store_key TEXT NOT NULL, seq INTEGER NOT NULL, uid TEXT, payload TEXT NOT NULL, PRIMARY KEY (store_key, seq));
CREATE UNIQUE INDEX entries_uid ON entries(store_key, uid) WHERE uid IS NOT NULL;`;

async function floor() {
  const before = rssMb();
  const started = now();
  const startedCpu = cpu();
  const db = new Database(args.file, { readonly: true });
  const select = db.prepare('SELECT payload FROM entries WHERE store_key = ? ORDER BY seq').pluck();
  const readAll = () =>
    args.storeKeys.flatMap((storeKey) => select.all(storeKey).map((payload) => JSON.parse(payload)));
  let entries = readAll();
  const firstMs = now() - started;
  const firstCpuMs = cpu() - startedCpu;
  const peak = peakMb() - before;
  const count = entries.length;
  entries = undefined;
  settle();
  const again = now();
  const againCpu = cpu();
  entries = readAll();
  const laterMs = now() - again;
  const laterCpuMs = cpu() - againCpu;
  db.close();
  return { firstMs, laterMs, firstCpuMs, laterCpuMs, peakMb: peak, entries: count };
}

async function resume() {
  const spillDirectory = path.join(args.workspace, '.flower', 'spill');
  const spillBefore = countFiles(spillDirectory);
  const before = rssMb();
  const started = now();
  const startedCpu = cpu();
  const backend = new SqliteSessionStore(args.file);
  const store = new RewritingSessionStore(backend, { workspace: args.workspace, trim: { enabled: true } });
  const loadAll = async () => {
    const all = [];
    for (const key of args.keys) all.push(...((await store.load(key)) ?? []));
    return all;
  };
  let entries = await loadAll();
  const firstMs = now() - started;
  const firstCpuMs = cpu() - startedCpu;
  const peak = peakMb() - before;
  const spillWritten = countFiles(spillDirectory) - spillBefore;
  entries = undefined;
  settle();
  const again = now();
  const againCpu = cpu();
  entries = await loadAll();
  const laterMs = now() - again;
  const laterCpuMs = cpu() - againCpu;
  // Measured after both loads, so neither pays for the garbage this makes.
  const facts = {
    entries: entries.length,
    jsonlBytes: jsonlBytes(entries),
    charsFedBack: charsFedBack(entries),
  };
  const report = store.lastLoadReport(args.keys[0]);
  backend.close();
  return { firstMs, laterMs, firstCpuMs, laterCpuMs, peakMb: peak, spillWritten, report, ...facts };
}

async function append() {
  const key = { projectKey: '-home-dev-project', sessionId: '7f3c2a10-5b6d-4e8f-9a1b-2c3d4e5f6a7b' };
  // [subpath or null, entry] pairs: the project's generator, all under the main key, or the file.
  const keyed = args.entriesFile
    ? readFileSync(args.entriesFile, 'utf8')
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line))
    : generateTranscript({ entries: args.count, seed: args.seed }).map((entry) => [
        null,
        typeof entry.uuid === 'string' ? { ...entry, uuid: randomUUID() } : entry,
      ]);
  const entries = keyed.map(([, entry]) => entry);
  const batches = [];
  for (const [subpath, entry] of keyed) {
    const last = batches.at(-1);
    if (last && last.subpath === subpath && last.entries.length < args.batch) last.entries.push(entry);
    else batches.push({ subpath, entries: [entry] });
  }
  const keyOf = (subpath) => (subpath === null ? key : { ...key, subpath });
  const storeKeyOf = (subpath) =>
    `${key.projectKey}/${key.sessionId}${subpath === null ? '' : `/${subpath}`}`;
  const file = path.join(args.workspace, 'runs', 'sessions.db');
  if (args.kind === 'raw') {
    mkdirSync(path.dirname(file), { recursive: true });
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec(SCHEMA);
    const insert = db.prepare('INSERT INTO entries (store_key, seq, uid, payload) VALUES (?, ?, ?, ?)');
    const seqs = new Map();
    const insertOne = (storeKey, entry) => {
      const seq = seqs.get(storeKey) ?? 0;
      seqs.set(storeKey, seq + 1);
      insert.run(storeKey, seq, typeof entry.uuid === 'string' ? entry.uuid : null, JSON.stringify(entry));
    };
    const insertBatch = db.transaction((storeKey, batch) => {
      for (const entry of batch) insertOne(storeKey, entry);
    });
    const started = now();
    const startedCpu = cpu();
    for (const batch of batches) {
      // The SDK awaits every append; a raw mirror would too.
      const storeKey = storeKeyOf(batch.subpath);
      if (batch.entries.length === 1) insertOne(storeKey, batch.entries[0]);
      else insertBatch(storeKey, batch.entries);
      await Promise.resolve();
    }
    db.close();
    const elapsedMs = now() - started;
    const elapsedCpuMs = cpu() - startedCpu;
    return { elapsedMs, elapsedCpuMs, entries: entries.length };
  }
  const backend = new SqliteSessionStore(file);
  const store =
    args.kind === 'layered'
      ? new RewritingSessionStore(backend, { workspace: args.workspace, trim: { enabled: true } })
      : backend;
  const started = now();
  const startedCpu = cpu();
  for (const batch of batches) await store.append(keyOf(batch.subpath), batch.entries);
  backend.close(); // included: it writes what the appends left for later (the session index)
  const elapsedMs = now() - started;
  const elapsedCpuMs = cpu() - startedCpu;
  // The layered store's spill files, written behind the appends (in a session, while it waits
  // for the model; here the appends never yield, so all of them at close): timed on their own.
  const behind = now();
  const behindCpu = cpu();
  await store.close();
  const writeBehindMs = now() - behind;
  const writeBehindCpuMs = cpu() - behindCpu;
  return {
    elapsedMs,
    elapsedCpuMs,
    withWriteBehindMs: elapsedMs + writeBehindMs,
    withWriteBehindCpuMs: elapsedCpuMs + writeBehindCpuMs,
    entries: entries.length,
    spillFiles: countFiles(path.join(args.workspace, '.flower', 'spill')),
  };
}

const modes = { floor, resume, append };
const result = await modes[mode]();
console.log(JSON.stringify(result));
