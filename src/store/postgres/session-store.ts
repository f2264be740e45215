/**
 * PostgresSessionStore: the SDK's `SessionStore` over PostgreSQL, for task state shared by several
 * processes and machines. A backend only: it keeps entries exactly as appended; rewriting what a
 * resume is fed (expire, trim, prune) is a layer that wraps any backend.
 *
 * Invariants (the same as the SQLite backend's, without file locks):
 * - Appends are idempotent by `uuid` per key (the SDK retries failed batches; imports replay): an
 *   entry whose uuid is stored, or repeated within the batch, is skipped; entries without a uuid
 *   are always appended. A batch of only known entries changes nothing: no seq, mtime or summary.
 * - Entries load in append order. Sequence numbers grow per key; a batch that skips known entries
 *   may leave gaps, which order does not notice.
 * - `mtime` is epoch milliseconds, strictly increasing per key across every process and machine
 *   (the server keeps it above the stored value even when clocks disagree) and per store instance.
 * - A main transcript's summary is folded with the SDK's `foldSessionSummary` (`data` kept
 *   verbatim) and written in the same statement as its entries, guarded by a compare-and-swap on
 *   the key's mtime; when another writer got there first, the batch is refolded under a row lock.
 *   The summary's mtime is the key's mtime (one column), so `listSessions` and
 *   `listSessionSummaries` always agree.
 * - Deleting a main key removes exactly that session (rows with the same project and session id,
 *   compared whole: deleting `s-1` leaves `s-10` alone), its subagent transcripts and its summary;
 *   a subpath removes only itself.
 * - Failures are whole: a batch that cannot be written leaves nothing behind, a transcript with an
 *   unreadable row is not returned at all, and every error is one line naming the server (password
 *   masked), the key and what to do.
 * - `lastCostState` finds the newest `cost-state` entry through a seq kept on append, never by
 *   reading the transcript; `readTranscript` reports damaged rows instead of failing the load
 *   (the optional fast paths of the rewriting layer's backend seam).
 */
import {
  foldSessionSummary,
  type SessionKey,
  type SessionStore,
  type SessionStoreEntry,
  type SessionSummaryEntry,
} from '@anthropic-ai/claude-agent-sdk';
import type pg from 'pg';
import { maskStoreUrl, type PostgresTarget, parseStoreTarget } from '../../config/store-url.js';
import type { StoredTranscript } from '../backend.js';
import { storeKeyOf } from '../session-key.js';
import { createPool, defaultPoolPolicy, type PostgresPoolPolicy } from './connection.js';
import { errorCode, PostgresStoreError, storeFailure } from './errors.js';
import { APPEND_SIGNALS, ensureSchema } from './schema.js';

export interface PostgresSessionStoreOptions {
  /** Pool sizing and timeouts; unset fields keep `defaultPoolPolicy`. */
  pool?: Partial<PostgresPoolPolicy>;
}

/** One batch, checked and serialised before anything is sent. */
interface Batch {
  entries: SessionStoreEntry[];
  uuids: Array<string | null>;
  payloads: string[];
}

/** How often the careful append retries when another process creates the same key meanwhile. */
const FOLD_ATTEMPTS = 3;

type Queryable = Pick<pg.Pool, 'query'> | Pick<pg.PoolClient, 'query'>;

export class PostgresSessionStore implements SessionStore {
  readonly target: PostgresTarget;
  /** Where the entries are kept, for messages: the URL with its password masked. */
  readonly location: string;
  /** The connection pool; the task records of the same database share it (task-records.ts). */
  readonly pool: pg.Pool;
  private readonly tables: { transcripts: string; entries: string; append: string };
  private ready: Promise<void> | undefined;
  private lastMtime = 0;
  /** The summary this instance last wrote or read per main key, with the mtime it belongs to. */
  private readonly summaries = new Map<string, SessionSummaryEntry>();

