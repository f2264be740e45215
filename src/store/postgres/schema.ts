/**
 * flower's tables in PostgreSQL: one schema (default `flower`), one table family per concern, each
 * family versioned on its own in `schema_versions` and brought up to date on first use.
 *
 * Invariants:
 * - Safe when several processes (on several machines) open the same database at once: creation and
 *   migration run in one transaction under a transaction-scoped advisory lock keyed by the schema
 *   name, so exactly one process migrates and the others find the work done. The lock is released
 *   by the server at commit, rollback or a dropped connection; nothing can leave it behind.
 * - The common case costs one read: a process that finds every family at its current version takes
 *   no lock and writes nothing.
 * - A family written by a newer flower (a higher version than this one knows) is refused with a
 *   line saying to upgrade; an older one is migrated forward, never backward.
 * - Nothing outside the named schema is created or changed; a schema that already exists (created
 *   by an administrator for a user without CREATE on the database) is used as it is.
 *
 * Families: `sessions` (transcripts, their entries, summaries and newest cost-state; `session_append`)
 * and `task_records` (manifest rows, lineage, in-flight markers, endpoint history, spill files and
 * task-lock holders; task-records.ts), and `tombstones` (the sessions gc dropped; tombstones.ts).
 * Each is an entry in `FAMILIES` with its own version row, so adding one never touches another.
 */
import type { Pool, PoolClient } from 'pg';
import { PostgresStoreError } from './errors.js';
import { TASK_RECORDS } from './task-records.js';
import { TOMBSTONES } from './tombstones.js';

/** One concern's tables: its migrations in order; migration i brings the family to version i + 1. */
export interface TableFamily {
  name: string;
  migrations: ReadonlyArray<(schema: string) => string>;
}

/** The first key of the two-key advisory lock that serialises writers of one store key (see v2). */
export const KEY_LOCK_CLASS = 0x666c7772; // 'flwr'

/** The key's lock, as SQL over the three key columns (collisions only make two keys queue together). */
export const keyLock = (project: string, session: string, subpath: string): string =>
  `pg_advisory_xact_lock(${KEY_LOCK_CLASS}, hashtext(${project} || '/' || ${session} || '/' || ${subpath}))`;

/**
 * Sessions, version 1 (kept as it shipped: a database it created is migrated by version 2).
 * - `session_transcripts`: one row per store key (`subpath` '' = the main transcript) with the
 *   key's mtime, its next sequence number, the seq of its newest `cost-state` entry, and for main
 *   transcripts the folded summary (verbatim JSON text). Keeping the summary on the same row as the mtime
 *   makes "summary mtime = listSessions mtime" true by construction and costs one row update per
 *   append.
 * - `session_entries`: the entries as appended (JSON text, not jsonb: jsonb rejects `\u0000`, which
 *   tool output can hold, and the text is what was written), keyed by a small transcript id so the
 *   two indexes stay narrow.
 * - `session_append(...)`: the whole append in one statement and one round trip (see its comments).
 * Indexes serve the hot paths: load in seq order (entries primary key), a key's row (unique key),
 * the sessions of a project (partial index on main rows), subkeys (unique key prefix).
 */
