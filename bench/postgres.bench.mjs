/**
 * PostgreSQL store benchmark (`npm run bench:postgres`): PostgresSessionStore against raw pg doing
 * the least the same job needs, on a real server (FLOWER_BENCH_POSTGRES_URL, else
 * FLOWER_TEST_POSTGRES_URL, else postgres://postgres@127.0.0.1:5432/test). PGlite is not a
 * stand-in here: its timings say nothing about a server.
 *
 *  1. append, batch size 500 (the SDK's flush threshold) and batch size 1 (eager mirroring), random
 *     v4 uuids as the SDK writes them: store.append per batch vs one raw parameterised INSERT per
 *     batch into the same table (same columns, same indexes), no idempotency, mtime or summary.
 *     Reported as throughput, baseline time / store time (target ≥ 0.8×). Both sides share one
 *     fresh process per round and take turns every APPEND_CHUNK entries (a 2-core machine shared
 *     with other work swings by several times within seconds; whole-process turns of 10 s each
 *     measured the load, not the store).
 *  2. resume of the bench's 20k-entry transcript: a cold process opens the store and loads the
 *     transcript vs a cold process that connects and runs the raw SELECT + JSON.parse of the same
 *     rows (target ≤ 1.5×).
 * Every round runs in fresh child processes; the two sides alternate (and swap which goes first)
 * round by round; medians count. Each round writes into schemas of its own, which the
 * parent creates beforehand and drops afterwards.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ensureSchema } from '../dist/store/postgres/schema.js';
import { PostgresSessionStore } from '../dist/store/postgres/session-store.js';
import { generateTranscript } from './transcript-generator.mjs';

const BASE_URL =
  process.env.FLOWER_BENCH_POSTGRES_URL ||
  process.env.FLOWER_TEST_POSTGRES_URL ||
  'postgres://postgres@127.0.0.1:5432/test';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const RESUME_ENTRIES = 20_000;
const APPEND = [
  { batch: 500, entries: 20_000 },
  { batch: 1, entries: 2_000 },
];
/** Entries per side between switches in the append comparison. */
const APPEND_CHUNK = 50;
const key = { projectKey: '-home-dev-project', sessionId: '7f3c2a10-5b6d-4e8f-9a1b-2c3d4e5f6a7b' };
const withSchema = (schema) => `${BASE_URL}${BASE_URL.includes('?') ? '&' : '?'}schema=${schema}`;

/** The generator's transcript with fresh random v4 uuids (parent links kept consistent). */
function transcript(entries) {
  const generated = generateTranscript({ entries, seed: 42 });
  const renamed = new Map(generated.map((entry) => [entry.uuid, randomUUID()]));
  return generated.map((entry) => ({
    ...entry,
    ...(typeof entry.uuid === 'string' ? { uuid: renamed.get(entry.uuid) } : {}),
    ...(typeof entry.parentUuid === 'string' ? { parentUuid: renamed.get(entry.parentUuid) } : {}),
  }));
}

const batchesOf = (entries, size) =>
  Array.from({ length: Math.ceil(entries.length / size) }, (_, index) =>
    entries.slice(index * size, (index + 1) * size),
  );

const elapsed = (start) => Number(process.hrtime.bigint() - start) / 1e6;

// ---- the measured sides, each run in a child process --------------------------------------

/** Raw pg: one parameterised multi-row INSERT per batch into the same table, nothing else. */
async function rawAppender(schema) {
  const pool = new pg.Pool({ connectionString: BASE_URL, max: 4 });
  await pool.query('SELECT 1');
  const table = `"${schema}".session_entries`;
  let seq = 0;
  return {
    append: async (batch) => {
      const values = [];
      const rows = batch.map((entry) => {
        values.push(seq++, typeof entry.uuid === 'string' ? entry.uuid : null, JSON.stringify(entry));
        const at = values.length;
        return `(1, $${at - 2}, $${at - 1}, $${at})`;
      });
      await pool.query(
        `INSERT INTO ${table} (transcript_id, seq, uuid, entry) VALUES ${rows.join(', ')}`,
        values,
      );
    },
    close: () => pool.end(),
  };
}

async function storeAppender(schema) {
  const store = new PostgresSessionStore(withSchema(schema));
  await store.open();
  return { append: (batch) => store.append(key, batch), close: () => store.close() };
}

const sides = {
  /**
   * Both sides in one fresh process, alternating every few batches (and swapping who goes first),
   * so a burst of load from elsewhere on the machine hits both alike. Connections are warm.
   */
  async append({ storeSchema, rawSchema, batch, entries, storeFirst }) {
    const chunks = (list) => batchesOf(batchesOf(list, batch), Math.max(1, Math.round(APPEND_CHUNK / batch)));
    const work = {
      store: { appender: await storeAppender(storeSchema), chunks: chunks(transcript(entries)), ms: 0 },
      raw: { appender: await rawAppender(rawSchema), chunks: chunks(transcript(entries)), ms: 0 },
    };
    for (let index = 0; index < work.store.chunks.length; index += 1) {
      const order = (index % 2 === 0) === storeFirst ? ['store', 'raw'] : ['raw', 'store'];
      for (const side of order) {
        const start = process.hrtime.bigint();
        for (const each of work[side].chunks[index]) await work[side].appender.append(each);
        work[side].ms += elapsed(start);
      }
    }
    await work.store.appender.close();
    await work.raw.appender.close();
    return { store: work.store.ms, raw: work.raw.ms };
  },
  async 'resume-store'({ schema }) {
    const start = process.hrtime.bigint();
    const store = new PostgresSessionStore(withSchema(schema));
    const entries = await store.load(key);
    const ms = elapsed(start);
    if (entries?.length !== RESUME_ENTRIES) throw new Error(`loaded ${entries?.length} entries`);
    await store.close();
    return ms;
  },
  async 'resume-raw'({ schema }) {
    const start = process.hrtime.bigint();
    const client = new pg.Client({ connectionString: BASE_URL });
    await client.connect();
    const { rows } = await client.query(
      `SELECT entry FROM "${schema}".session_entries WHERE transcript_id = $1 ORDER BY seq`,
      [await transcriptId(client, schema)],
    );
    const entries = rows.map((row) => JSON.parse(row.entry));
    const ms = elapsed(start);
    if (entries.length !== RESUME_ENTRIES) throw new Error(`loaded ${entries.length} entries`);
    await client.end();
    return ms;
  },
};