  /** Nothing connects yet: `open()` (or the first operation) does, and creates the schema if needed. */
  constructor(target: string | PostgresTarget, options: PostgresSessionStoreOptions = {}) {
    const parsed = typeof target === 'string' ? parseStoreTarget(target) : target;
    if (parsed.kind !== 'postgres') {
      throw new PostgresStoreError(
        parsed.path,
        `${parsed.path} is not a PostgreSQL URL: use postgres://user:password@host:5432/database.`,
      );
    }
    this.target = parsed;
    this.location = parsed.display;
    this.pool = createPool(parsed, { ...defaultPoolPolicy, ...options.pool });
    const schema = `"${parsed.schema}"`;
    this.tables = {
      transcripts: `${schema}.session_transcripts`,
      entries: `${schema}.session_entries`,
      append: `${schema}.session_append`,
    };
  }

  /** Connects and brings the schema up to date (once; a failed attempt is retried by the next call). */
  open(): Promise<void> {
    this.ready ??= ensureSchema(this.pool, this.target.schema, this.target.display).catch((error) => {
      this.ready = undefined;
      throw storeFailure(`open schema "${this.target.schema}"`, error, this.target);
    });
    return this.ready;
  }

  async append(key: SessionKey, entries: SessionStoreEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const storeKey = storeKeyOf(key);
    const batch = this.prepare(storeKey, entries);
    await this.open();
    const main = key.subpath === undefined;
    try {
      if (!main) {
        await this.appendBatch(this.pool, key, batch, undefined, null);
        return;
      }
      // Fast path: fold onto the summary this instance last saw and let the server check that it
      // is still the stored one. A brand-new session, or the next batch of one this process is
      // writing, takes one round trip.
      const seen = this.summaries.get(storeKey);
      const folded = foldSessionSummary(seen, key, batch.entries);
      const mtime = await this.appendBatch(this.pool, key, batch, folded, seen?.mtime ?? null);
      this.summaries.set(storeKey, { ...folded, mtime });
    } catch (error) {
      const code = errorCode(error);
      if (code === APPEND_SIGNALS.nothingNew) return;
      if (main && (code === APPEND_SIGNALS.staleSummary || code === APPEND_SIGNALS.knownEntries)) {
        await this.appendFolding(key, storeKey, batch).catch((failure) => {
          throw storeFailure(`append to ${storeKey}`, failure, this.target);
        });
        return;
      }
      throw storeFailure(`append to ${storeKey}`, error, this.target);
    }
  }

  /**
   * The careful path for a main transcript: lock the key's row, drop the entries already stored,
   * fold onto the stored summary, write, commit. Taken on the first append of a resumed session in
   * this process, after another writer's append, and for replays.
   */
  private async appendFolding(key: SessionKey, storeKey: string, batch: Batch): Promise<void> {
    const client = await this.pool.connect();
    let broken = false;
    try {
      for (let attempt = 1; ; attempt += 1) {
        await client.query('BEGIN');
        try {
          const { rows } = await client.query<{ id: string; mtime: string; summary: string | null }>(
            `SELECT id, mtime, summary FROM ${this.tables.transcripts}
              WHERE project_key = $1 AND session_id = $2 AND subpath = '' FOR UPDATE`,
            [key.projectKey, key.sessionId],
          );
          const row = rows[0];
          const fresh = row === undefined ? batch : await this.withoutStored(client, row.id, batch);
          const stored = row === undefined ? undefined : this.storedSummary(key, row);
          if (fresh.entries.length === 0) {
            await client.query('ROLLBACK');
            if (stored !== undefined) this.summaries.set(storeKey, stored);
            return;
          }
          const folded = foldSessionSummary(stored, key, fresh.entries);
          const mtime = await this.appendBatch(client, key, fresh, folded, row ? Number(row.mtime) : null);
          await client.query('COMMIT');
          this.summaries.set(storeKey, { ...folded, mtime });
          return;
        } catch (error) {
          await client.query('ROLLBACK').catch(() => {
            broken = true;
          });
          // Another process created this session between our look and our write: look again.
          if (!broken && errorCode(error) === APPEND_SIGNALS.staleSummary && attempt < FOLD_ATTEMPTS)
            continue;
          throw error;
        }
      }
    } finally {
      client.release(broken);
    }
  }