const sessionsV1 = (s: string): string => `
CREATE TABLE ${s}.session_transcripts (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_key   text COLLATE "C" NOT NULL,
    session_id    text COLLATE "C" NOT NULL,
    subpath       text COLLATE "C" NOT NULL,
    mtime         bigint NOT NULL,
    next_seq      bigint NOT NULL,
    last_cost_seq bigint,
    summary       text,
    CONSTRAINT session_transcripts_key UNIQUE (project_key, session_id, subpath)
);
CREATE INDEX session_transcripts_main ON ${s}.session_transcripts (project_key) WHERE subpath = '';
CREATE TABLE ${s}.session_entries (
    transcript_id bigint NOT NULL,
    seq           bigint NOT NULL,
    uuid          text COLLATE "C",
    entry         text NOT NULL,
    PRIMARY KEY (transcript_id, seq)
);
CREATE UNIQUE INDEX session_entries_uuid ON ${s}.session_entries (transcript_id, uuid) WHERE uuid IS NOT NULL;

-- Appends one batch to one key. Entries arrive as JSONL (JSON.stringify never emits a raw newline,
-- so splitting on it is exact, and no array escaping is paid on either side) with their uuids in
-- the same order (NULL = no uuid) and the 1-based positions of the batch's cost-state entries. For
-- a main transcript the caller passes the summary folded from the state it last saw (p_expect: that
-- state's mtime, NULL = the key must be new); the row's WHERE clause is the compare-and-swap, so no
-- read-fold-write can interleave with another writer's. Raises FLW01 (stale summary) / FLW02 (known
-- entries in a main batch) / FLW03 (nothing new), which roll the whole statement back; the caller
-- then folds under a row lock (or, for FLW03, has nothing to do). Returns the new mtime.
CREATE FUNCTION ${s}.session_append(
    p_project text, p_session text, p_subpath text,
    p_uuids text[], p_entries text, p_cost_positions integer[],
    p_mtime bigint, p_summary text, p_expect bigint
) RETURNS bigint LANGUAGE plpgsql AS $append$
DECLARE
    v_count    bigint := cardinality(p_uuids);
    v_id       bigint;
    v_first    bigint;
    v_mtime    bigint;
    v_added    bigint;
    v_cost_seq bigint;
BEGIN
    -- Claim the key's row first: it serialises writers of one key, and its mtime only grows.
    IF p_summary IS NULL OR p_expect IS NOT NULL THEN
        UPDATE ${s}.session_transcripts
           SET mtime = GREATEST(p_mtime, mtime + 1),
               next_seq = next_seq + v_count,
               summary = COALESCE(p_summary, summary)
         WHERE project_key = p_project AND session_id = p_session AND subpath = p_subpath
           AND (p_summary IS NULL OR mtime = p_expect)
        RETURNING id, next_seq - v_count, mtime INTO v_id, v_first, v_mtime;
        IF NOT FOUND AND p_summary IS NOT NULL THEN
            RAISE EXCEPTION 'summary of %/% changed since it was folded', p_project, p_session
                USING ERRCODE = 'FLW01';
        END IF;
    END IF;
    IF v_id IS NULL THEN
        INSERT INTO ${s}.session_transcripts AS t
               (project_key, session_id, subpath, mtime, next_seq, summary)
        VALUES (p_project, p_session, p_subpath, p_mtime, v_count, p_summary)
        ON CONFLICT ON CONSTRAINT session_transcripts_key DO NOTHING
        RETURNING id, 0, mtime INTO v_id, v_first, v_mtime;
    END IF;
    IF v_id IS NULL THEN
        -- Someone else created the key a moment ago.
        IF p_summary IS NOT NULL THEN
            RAISE EXCEPTION '%/% exists already', p_project, p_session
                USING ERRCODE = 'FLW01';
        END IF;
        UPDATE ${s}.session_transcripts
           SET mtime = GREATEST(p_mtime, mtime + 1), next_seq = next_seq + v_count
         WHERE project_key = p_project AND session_id = p_session AND subpath = p_subpath
        RETURNING id, next_seq - v_count, mtime INTO STRICT v_id, v_first, v_mtime;
    END IF;

    WITH inserted AS (
        INSERT INTO ${s}.session_entries (transcript_id, seq, uuid, entry)
        SELECT v_id, v_first + batch.ord - 1, batch.uuid, batch.entry
          FROM unnest(p_uuids, string_to_array(p_entries, E'\\n')) WITH ORDINALITY AS batch(uuid, entry, ord)
        ON CONFLICT (transcript_id, uuid) WHERE uuid IS NOT NULL DO NOTHING
        RETURNING seq
    )
    SELECT count(*), max(seq) FILTER (WHERE seq - v_first + 1 = ANY(p_cost_positions))
      INTO v_added, v_cost_seq FROM inserted;
    IF v_added = 0 THEN
        RAISE EXCEPTION 'every entry is stored already' USING ERRCODE = 'FLW03';
    END IF;
    IF v_added < v_count AND p_summary IS NOT NULL THEN
        RAISE EXCEPTION '% of % entries are stored already', v_count - v_added, v_count
            USING ERRCODE = 'FLW02';
    END IF;
    -- A cost-state comes once a turn, so this second touch of the row is rare.
    IF v_cost_seq IS NOT NULL THEN
        UPDATE ${s}.session_transcripts SET last_cost_seq = v_cost_seq WHERE id = v_id;
    END IF;
    RETURN v_mtime;
END
$append$;
`;

