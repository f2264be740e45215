/**
 * PostgresSessionStore: the SDK's `SessionStore` over PostgreSQL, for task state shared by several
 * processes and machines. A backend only: it keeps entries exactly as appended; rewriting what a
 * resume is fed (expire, trim, prune) is a layer that wraps any backend.
 *
 * Invariants (the same as the SQLite backend's, without file locks):
 * - Appends are idempotent by `uuid` per key (the SDK retries failed batches; imports replay): an
 *   entry whose uuid is stored, or repeated within the batch, is skipped; entries without a uuid
 *   are always appended. A batch of only known entries changes nothing: no seq, mtime or summary.
 * - Durability: `append` resolves only after its entries are committed (one statement,
 *   `session_append`), so an entry it acknowledged survives a crash of flower or the server.
 * - One entry per call costs about one insert (0.8× a raw INSERT or better; BENCHMARKS.md): an
 *   append inserts its entries and nothing else. The key's row (mtime, summary, newest cost seq)
 *   is brought up to date for everything appended meanwhile at most `FOLD_DELAY_MS` later, in one
 *   transaction per key under the row's lock ("the fold"); `listSessions`,
 *   `listSessionSummaries`, `load`/`readTranscript`, `lastCostState` and `close` fold this
 *   instance's appends first. A key's first append creates its row in the same statement, so a
 *   session with entries is always listed.
 * - Other processes' appends are never invisible to a listing either: a row whose `folded_seq`
 *   is behind its newest entry (another writer within its delay, or one that died before folding)
 *   is folded by the listing or cost lookup that finds it, from the stored entries in seq order.
 *   Only raw SQL on `session_transcripts` can see a row up to `FOLD_DELAY_MS` behind.
 * - Entries load in append order: seqs come from one sequence, drawn while the append holds its
 *   key's advisory lock (schema.ts), so writers of one key queue batch by batch and a key's seqs
 *   are unique and ascending in append order across processes; skipped entries leave gaps.
 * - `mtime` is epoch milliseconds, strictly increasing per key across every process and machine
 *   (each fold keeps it above the stored value even when clocks disagree) and per store instance.
 *   It moves with the fold, never backwards; a fold that finds nothing new leaves it alone.
 * - A main transcript's summary is folded with the SDK's `foldSessionSummary` (our copy of it,
 *   ../session-summary.ts, so that storing loads no SDK; `data` kept
 *   verbatim) onto the stored summary under the row's lock, over every unfolded entry in seq
 *   order (this instance's from memory, others' read back), so concurrent writers cannot lose each
 *   other's fields. The summary's mtime is the key's mtime (one column, written together), so
 *   `listSessions` and `listSessionSummaries` always agree.
 * - Deleting a main key removes exactly that session (rows with the same project and session id,
 *   compared whole: deleting `s-1` leaves `s-10` alone), its subagent transcripts and its summary;
 *   a subpath removes only itself.
 * - Failures are whole: a batch that cannot be written leaves nothing behind, a transcript with an
 *   unreadable row is not returned at all, a fold that fails is kept and retried by the next read
 *   (its entries are committed; if `close` cannot fold, the next listing does), and every error is
 *   one line naming the server (password masked), the key and what to do.
 * - Only keys a real session has are taken (`checkSessionKey`, the rule the SQLite backend
 *   shares): `subpath: ''` is the main transcript, and `listSubkeys` never hands out a subpath
 *   outside the rule (a row an older version stored under one stays out).
 * - `lastCostState` finds the newest `cost-state` entry through a seq kept by the fold, never by
 *   reading the transcript; `readTranscript` reports damaged rows instead of failing the load
 *   (the optional fast paths of the rewriting layer's backend seam).
 */
import type {
  SessionKey,
  SessionStore,
  SessionStoreEntry,
  SessionSummaryEntry,
} from '@anthropic-ai/claude-agent-sdk';
import type pg from 'pg';
import { maskStoreUrl, type PostgresTarget, parseStoreTarget } from '../../config/store-url.js';
import type { StoredTranscript, UnreadableRow } from '../backend.js';
import { COST_STATE_TYPE } from '../cost-state.js';
import { checkSessionKey, isStorableSubpath, type SessionKeyParts, storeKeyOf } from '../session-key.js';
// Not the SDK's: the same fold without loading the SDK's module (session-summary.ts says why).
import { foldSessionSummary } from '../session-summary.js';
import type { StoredRow } from '../stored-row.js';
import { createPool, defaultPoolPolicy, type PostgresPoolPolicy } from './connection.js';
import { PostgresStoreError, storeFailure } from './errors.js';
import { ensureSchema, keyLock } from './schema.js';
import type { Fence } from './task-lease.js';
import type { TaskName } from './task-records.js';