async function transcriptId(client, schema) {
  const { rows } = await client.query(
    `SELECT id FROM "${schema}".session_transcripts WHERE project_key = $1 AND session_id = $2 AND subpath = ''`,
    [key.projectKey, key.sessionId],
  );
  return rows[0].id;
}

// ---- the parent: prepare, alternate children, report --------------------------------------

function child(side, args) {
  const result = spawnSync(
    process.execPath,
    [fileURLToPath(import.meta.url), '--child', side, JSON.stringify(args)],
    {
      encoding: 'utf8',
      maxBuffer: 1 << 20,
    },
  );
  if (result.status !== 0) throw new Error(`${side} failed:\n${result.stderr}`);
  return JSON.parse(result.stdout);
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main() {
  const admin = new pg.Pool({ connectionString: BASE_URL, max: 2 });
  try {
    await admin.query('SELECT 1');
  } catch (error) {
    console.error(
      `No PostgreSQL server at ${BASE_URL} (${error.message}). Set FLOWER_BENCH_POSTGRES_URL to one.`,
    );
    // Told apart from a missed target: bench:store reports it and goes on (see store.bench.mjs).
    process.exitCode = 2;
    await admin.end();
    return;
  }
  const created = [];
  const freshSchema = async (label) => {
    const schema = `flower_bench_${label}_${process.pid}_${created.length}`;
    created.push(schema);
    await ensureSchema(admin, schema, BASE_URL);
    return schema;
  };
  const results = [];
  try {
    const server = (await admin.query('SHOW server_version')).rows[0].server_version;
    console.log(`PostgreSQL ${server} at ${BASE_URL}; ${ROUNDS} rounds in fresh processes`);

    for (const { batch, entries } of APPEND) {
      const store = [];
      const raw = [];
      for (let round = 0; round < ROUNDS; round += 1) {
        const measured = child('append', {
          storeSchema: await freshSchema(`s${batch}`),
          rawSchema: await freshSchema(`r${batch}`),
          batch,
          entries,
          storeFirst: round % 2 === 0,
        });
        store.push(measured.store);
        raw.push(measured.raw);
      }
      const ratio = median(raw.map((ms, index) => ms / store[index]));
      results.push({ name: `append, batch ${batch}`, ratio, pass: ratio >= 0.8 });
      console.log(
        `append, batch size ${batch} (${entries} entries): store ${median(store).toFixed(0)} ms, raw INSERT ${median(raw).toFixed(0)} ms (medians) → throughput ${ratio.toFixed(2)}× the raw insert (median of the rounds' ratios; target ≥ 0.8×)`,
      );
      console.log(
        `  rounds (store/raw ms): ${store.map((ms, index) => `${ms.toFixed(0)}/${raw[index].toFixed(0)}`).join(' ')}`,
      );
    }

    // One transcript, written by the store, read back by both sides.
    const schema = await freshSchema('resume');
    const writer = new PostgresSessionStore(withSchema(schema));
    for (const each of batchesOf(transcript(RESUME_ENTRIES), 500)) await writer.append(key, each);
    await writer.close();
    const size = await admin.query(
      `SELECT pg_size_pretty(sum(octet_length(entry))::bigint) AS size FROM "${schema}".session_entries`,
    );
    const store = [];
    const raw = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const order = round % 2 === 0 ? ['resume-store', 'resume-raw'] : ['resume-raw', 'resume-store'];
      for (const side of order) (side === 'resume-store' ? store : raw).push(child(side, { schema }));
    }
    const ratio = median(store.map((ms, index) => ms / raw[index]));
    results.push({ name: 'resume', ratio, pass: ratio <= 1.5 });
    console.log(
      `resume of ${RESUME_ENTRIES} entries (${size.rows[0].size} of JSON), cold process: store open + load ${median(store).toFixed(0)} ms, connect + SELECT + JSON.parse ${median(raw).toFixed(0)} ms → ${ratio.toFixed(2)}× (median of the rounds' ratios; target ≤ 1.5×)`,
    );
    console.log(
      `  store rounds ${store.map((ms) => ms.toFixed(0)).join(' ')}; raw rounds ${raw.map((ms) => ms.toFixed(0)).join(' ')}`,
    );
  } finally {
    for (const schema of created) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
  const pass = results.every((result) => result.pass);
  console.log(
    pass
      ? 'targets met'
      : `TARGETS MISSED: ${results
          .filter((r) => !r.pass)
          .map((r) => r.name)
          .join(', ')}`,
  );
  process.exitCode = pass ? 0 : 1;
}

if (process.argv[2] === '--child') {
  const measured = await sides[process.argv[3]](JSON.parse(process.argv[4]));
  process.stdout.write(`${JSON.stringify(measured)}\n`);
} else {
  await main();
}