  private async withoutStored(client: pg.PoolClient, transcriptId: string, batch: Batch): Promise<Batch> {
    const uuids = batch.uuids.filter((uuid): uuid is string => uuid !== null);
    if (uuids.length === 0) return batch;
    const { rows } = await client.query<{ uuid: string }>(
      `SELECT uuid FROM ${this.tables.entries} WHERE transcript_id = $1 AND uuid = ANY($2::text[])`,
      [transcriptId, uuids],
    );
    if (rows.length === 0) return batch;
    const stored = new Set(rows.map((row) => row.uuid));
    const fresh: Batch = { entries: [], uuids: [], payloads: [] };
    batch.entries.forEach((entry, index) => {
      const uuid = batch.uuids[index] ?? null;
      if (uuid !== null && stored.has(uuid)) return;
      fresh.entries.push(entry);
      fresh.uuids.push(uuid);
      fresh.payloads.push(batch.payloads[index] as string);
    });
    return fresh;
  }

  /** One call of `session_append`; resolves to the key's new mtime. */
  private async appendBatch(
    db: Queryable,
    key: SessionKey,
    batch: Batch,
    summary: SessionSummaryEntry | undefined,
    expectedMtime: number | null,
  ): Promise<number> {
    this.lastMtime = Math.max(Date.now(), this.lastMtime + 1);
    const costPositions: number[] = [];
    batch.entries.forEach((entry, index) => {
      if (entry.type === 'cost-state') costPositions.push(index + 1);
    });
    const { rows } = await db.query<{ mtime: string }>(
      `SELECT ${this.tables.append}($1, $2, $3, $4::text[], $5, $6::integer[], $7, $8, $9) AS mtime`,
      [
        key.projectKey,
        key.sessionId,
        key.subpath ?? '',
        batch.uuids,
        batch.payloads.join('\n'),
        costPositions,
        this.lastMtime,
        summary === undefined ? null : JSON.stringify(summary.data),
        expectedMtime,
      ],
    );
    const mtime = Number(rows[0]?.mtime);
    this.lastMtime = Math.max(this.lastMtime, mtime);
    return mtime;
  }

  /**
   * The entries exactly as appended, in order; null when the key was never written. A transcript
   * with a row that is not a JSON object is not returned at all (`readTranscript` reports it).
   */
  async load(key: SessionKey): Promise<SessionStoreEntry[] | null> {
    const stored = await this.readTranscript(key);
    const [first] = stored?.unreadable ?? [];
    if (first !== undefined) throw this.unreadable(key, String(first.seq), stored?.unreadable.length ?? 1);
    return stored?.entries ?? null;
  }

  /** The transcript with its damaged rows reported (seq, uuid, position) rather than thrown. */
  async readTranscript(key: SessionKey): Promise<StoredTranscript | null> {
    const rows = await this.query<[string, string | null, string]>(`load ${storeKeyOf(key)}`, {
      text: `SELECT seq, uuid, entry FROM ${this.tables.entries}
                WHERE transcript_id = (SELECT id FROM ${this.tables.transcripts}
                                        WHERE project_key = $1 AND session_id = $2 AND subpath = $3)
                ORDER BY seq`,
      values: [key.projectKey, key.sessionId, key.subpath ?? ''],
      rowMode: 'array',
    });
    if (rows.length === 0) return null;
    // Each row is parsed afresh for this call: the rewriting layer may edit the entries in place.
    const transcript: StoredTranscript = { entries: [], unreadable: [], owned: true };
    for (const [seq, uuid, text] of rows) {
      const entry = parseObject(text);
      if (entry === undefined)
        transcript.unreadable.push({ seq: Number(seq), uuid, position: transcript.entries.length });
      else transcript.entries.push(entry as SessionStoreEntry);
    }
    return transcript;
  }