/**
 * Sessions, version 2: an append inserts its entries and nothing else (batch 1 cost 0.74× a raw
 * insert while it also updated the key's row; BENCHMARKS.md). The key's row keeps what is derived
 * from the entries (mtime, summary, last cost seq) up to `folded_seq`; entries beyond it are
 * folded shortly after by the writer, or by any reader that finds them (session-store.ts).
 * - Seqs come from one sequence, `session_entry_seq`, drawn while the append holds a
 *   transaction-scoped advisory lock on its key: writers of one key still queue batch by batch, so
 *   a key's seqs are unique and grow in append order (with gaps, which order does not notice);
 *   delete takes the same lock. `next_seq` goes. The sequence starts above every stored seq.
 * - `folded_seq`: for a database written by version 1 everything stored is folded already.
 * - `session_append` loses the summary, compare-and-swap and cost arguments and the signals; it
 *   returns one array: the key's row id, then the seqs it stored, ascending (in batch order).
 */
const sessionsV2 = (s: string): string => `
ALTER TABLE ${s}.session_transcripts ADD COLUMN folded_seq bigint NOT NULL DEFAULT -1;
UPDATE ${s}.session_transcripts t
   SET folded_seq = COALESCE((SELECT max(e.seq) FROM ${s}.session_entries e WHERE e.transcript_id = t.id), -1);
ALTER TABLE ${s}.session_transcripts DROP COLUMN next_seq;
CREATE SEQUENCE ${s}.session_entry_seq AS bigint MINVALUE 0;
SELECT setval('${s}.session_entry_seq', (SELECT COALESCE(max(seq) + 1, 0) FROM ${s}.session_entries), false);
DROP FUNCTION ${s}.session_append(text, text, text, text[], text, integer[], bigint, text, bigint);

-- Appends one batch to one key: entries as JSONL (JSON.stringify never emits a raw newline, so
-- splitting on it is exact) with their uuids in the same order (NULL = no uuid). Known uuids are
-- skipped. A new key's row is created here, so a key with entries always has its row.
CREATE FUNCTION ${s}.session_append(
    p_project text, p_session text, p_subpath text, p_uuids text[], p_entries text, p_mtime bigint
) RETURNS bigint[] LANGUAGE plpgsql AS $append$
DECLARE
    v_id    bigint;
    v_seq   bigint;
    v_added bigint[];
BEGIN
    -- Writers of one key queue here until commit. Its own statement, so that the insert below
    -- takes its snapshot after the previous writer committed (read committed: one per statement);
    -- an IF rather than PERFORM: plpgsql evaluates it as a simple expression, without an executor.
    IF ${keyLock('p_project', 'p_session', 'p_subpath')} IS NULL THEN
        RETURN NULL;  -- never: the lock returns void, which is not NULL
    END IF;
    -- The common cases in one statement: the key's row is found and the batch inserted. One entry
    -- (eager mirroring) skips the unnest and the aggregate, a tenth of its cost (pgbench).
    IF cardinality(p_uuids) = 1 THEN
        INSERT INTO ${s}.session_entries (transcript_id, seq, uuid, entry)
        SELECT t.id, nextval('${s}.session_entry_seq'), p_uuids[1], p_entries
          FROM ${s}.session_transcripts t
         WHERE t.project_key = p_project AND t.session_id = p_session AND t.subpath = p_subpath
        ON CONFLICT (transcript_id, uuid) WHERE uuid IS NOT NULL DO NOTHING
        RETURNING transcript_id, seq INTO v_id, v_seq;
        IF v_id IS NOT NULL THEN
            RETURN ARRAY[v_id, v_seq];
        END IF;
    ELSE
        WITH inserted AS (
            INSERT INTO ${s}.session_entries (transcript_id, seq, uuid, entry)
            SELECT t.id, nextval('${s}.session_entry_seq'), batch.uuid, batch.entry
              FROM ${s}.session_transcripts t,
                   unnest(p_uuids, string_to_array(p_entries, E'\\n')) WITH ORDINALITY AS batch(uuid, entry, ord)
             WHERE t.project_key = p_project AND t.session_id = p_session AND t.subpath = p_subpath
             ORDER BY batch.ord
            ON CONFLICT (transcript_id, uuid) WHERE uuid IS NOT NULL DO NOTHING
            RETURNING transcript_id, seq
        )
        SELECT min(transcript_id), array_agg(seq ORDER BY seq) INTO v_id, v_added FROM inserted;
        IF v_id IS NOT NULL THEN
            RETURN v_id || v_added;
        END IF;
    END IF;
    -- Nothing inserted: every entry was known, or the key is new.
    SELECT id INTO v_id FROM ${s}.session_transcripts
     WHERE project_key = p_project AND session_id = p_session AND subpath = p_subpath;
    IF v_id IS NOT NULL THEN
        RETURN ARRAY[v_id];
    END IF;
    INSERT INTO ${s}.session_transcripts (project_key, session_id, subpath, mtime)
    VALUES (p_project, p_session, p_subpath, p_mtime)
    RETURNING id INTO v_id;
    WITH inserted AS (
        INSERT INTO ${s}.session_entries (transcript_id, seq, uuid, entry)
        SELECT v_id, nextval('${s}.session_entry_seq'), batch.uuid, batch.entry
          FROM unnest(p_uuids, string_to_array(p_entries, E'\\n')) WITH ORDINALITY AS batch(uuid, entry, ord)
         ORDER BY batch.ord
        RETURNING seq
    )
    SELECT array_agg(seq ORDER BY seq) INTO v_added FROM inserted;
    RETURN v_id || v_added;
END
$append$;
`;

