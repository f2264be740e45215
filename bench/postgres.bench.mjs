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
 * Every round runs in fresh child processes started in the harness's clean environment
 * (`bench/support/measure.mjs`: `env -i` plus PATH, a temp HOME, LANG; the server's URL is passed
 * as an argument); the two sides alternate (and swap which goes first) round by round; medians
 * count. Each round writes into schemas of its own, which the parent creates beforehand and drops
 * afterwards.
 *
 * CPU time is the verdict, wall time is printed beside it with the load average: each timed
 * section reports this process's `process.cpuUsage()` (user+system of every thread, µs) beside
 * its wall time. The CPU is the client's (the node process), never the server's: both sides send
 * the server the same rows, so its work is alike, and a shared machine's load would otherwise
 * decide the verdict. In the append comparison, CPU per side is summed over that side's turns;
 * throughput on CPU is raw CPU / store CPU. The resume children are also measured whole (spawn to
 * exit, CPU from the harness's preload) for information.
 * BENCH_ROUNDS (default 7); BENCH_NO_VERDICT=1 exits 0 when a target is missed; exit code 2 when
 * no server answers (bench/store.bench.mjs tells that apart from a missed target).
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { ensureSchema } from '../dist/store/postgres/schema.js';
import { PostgresSessionStore } from '../dist/store/postgres/session-store.js';
import { generateTranscript } from './transcript-generator.mjs';

const CHILD = process.argv[2] === '--child';
/** A child gets the URL as its last argument: it starts in a clean environment. */
const BASE_URL = CHILD
  ? process.argv[5]
  : process.env.FLOWER_BENCH_POSTGRES_URL ||
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
/** CPU of this process so far, ms: user+system of every thread. */
const cpu = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};

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
      store: {
        appender: await storeAppender(storeSchema),
        chunks: chunks(transcript(entries)),
        ms: 0,
        cpuMs: 0,
      },
      raw: { appender: await rawAppender(rawSchema), chunks: chunks(transcript(entries)), ms: 0, cpuMs: 0 },
    };
    for (let index = 0; index < work.store.chunks.length; index += 1) {
      const order = (index % 2 === 0) === storeFirst ? ['store', 'raw'] : ['raw', 'store'];
      for (const side of order) {
        const start = process.hrtime.bigint();
        const startCpu = cpu();
        for (const each of work[side].chunks[index]) await work[side].appender.append(each);
        work[side].ms += elapsed(start);
        work[side].cpuMs += cpu() - startCpu;
      }
    }
    await work.store.appender.close();
    await work.raw.appender.close();
    return {
      store: { wallMs: work.store.ms, cpuMs: work.store.cpuMs },
      raw: { wallMs: work.raw.ms, cpuMs: work.raw.cpuMs },
    };
  },
  async 'resume-store'({ schema }) {
    const start = process.hrtime.bigint();
    const startCpu = cpu();
    const store = new PostgresSessionStore(withSchema(schema));
    const entries = await store.load(key);
    const measured = { wallMs: elapsed(start), cpuMs: cpu() - startCpu };
    if (entries?.length !== RESUME_ENTRIES) throw new Error(`loaded ${entries?.length} entries`);
    await store.close();
    return measured;
  },
  async 'resume-raw'({ schema }) {
    const start = process.hrtime.bigint();
    const startCpu = cpu();
    const client = new pg.Client({ connectionString: BASE_URL });
    await client.connect();
    const { rows } = await client.query(
      `SELECT entry FROM "${schema}".session_entries WHERE transcript_id = $1 ORDER BY seq`,
      [await transcriptId(client, schema)],
    );
    const entries = rows.map((row) => JSON.parse(row.entry));
    const measured = { wallMs: elapsed(start), cpuMs: cpu() - startCpu };
    if (entries.length !== RESUME_ENTRIES) throw new Error(`loaded ${entries.length} entries`);
    await client.end();
    return measured;
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

async function main() {
  const h = await import('./support/measure.mjs');
  const childEnv = h.cleanEnv();
  /** One child: its section's `{ wallMs, cpuMs }` (or the append's pair), plus the whole process. */
  const child = (side, args) => {
    const run = h.runMeasured(
      process.execPath,
      [fileURLToPath(import.meta.url), '--child', side, JSON.stringify(args), BASE_URL],
      { env: childEnv, cwd: h.repoRoot, maxBuffer: 1 << 20 },
    );
    if (run.status !== 0) throw new Error(`${side} failed:\n${run.stderr}`);
    return { ...JSON.parse(run.stdout), processWallMs: run.wallMs, processCpuMs: run.cpuMs };
  };

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
  const rows = [];
  const notes = [];
  let pass = true;
  const loadBefore = h.loadAverage();
  let server;
  try {
    server = (await admin.query('SHOW server_version')).rows[0].server_version;

    for (const { batch, entries } of APPEND) {
      const store = [];
      const raw = [];
      // No warm-up round: every round is a fresh process, and both sides share it.
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
      const storeSummary = h.summarize(store);
      const rawSummary = h.summarize(raw);
      // Throughput relative to the raw insert: raw time / store time, on medians.
      const throughput = h.ratio(rawSummary, storeSummary);
      const { pass: met, ...judgement } = h.judged(
        `append, batch ${batch}: throughput over the raw insert`,
        throughput,
        { min: 0.8 },
      );
      if (!met) pass = false;
      rows.push(
        { name: `append batch ${batch} (${entries} entries): raw INSERT`, summary: rawSummary },
        {
          name: `append batch ${batch} (${entries} entries): store (ratio = throughput, raw/store)`,
          summary: storeSummary,
          ...judgement,
        },
      );
      notes.push(
        `append batch ${batch}, rounds (store/raw, CPU ms): ${store.map((each, index) => `${Math.round(each.cpuMs)}/${Math.round(raw[index].cpuMs)}`).join(' ')}; wall ms: ${store.map((each, index) => `${Math.round(each.wallMs)}/${Math.round(raw[index].wallMs)}`).join(' ')}`,
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
    const variants = [
      {
        name: 'resume-raw',
        label: `resume ${RESUME_ENTRIES} (${size.rows[0].size}): connect + SELECT + JSON.parse`,
      },
      { name: 'resume-store', label: `resume ${RESUME_ENTRIES} (${size.rows[0].size}): store open + load` },
    ];
    const samples = h.interleave(variants, ROUNDS, (variant) => child(variant.name, { schema }));
    const [raw, store] = variants.map((variant) => h.summarize(samples.get(variant.name)));
    const over = h.ratio(store, raw);
    const { pass: met, ...judgement } = h.judged('resume', over, { max: 1.5 });
    if (!met) pass = false;
    const [rawProcess, storeProcess] = variants.map((variant) =>
      h.summarize(samples.get(variant.name), { wall: 'processWallMs', cpu: 'processCpuMs' }),
    );
    const overProcess = h.ratio(storeProcess, rawProcess);
    rows.push(
      { name: variants[0].label, summary: raw },
      {
        name: variants[1].label,
        summary: store,
        ...judgement,
      },
      { name: 'resume, whole process (info): raw', summary: rawProcess },
      {
        name: 'resume, whole process (info): store',
        summary: storeProcess,
        ratioCpu: overProcess.cpu,
        ratioWall: overProcess.wall,
      },
    );
    const list = (name) =>
      samples
        .get(name)
        .map((sample) => Math.round(sample.cpuMs))
        .join(' ');
    notes.push(`resume rounds, CPU ms: store ${list('resume-store')}; raw ${list('resume-raw')}`);
  } finally {
    for (const schema of created) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
  h.printTable({
    title: `PostgreSQL store against raw pg: PostgreSQL ${server}, ${ROUNDS} rounds in fresh processes`,
    loadBefore,
    loadAfter: h.loadAverage(),
    rows,
    notes: [
      '',
      "Times are of the measured section inside the child (CPU: process.cpuUsage of the client process, every thread; never the server's); append ratios are throughput (raw / store, target ≥), resume ratios store / raw (target ≤); ratios of medians.",
      ...notes,
    ],
  });
  h.finish(pass);
}

if (CHILD) {
  const measured = await sides[process.argv[3]](JSON.parse(process.argv[4]));
  process.stdout.write(`${JSON.stringify(measured)}\n`);
} else {
  await main();
}