  /** The newest `cost-state` entry of the transcript (kept by seq on append); null when it has none. */
  async lastCostState(key: SessionKey): Promise<SessionStoreEntry | null> {
    const rows = await this.query<{ seq: string; entry: string }>(
      `read the last cost of ${storeKeyOf(key)}`,
      {
        text: `SELECT e.seq, e.entry FROM ${this.tables.transcripts} t
                 JOIN ${this.tables.entries} e ON e.transcript_id = t.id AND e.seq = t.last_cost_seq
                WHERE t.project_key = $1 AND t.session_id = $2 AND t.subpath = $3`,
        values: [key.projectKey, key.sessionId, key.subpath ?? ''],
      },
    );
    const row = rows[0];
    if (row === undefined) return null;
    const entry = parseObject(row.entry);
    if (entry === undefined) throw this.unreadable(key, row.seq, 1);
    return entry as SessionStoreEntry;
  }

  async listSessions(projectKey: string): Promise<Array<{ sessionId: string; mtime: number }>> {
    const rows = await this.query<{ session_id: string; mtime: string }>('list sessions', {
      text: `SELECT session_id, mtime FROM ${this.tables.transcripts} WHERE project_key = $1 AND subpath = ''`,
      values: [projectKey],
    });
    return rows.map((row) => ({ sessionId: row.session_id, mtime: Number(row.mtime) }));
  }

  async listSessionSummaries(projectKey: string): Promise<SessionSummaryEntry[]> {
    const rows = await this.query<{ session_id: string; mtime: string; summary: string }>('list summaries', {
      text: `SELECT session_id, mtime, summary FROM ${this.tables.transcripts}
              WHERE project_key = $1 AND subpath = '' AND summary IS NOT NULL`,
      values: [projectKey],
    });
    return rows.map((row) => this.storedSummary({ projectKey, sessionId: row.session_id }, row));
  }

  /**
   * How many entries each key of `projectKey` holds (main transcripts and subagents), without
   * sending them: what the shared store's reconcile compares (store/shared/session-sync.ts).
   */
  async entryCounts(
    projectKey: string,
  ): Promise<Array<{ sessionId: string; subpath: string; entries: number }>> {
    const rows = await this.query<{ session_id: string; subpath: string; entries: string }>('count entries', {
      text: `SELECT t.session_id, t.subpath,
                    (SELECT count(*) FROM ${this.tables.entries} e WHERE e.transcript_id = t.id) AS entries
               FROM ${this.tables.transcripts} t WHERE t.project_key = $1`,
      values: [projectKey],
    });
    return rows.map((row) => ({
      sessionId: row.session_id,
      subpath: row.subpath,
      entries: Number(row.entries),
    }));
  }

  /** A main key removes the session with all its subagent transcripts and its summary; a subpath only itself. */
  async delete(key: SessionKey): Promise<void> {
    const storeKey = storeKeyOf(key);
    await this.open();
    const client = await this.pool.connect().catch((error) => {
      throw storeFailure(`delete ${storeKey}`, error, this.target);
    });
    let broken = false;
    try {
      await client.query('BEGIN');
      // Two statements, not one: the entries are deleted with a snapshot taken after the
      // transcript rows are locked, so an append that committed while we waited is removed too.
      const { rows } = await client.query<{ id: string }>(
        `DELETE FROM ${this.tables.transcripts}
          WHERE project_key = $1 AND session_id = $2 AND ($3::text IS NULL OR subpath = $3)
          RETURNING id`,
        [key.projectKey, key.sessionId, key.subpath ?? null],
      );
      if (rows.length > 0) {
        await client.query(`DELETE FROM ${this.tables.entries} WHERE transcript_id = ANY($1::bigint[])`, [
          rows.map((row) => row.id),
        ]);
      }
      await client.query('COMMIT');
      if (key.subpath === undefined) this.summaries.delete(storeKey);
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw storeFailure(`delete ${storeKey}`, error, this.target);
    } finally {
      client.release(broken);
    }
  }