export interface PostgresSessionStoreOptions {
  /** Pool sizing and timeouts; unset fields keep `defaultPoolPolicy`. */
  pool?: Partial<PostgresPoolPolicy>;
}

/** What a fenced append did: stored in the transcript, or kept aside (`kept` entries new there). */
export type FencedAppend = { outcome: 'stored' } | { outcome: 'fenced'; kept: number };
const STORED: FencedAppend = { outcome: 'stored' };

/** One batch, checked and serialised before anything is sent. */
interface Batch {
  entries: SessionStoreEntry[];
  uuids: Array<string | null>;
  payloads: string[];
}

/**
 * How long the key's row (mtime, summary, cost seq) may trail its entries after an append made by
 * this instance. Long enough that a burst of entries (a turn's tool calls and results) shares one
 * update, short enough that another process's listing is current for all practical purposes (and
 * a listing folds whatever it finds unfolded anyway).
 */
export const FOLD_DELAY_MS = 50;

/** An entry this instance stored and has not folded into its key's row yet. */
interface Row {
  seq: number;
  entry: SessionStoreEntry;
}

interface Pending {
  key: SessionKey;
  rows: Row[];
  /** The mtime of the newest of those appends. */
  mtime: number;
}

export class PostgresSessionStore implements SessionStore {
  readonly target: PostgresTarget;
  /** Where the entries are kept, for messages: the URL with its password masked. */
  readonly location: string;
  /** The connection pool; the task records of the same database share it (task-records.ts).
   * @internal pg's type: not in the published .d.ts (connection.ts says why). */
  readonly pool: pg.Pool;
  private readonly tables: { transcripts: string; entries: string; append: string; appendFenced: string };
  private ready: Promise<void> | undefined;
  private lastMtime = 0;
  /** Stored, not yet folded entries per key row id (an id, not a key: a deleted and re-created key
   * gets a new row, which must not receive the old one's entries). */
  private pending = new Map<string, Pending>();
  private timer: NodeJS.Timeout | undefined;
  /** The fold in progress; folds of this instance run one at a time. */
  private folding: Promise<unknown> = Promise.resolve();

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
      appendFenced: `${schema}.session_append_fenced`,
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

  /** Resolves once the batch's new entries are committed; the key's row follows (see `flush`). */
  async append(key: SessionKey, entries: SessionStoreEntry[]): Promise<void> {
    await this.appendBehind(key, entries, undefined);
  }

  /**
   * `append` while `fence` owns `task` (task-lease.ts), checked in the same statement; a batch of
   * an owner that lost the task is kept in `fenced_entries` instead, never in the transcript
   * (another owner may be continuing that session), and the result says `fenced`.
   */
  appendFenced(
    key: SessionKey,
    entries: SessionStoreEntry[],
    task: TaskName,
    fence: Fence,
  ): Promise<FencedAppend> {
    return this.appendBehind(key, entries, { task, fence });
  }