export const SESSIONS: TableFamily = { name: 'sessions', migrations: [sessionsV1, sessionsV2] };

/** Every family this flower knows, in creation order. */
export const FAMILIES: readonly TableFamily[] = [SESSIONS, TASK_RECORDS, TOMBSTONES];

/** The task-records family (task-records.ts), named here beside the others. */
export const TASK_RECORDS_FAMILY: TableFamily = TASK_RECORDS;

const quoted = (schema: string): string => `"${schema}"`;

/** SQLSTATEs meaning "the schema or its version table is not there yet". */
const NOT_CREATED = new Set(['3F000', '42P01']);

/**
 * Brings `families` in `schema` up to date: a read when they are current, otherwise creation or
 * migration in one locked transaction. Throws pg's error (for the caller to explain) or a
 * `PostgresStoreError` for a schema written by a newer flower.
 * @internal Takes pg's pool: not in the published .d.ts (connection.ts says why).
 */
export async function ensureSchema(
  pool: Pool,
  schema: string,
  display: string,
  families: readonly TableFamily[] = FAMILIES,
): Promise<void> {
  try {
    const { rows } = await pool.query<{ family: string; version: number }>(
      `SELECT family, version FROM ${quoted(schema)}.schema_versions`,
    );
    const found = new Map(rows.map((row) => [row.family, row.version]));
    if (
      families.every((family) => checkVersion(family, found.get(family.name), schema, display) === 'current')
    )
      return;
  } catch (error) {
    if (!NOT_CREATED.has((error as { code?: string }).code ?? '')) throw error;
  }
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await migrate(client, schema, display, families);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

function checkVersion(
  family: TableFamily,
  version: number | undefined,
  schema: string,
  display: string,
): 'current' | 'behind' {
  const known = family.migrations.length;
  if (version !== undefined && version > known) {
    throw new PostgresStoreError(
      display,
      `PostgreSQL store ${display}: the "${family.name}" tables in schema "${schema}" are at version ${version}, newer than this flower knows (${known}): upgrade flower on this machine (a newer checkout or tarball, installed as the README's Set up says).`,
    );
  }
  return version === known ? 'current' : 'behind';
}

async function migrate(
  client: PoolClient,
  schema: string,
  display: string,
  families: readonly TableFamily[],
): Promise<void> {
  // Every creator of this schema queues here; the server drops the lock at commit or disconnect.
  await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`flower schema ${schema}`]);
  const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
  // Checked first: CREATE SCHEMA IF NOT EXISTS still needs CREATE on the database.
  if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${quoted(schema)}`);
  await client.query(`CREATE TABLE IF NOT EXISTS ${quoted(schema)}.schema_versions (
    family     text PRIMARY KEY,
    version    integer NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
  )`);
  const { rows } = await client.query<{ family: string; version: number }>(
    `SELECT family, version FROM ${quoted(schema)}.schema_versions`,
  );
  const found = new Map(rows.map((row) => [row.family, row.version]));
  for (const family of families) {
    const version = found.get(family.name) ?? 0;
    if (checkVersion(family, version, schema, display) === 'current') continue;
    for (const step of family.migrations.slice(version)) await client.query(step(quoted(schema)));
    await client.query(
      `INSERT INTO ${quoted(schema)}.schema_versions (family, version) VALUES ($1, $2)
       ON CONFLICT (family) DO UPDATE SET version = excluded.version, updated_at = now()`,
      [family.name, family.migrations.length],
    );
  }
}