  async listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]> {
    const rows = await this.query<{ subpath: string }>('list subkeys', {
      text: `SELECT subpath FROM ${this.tables.transcripts}
              WHERE project_key = $1 AND session_id = $2 AND subpath <> ''`,
      values: [key.projectKey, key.sessionId],
    });
    return rows.map((row) => row.subpath);
  }

  /** Closes the pool; waits for queries in flight. */
  async close(): Promise<void> {
    if (!this.pool.ended) await this.pool.end();
  }

  private async query<Row>(action: string, query: pg.QueryConfig | pg.QueryArrayConfig): Promise<Row[]> {
    await this.open();
    try {
      return (await this.pool.query(query)).rows as Row[];
    } catch (error) {
      throw storeFailure(action, error, this.target);
    }
  }

  /** Checks and serialises a batch; drops repeats of a uuid within it (the first one counts). */
  private prepare(storeKey: string, entries: readonly SessionStoreEntry[]): Batch {
    const batch: Batch = { entries: [], uuids: [], payloads: [] };
    const seen = new Set<string>();
    entries.forEach((entry, index) => {
      const refuse = (why: string): never => {
        throw new PostgresStoreError(
          this.target.display,
          `Refusing to store entry ${index} of a batch for ${storeKey} in ${this.target.display}: ${why}. Nothing from this batch was written.`,
        );
      };
      if (typeof entry !== 'object' || entry === null || Array.isArray(entry))
        refuse('it is not a JSON object');
      const uuid = typeof entry.uuid === 'string' ? entry.uuid : null;
      if (uuid !== null) {
        if (seen.has(uuid)) return;
        seen.add(uuid);
      }
      let payload: string | undefined;
      try {
        payload = JSON.stringify(entry);
      } catch (error) {
        refuse(`it cannot be written as JSON (${error instanceof Error ? error.message : String(error)})`);
      }
      batch.entries.push(entry);
      batch.uuids.push(uuid);
      batch.payloads.push(payload as string);
    });
    return batch;
  }

  private storedSummary(
    key: SessionKey,
    row: { mtime: string; summary: string | null },
  ): SessionSummaryEntry {
    const data = row.summary === null ? {} : parseObject(row.summary);
    if (data === undefined) throw this.unreadable(key);
    return { sessionId: key.sessionId, mtime: Number(row.mtime), data };
  }

  /** A stored row that is not a JSON object: say which, and the query that shows it. */
  private unreadable(key: SessionKey, seq?: string, count = 1): PostgresStoreError {
    const literal = (text: string): string => `'${text.replaceAll("'", "''")}'`;
    const schema = this.target.schema;
    const row =
      `${schema}.session_transcripts WHERE project_key = ${literal(key.projectKey)}` +
      ` AND session_id = ${literal(key.sessionId)} AND subpath = ${literal(key.subpath ?? '')}`;
    const select =
      seq === undefined
        ? `SELECT summary FROM ${row}`
        : `SELECT seq, entry FROM ${schema}.session_entries WHERE transcript_id = (SELECT id FROM ${row}) AND seq >= ${seq} ORDER BY seq LIMIT ${count}`;
    const what =
      seq === undefined
        ? 'summary'
        : `entry with seq ${seq}${count > 1 ? ` (and ${count - 1} more row${count > 2 ? 's' : ''})` : ''}`;
    return new PostgresStoreError(
      this.target.display,
      `PostgreSQL store ${this.target.display}: the ${what} of ${storeKeyOf(key)} is not a JSON object, so ${seq === undefined ? 'it was not used and nothing was written over it' : 'none of the transcript was used (no half-read history is resumed)'}. Look at it with: psql "${maskStoreUrl(this.target.connectionString)}" -c "${select}"`,
    );
  }
}

function parseObject(text: string): Record<string, unknown> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