  private async appendBehind(
    given: SessionKey,
    entries: SessionStoreEntry[],
    fenced: { task: TaskName; fence: Fence } | undefined,
  ): Promise<FencedAppend> {
    const key = this.checked(given, 'store entries under');
    if (entries.length === 0) return STORED;
    const storeKey = storeKeyOf(key);
    const batch = this.prepare(storeKey, entries);
    await this.open();
    const mtime = Math.max(Date.now(), this.lastMtime + 1);
    this.lastMtime = mtime;
    const values = [
      key.projectKey,
      key.sessionId,
      key.subpath ?? '',
      batch.uuids,
      batch.payloads.join('\n'),
      mtime,
    ];
    let result: Array<string | null>;
    try {
      const { rows } = await this.pool.query<[Array<string | null>]>(
        fenced === undefined
          ? { text: `SELECT ${this.tables.append}($1, $2, $3, $4::text[], $5, $6)`, values, rowMode: 'array' }
          : {
              text: `SELECT ${this.tables.appendFenced}($1, $2, $3, $4, $5, $6, $7, $8::text[], $9, $10)`,
              values: [
                fenced.task.workspace,
                fenced.task.runDir,
                fenced.fence.epoch,
                fenced.fence.instance,
                ...values,
              ],
              rowMode: 'array',
            },
      );
      // Stryker disable next-line OptionalChaining,ArrayDeclaration: a SELECT of a function returns one row, and neither function returns NULL (schema.ts, task-records.ts)
      result = rows[0]?.[0] ?? [];
    } catch (error) {
      throw storeFailure(`append to ${storeKey}`, error, this.target);
    }
    if (result[0] === null) return { outcome: 'fenced', kept: Number(result[1] ?? 0) };
    const [id, ...stored] = result as [string, ...string[]];
    // A batch of only known entries changes nothing, so there is nothing to fold.
    if (stored.length === 0) return STORED;
    // The seqs ascend in batch order, so when every entry was stored they pair up one by one;
    // after a partial replay the fold reads the stored ones back instead (rare).
    const rows: Row[] =
      stored.length === batch.entries.length
        ? batch.entries.map((entry, index) => ({ seq: Number(stored[index]), entry }))
        : // Stryker disable next-line ArrayDeclaration: a stand-in row without a seq matches no stored entry, so they are read back all the same
          [];
    const pending = this.pending.get(id);
    if (pending === undefined) this.pending.set(id, { key, rows, mtime });
    else {
      pending.rows.push(...rows);
      pending.mtime = mtime;
    }
    if (this.timer !== undefined) return STORED;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // The entries are committed; a failed fold is retried by the next read, close or listing.
      this.flush().catch(() => undefined);
    }, FOLD_DELAY_MS);
    this.timer.unref();
    return STORED;
  }

  /**
   * Folds everything this instance appended into the keys' rows (mtime, summary, cost seq) now.
   * Every read that shows them runs it first; `close` too.
   */
  flush(): Promise<void> {
    return this.exclusive(async () => {
      // Stryker disable next-line ConditionalExpression: an empty map folds nothing either (the `true` mutant, killed, is hidden too)
      if (this.pending.size === 0) return;
      const pending = this.pending;
      this.pending = new Map();
      let failure: unknown;
      for (const [id, each] of pending) {
        try {
          await this.fold(id, each.key, each);
        } catch (error) {
          failure ??= error;
          this.restore(id, each);
        }
      }
      if (failure !== undefined) throw storeFailure('update the sessions list', failure, this.target);
    });
  }

  /** Puts back entries whose fold failed, for the next attempt, before anything appended since. */
  private restore(id: string, failed: Pending): void {
    const later = this.pending.get(id);
    this.pending.set(id, later === undefined ? failed : { ...later, rows: [...failed.rows, ...later.rows] });
  }

  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.folding.then(work);
    this.folding = run.catch(() => undefined);
    return run;
  }

  /**
   * Brings one key's row up to date with every entry beyond its `folded_seq`, whoever wrote them
   * (the entries this instance knows are not sent back). Under the row's lock, so folds of one key
   * by several processes queue and each entry is folded once, in seq order, onto the stored
   * summary. A row that is gone (deleted) has nothing left to fold.
   */
  private async fold(id: string, key: SessionKey, own: Pending | undefined): Promise<void> {
    const client = await this.pool.connect();
    let broken = false;
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ mtime: string; summary: string | null; folded_seq: string }>(
        `SELECT mtime, summary, folded_seq FROM ${this.tables.transcripts} WHERE id = $1 FOR UPDATE`,
        [id],
      );
      const row = rows[0];
      if (row === undefined) {
        await client.query('COMMIT');
        return;
      }
      const known = new Map(own?.rows.map((each) => [each.seq, each.entry]));
      // Stryker disable next-line ArrayDeclaration: the server then sends those entries back too, and the ones in memory win anyway
      const knownSeqs = [...known.keys()];
      const found = (
        await client.query<[string, string | null]>({
          text: `SELECT seq, CASE WHEN seq = ANY($3::bigint[]) THEN NULL ELSE entry END
                   FROM ${this.tables.entries} WHERE transcript_id = $1 AND seq > $2 ORDER BY seq`,
          values: [id, row.folded_seq, knownSeqs],
          rowMode: 'array',
        })
      ).rows;
      if (found.length === 0) {
        await client.query('COMMIT');
        return;
      }
      const entries: SessionStoreEntry[] = [];
      let costSeq: string | null = null;
      let newest = row.folded_seq;
      for (const [seq, text] of found) {
        newest = seq;
        // Another writer's damaged row is left for `readTranscript` to report; it folds as nothing.
        // Stryker disable next-line ConditionalExpression: parseObject(null) is undefined too (the `true` mutant, killed, is hidden too)
        const entry = known.get(Number(seq)) ?? (text === null ? undefined : parseObject(text));
        if (entry === undefined) continue;
        entries.push(entry as SessionStoreEntry);
        if (entry.type === COST_STATE_TYPE) costSeq = seq;
      }
      const summary =
        key.subpath === undefined
          ? JSON.stringify(
              foldSessionSummary(
                // Stryker disable next-line ConditionalExpression: a summary of {} folds like none (the SDK starts from {}); the `true` mutant, killed, is hidden too
                row.summary === null ? undefined : this.storedSummary(key, row.mtime, row.summary),
                key,
                entries,
              ).data,
            )
          : null;
      const updated = await client.query<{ mtime: string }>(
        `UPDATE ${this.tables.transcripts}
            SET mtime = GREATEST($2, mtime + 1), summary = COALESCE($3, summary), folded_seq = $4,
                last_cost_seq = COALESCE($5, last_cost_seq)
          WHERE id = $1 RETURNING mtime`,
        [id, own?.mtime ?? Math.max(Date.now(), this.lastMtime + 1), summary, newest, costSeq],
      );
      await client.query('COMMIT');
      // Stryker disable next-line OptionalChaining: the row is locked by this transaction, so its UPDATE returns it
      this.lastMtime = Math.max(this.lastMtime, Number(updated.rows[0]?.mtime));
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw error;
    } finally {
      client.release(broken);
    }
  }

  /**
   * Folds rows that are behind their entries (another process's appends within its delay, or a
   * process that died before folding), so a listing reflects every committed append.
   */
  private async foldBehind(behind: ReadonlyArray<{ id: string; key: SessionKey }>): Promise<void> {
    await this.exclusive(async () => {
      for (const { id, key } of behind) {
        const own = this.pending.get(id);
        this.pending.delete(id);
        try {
          await this.fold(id, key, own);
        } catch (error) {
          if (own !== undefined) this.restore(id, own);
          throw error;
        }
      }
    }).catch((error) => {
      throw storeFailure('update the sessions list', error, this.target);
    });
  }

  /**
   * The entries exactly as appended, in order; null when the key was never written. A transcript
   * with a row that is not a JSON object is not returned at all (`readTranscript` reports it).
   */
  async load(given: SessionKey): Promise<SessionStoreEntry[] | null> {
    return (await this.loadRows(given))?.map((row) => row.entry) ?? null;
  }

  /** `load` with each entry's stored text beside it (stored-row.ts), for a copy into another backend. */
  async loadRows(given: SessionKey): Promise<StoredRow[] | null> {
    const key = this.checked(given, 'load');
    const stored = await this.readStored(key);
    if (stored === null) return null;
    const [first] = stored.unreadable;
    if (first !== undefined) throw this.unreadable(key, String(first.seq), stored.unreadable.length);
    return stored.rows;
  }

  /** The transcript with its damaged rows reported (seq, uuid, position) rather than thrown. */
  async readTranscript(given: SessionKey): Promise<StoredTranscript | null> {
    const stored = await this.readStored(this.checked(given, 'load'));
    if (stored === null) return null;
    return { entries: stored.rows.map((row) => row.entry), unreadable: stored.unreadable, owned: true };
  }

  private async readStored(
    key: SessionKey,
  ): Promise<{ rows: StoredRow[]; unreadable: UnreadableRow[] } | null> {
    await this.flush();
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
    const stored: { rows: StoredRow[]; unreadable: UnreadableRow[] } = { rows: [], unreadable: [] };
    for (const [seq, uuid, text] of rows) {
      const entry = parseObject(text);
      if (entry === undefined)
        stored.unreadable.push({ seq: Number(seq), uuid, position: stored.rows.length });
      else stored.rows.push({ entry: entry as SessionStoreEntry, text });
    }
    return stored;
  }

  /** The newest `cost-state` entry of the transcript (kept by seq on append); null when it has none. */
  async lastCostState(given: SessionKey): Promise<SessionStoreEntry | null> {
    const key = this.checked(given, 'read the cost of');
    await this.flush();
    const read = () =>
      this.query<{ id: string; seq: string | null; entry: string | null; behind: boolean }>(
        `read the last cost of ${storeKeyOf(key)}`,
        {
          text: `SELECT t.id, e.seq, e.entry, ${this.behind} AS behind FROM ${this.tables.transcripts} t
                   LEFT JOIN ${this.tables.entries} e ON e.transcript_id = t.id AND e.seq = t.last_cost_seq
                  WHERE t.project_key = $1 AND t.session_id = $2 AND t.subpath = $3`,
          values: [key.projectKey, key.sessionId, key.subpath ?? ''],
        },
      );
    let row = (await read())[0];
    if (row?.behind) {
      await this.foldBehind([{ id: row.id, key }]);
      row = (await read())[0];
    }
    // The entry is NOT NULL, so a joined entry has both (a LEFT JOIN that found none, neither).
    if (row?.entry == null) return null;
    const entry = parseObject(row.entry);
    if (entry === undefined) throw this.unreadable(key, String(row.seq), 1);
    return entry as SessionStoreEntry;
  }

  /** SQL: are there entries of row `t` beyond what its row has folded? (One probe of the primary key.) */
  private get behind(): string {
    return `EXISTS (SELECT 1 FROM ${this.tables.entries} b WHERE b.transcript_id = t.id AND b.seq > t.folded_seq)`;
  }

  /**
   * The main rows of a project, current: this instance's appends are folded first, and rows found
   * behind their entries (another writer's) are folded and read again.
   */
  private async mainRows(
    projectKey: string,
    action: string,
  ): Promise<Array<{ session_id: string; mtime: string; summary: string | null }>> {
    await this.flush();
    const read = () =>
      this.query<{ id: string; session_id: string; mtime: string; summary: string | null; behind: boolean }>(
        action,
        {
          text: `SELECT t.id, t.session_id, t.mtime, t.summary, ${this.behind} AS behind
                   FROM ${this.tables.transcripts} t WHERE t.project_key = $1 AND t.subpath = ''`,
          values: [projectKey],
        },
      );
    const rows = await read();
    // Stryker disable next-line MethodExpression: a fold of a row that is not behind finds nothing and changes nothing
    const behind = rows.filter((row) => row.behind);
    // Stryker disable next-line ConditionalExpression: folding no rows and reading again gives the same rows (the `true` mutant, killed, is hidden too)
    if (behind.length === 0) return rows;
    await this.foldBehind(
      behind.map((row) => ({ id: row.id, key: { projectKey, sessionId: row.session_id } })),
    );
    return read();
  }

  async listSessions(projectKey: string): Promise<Array<{ sessionId: string; mtime: number }>> {
    this.checked({ projectKey }, 'list the sessions of');
    const rows = await this.mainRows(projectKey, 'list sessions');
    return rows.map((row) => ({ sessionId: row.session_id, mtime: Number(row.mtime) }));
  }

  async listSessionSummaries(projectKey: string): Promise<SessionSummaryEntry[]> {
    this.checked({ projectKey }, 'list the summaries of');
    const rows = await this.mainRows(projectKey, 'list summaries');
    return rows.flatMap((row) =>
      row.summary === null
        ? []
        : [this.storedSummary({ projectKey, sessionId: row.session_id }, row.mtime, row.summary)],
    );
  }

  /**
   * How many entries each key of `projectKey` holds (main transcripts and subagents), without
   * sending them: what the shared store's reconcile compares (store/shared/session-sync.ts).
   */
  async entryCounts(
    projectKey: string,
  ): Promise<Array<{ sessionId: string; subpath: string; entries: number }>> {
    this.checked({ projectKey }, 'count the entries of');
    const rows = await this.query<{ session_id: string; subpath: string; entries: string }>('count entries', {
      text: `SELECT t.session_id, t.subpath,
                    (SELECT count(*) FROM ${this.tables.entries} e WHERE e.transcript_id = t.id) AS entries
               FROM ${this.tables.transcripts} t WHERE t.project_key = $1`,
      values: [projectKey],
    });
    // A key outside the rules (an older version's) is no transcript a reader could ask for.
    return rows
      .filter((row) => row.subpath === '' || isStorableSubpath(row.subpath))
      .map((row) => ({
        sessionId: row.session_id,
        subpath: row.subpath,
        entries: Number(row.entries),
      }));
  }

  /** A main key removes the session with all its subagent transcripts and its summary; a subpath only itself. */
  async delete(given: SessionKey): Promise<void> {
    const key = this.checked(given, 'delete');
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
      const { rows } = await client.query<{ id: string; subpath: string }>(
        `DELETE FROM ${this.tables.transcripts}
          WHERE project_key = $1 AND session_id = $2 AND ($3::text IS NULL OR subpath = $3)
          RETURNING id, subpath`,
        [key.projectKey, key.sessionId, key.subpath ?? null],
      );
      // Stryker disable next-line ConditionalExpression,EqualityOperator: with no rows it locks no key and deletes no entry (the `false` and `<=` mutants, killed, are hidden too)
      if (rows.length > 0) {
        // Wait for appends in flight to these keys (they hold the key's lock until they commit),
        // so the entries they add are deleted too.
        await client.query(
          `SELECT ${keyLock('$1::text', '$2::text', 'subpath')} FROM unnest($3::text[]) AS subpath`,
          [key.projectKey, key.sessionId, rows.map((row) => row.subpath)],
        );
        await client.query(`DELETE FROM ${this.tables.entries} WHERE transcript_id = ANY($1::bigint[])`, [
          rows.map((row) => row.id),
        ]);
      }
      await client.query('COMMIT');
      for (const row of rows) this.pending.delete(row.id);
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw storeFailure(`delete ${storeKey}`, error, this.target);
    } finally {
      client.release(broken);
    }
  }

  /** Only subpaths a real key has: a row an older version stored under another one stays out. */
  async listSubkeys(given: { projectKey: string; sessionId: string }): Promise<string[]> {
    const key = this.checked(given, 'list the subkeys of');
    const rows = await this.query<{ subpath: string }>('list subkeys', {
      text: `SELECT subpath FROM ${this.tables.transcripts}
              WHERE project_key = $1 AND session_id = $2 AND subpath <> ''`,
      values: [key.projectKey, key.sessionId],
    });
    return rows.map((row) => row.subpath).filter(isStorableSubpath);
  }

  /**
   * Folds what this instance appended, then closes the pool (waiting for queries in flight). A
   * fold that fails here loses nothing: the entries are committed and the next listing folds them.
   */
  async close(): Promise<void> {
    // Stryker disable next-line ConditionalExpression: closing again is harmless anyway (the pool keeps one end, the flush finds nothing pending or fails and is swallowed)
    if (this.pool.ended) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    // Stryker disable next-line ConditionalExpression: a store never opened has appended nothing, so its flush sends no query (the `false` mutant, killed, is hidden too)
    if (this.ready !== undefined) await this.flush().catch(() => undefined);
    await this.pool.end();
  }

  /** The key as stored (see `checkSessionKey`); a key no real session has is refused, naming it. */
  private checked<K extends SessionKeyParts>(key: K, action: string): K {
    const checked = checkSessionKey(key);
    if (typeof checked !== 'string') return checked;
    throw new PostgresStoreError(
      this.target.display,
      `PostgreSQL store ${this.target.display}: refusing to ${action} the session key ${JSON.stringify(key)}: ${checked}. Nothing was read or written.`,
    );
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

  private storedSummary(key: SessionKey, mtime: string, summary: string): SessionSummaryEntry {
    const data = parseObject(summary);
    if (data === undefined) throw this.unreadable(key);
    return { sessionId: key.sessionId, mtime: Number(mtime), data };
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
  // Stryker disable BlockStatement: an emptied catch leaves value undefined, which is no object either (a next-line disable does not reach a catch clause; the try block's mutant, killed, is hidden too)
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  // Stryker restore BlockStatement
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}
