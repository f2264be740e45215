/**
 * SqliteSessionStore: the embedded backend. Every transcript flower's agents write (main thread
 * and each subagent) is mirrored into one SQLite file (`runs/sessions.db`, see sqlite-database.ts)
 * through the SDK's `SessionStore` interface and read back on resume. It stores and finds entries
 * and nothing else: what a resume is fed (expire, trim, prune, spill files) is the rewriting
 * layer's business (rewriting-store.ts), which wraps this store or any other backend (backend.ts).
 *
 * Invariants:
 * - Stored rows are the entries exactly as appended; nothing ever rewrites them. Rows copied from
 *   another backend (`appendRows`) keep the text they came with (stored-row.ts).
 * - Durability: `append` resolves only after its rows are committed, so an entry it acknowledged
 *   is on disk (WAL with `synchronous = NORMAL`: it survives a crash or SIGKILL of flower and of
 *   the agent, not a power cut — the agent's own JSONL is the primary copy).
 * - One entry per call costs about one insert. The SDK mirrors entry by entry and awaits each
 *   call (`sessionStoreFlush: 'eager'`), so after a key's first append its rows are inserted in
 *   one statement each and the derived `meta` row and summary are brought up to date at most
 *   `SIDECAR_DELAY_MS` later, in one transaction for everything appended meanwhile; every read
 *   of them through this store, `sync()` and `close()` do it first, and opening the file finds
 *   and folds rows a crash left unfolded. A key's first append writes its `meta` row in the same
 *   transaction as its rows, so a session that has entries is always one `hasSession` finds.
 * - Appends are idempotent by `uuid` (the SDK retries failed batches, and imports replay): an
 *   entry whose uuid is stored, or repeated within the batch, is skipped; entries without a uuid
 *   are always appended. A batch of only known entries changes nothing: no seq, mtime or summary.
 * - Seqs count up from 0 per key in append order (taken from the primary key inside the insert,
 *   so concurrent writers cannot collide). `mtime` is epoch milliseconds, strictly increasing per
 *   key and per store instance; a session summary carries its key's mtime. The SDK compares it
 *   against local files to decide which copy is newer.
 * - A summary is folded with the SDK's `foldSessionSummary` (our copy of it, session-summary.ts,
 *   so that storing loads no SDK; `data` kept verbatim) inside the
 *   transaction that writes it, from the stored summary, so concurrent writers cannot interleave
 *   a read-fold-write; the row is written only when the fold changed it.
 * - The newest `cost-state` entry of a key is found without reading the transcript: `meta`
 *   records its seq as rows are folded (`cost_seq`), and rows whose type nobody recorded (not
 *   yet folded, or added by an older flower or the reference's tools) are searched from the end
 *   in SQL, and only those.
 * - Only keys a real session has are taken (`checkSessionKey`, the rule PostgreSQL's backend
 *   shares): no other key can join to the same `store_key`, `subpath: ''` is the main
 *   transcript, and `listSubkeys` never hands out a subpath outside the rule. Valid keys are
 *   stored as they always were, so older files read unchanged.
 * - Failures are whole: a batch that cannot be written leaves nothing behind, `load` of a
 *   transcript with an unreadable row returns nothing (one line names the key and the seq), and
 *   every error names the database file.
 */
import path from 'node:path';
import type {
  SessionKey,
  SessionStore,
  SessionStoreEntry,
  SessionSummaryEntry,
} from '@anthropic-ai/claude-agent-sdk';
import type Database from 'better-sqlite3';
import type { EntryCount, StoredTranscript, UnreadableRow } from './backend.js';
import { COST_STATE_TYPE } from './cost-state.js';
import { checkSessionKey, isStorableSubpath, type SessionKeyParts, storeKeyOf } from './session-key.js';
// Not the SDK's: the same fold without loading the SDK's module (session-summary.ts says why).
import { foldSessionSummary } from './session-summary.js';
import { COUNTS_IN_RANGE, keyCounts, openDatabase, prefixRange } from './sqlite-database.js';
import { stampCleanClose } from './sqlite-integrity.js';
import { rowText, type StoredRow } from './stored-row.js';
import { parseStoredEntry } from './transcript.js';

/**
 * How long `meta` and summaries may trail the rows after an append. Long enough that a burst of
 * entries (a turn's tool calls and results) shares one update, short enough that another
 * process listing sessions sees them current for all practical purposes.
 */
export const SIDECAR_DELAY_MS = 50;

export interface SqliteSessionStoreOptions {
  /** How long a write waits for another process holding the database before failing. */
  busyTimeoutMs?: number;
  /** Told once when a damaged database was found at open and set aside (see `sqlite-integrity.ts`). */
  onWarning?: (line: string) => void;
}

/** A database problem the user has to act on; the message names the file and what to do. */
export class SessionStoreError extends Error {
  readonly file: string;
  constructor(file: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SessionStoreError';
    this.file = file;
  }
}

type MetaRow = { mtime: number; next_seq: number; cost_seq: number | null; indexed_to: number };

function prepareStatements(db: Database.Database) {
  return {
    // One statement per appended entry: the seq comes from the primary key in the same step.
    // Parameters by position (the key twice), not by name: better-sqlite3 binds names through a
    // lookup per parameter, which cost a sixth of a raw insert's CPU per entry (measured).
    insert: db.prepare<[string, string, string | null, string], { seq: number }>(
      `INSERT INTO entries (store_key, seq, uid, payload)
         VALUES (?, (SELECT coalesce(max(seq), -1) + 1 FROM entries WHERE store_key = ?), ?, ?)
       ON CONFLICT (store_key, uid) WHERE uid IS NOT NULL DO NOTHING
       RETURNING seq`,
    ),
    insertAt: db.prepare<[string, number, string | null, string]>(
      'INSERT INTO entries (store_key, seq, uid, payload) VALUES (?, ?, ?, ?) ON CONFLICT (store_key, uid) WHERE uid IS NOT NULL DO NOTHING',
    ),
    meta: db.prepare<[string], MetaRow>(
      'SELECT mtime, next_seq, cost_seq, indexed_to FROM meta WHERE store_key = ?',
    ),
    lastSeq: db.prepare<[string], number | null>('SELECT max(seq) FROM entries WHERE store_key = ?').pluck(),
    upsertMeta: db.prepare<[string, number, number, number | null, number]>(
      'INSERT INTO meta (store_key, mtime, next_seq, cost_seq, indexed_to) VALUES (?, ?, ?, ?, ?) ON CONFLICT (store_key) DO UPDATE SET mtime = excluded.mtime, next_seq = excluded.next_seq, cost_seq = excluded.cost_seq, indexed_to = excluded.indexed_to',
    ),
    // Keys whose rows run past what `meta` folded (a crash before the fold was written).
    behind: db.prepare<[], { store_key: string; next_seq: number }>(
      `SELECT store_key, next_seq FROM meta
        WHERE (SELECT max(seq) FROM entries WHERE entries.store_key = meta.store_key) >= next_seq`,
    ),
    summary: db
      .prepare<[string, string], string>(
        'SELECT data FROM summaries WHERE project_key = ? AND session_id = ?',
      )
      .pluck(),
    upsertSummary: db.prepare<[string, string, number, string]>(
      'INSERT INTO summaries (project_key, session_id, mtime, data) VALUES (?, ?, ?, ?) ON CONFLICT (project_key, session_id) DO UPDATE SET mtime = excluded.mtime, data = excluded.data',
    ),
    payloads: db
      .prepare<[string], string>('SELECT payload FROM entries WHERE store_key = ? ORDER BY seq')
      .pluck(),
    rowsFrom: db.prepare<[string, number], { seq: number; payload: string }>(
      'SELECT seq, payload FROM entries WHERE store_key = ? AND seq >= ? ORDER BY seq',
    ),
    rowsBelow: db.prepare<[string, number, number], { seq: number; payload: string }>(
      'SELECT seq, payload FROM entries WHERE store_key = ? AND seq < ? ORDER BY seq LIMIT ?',
    ),
    rowAt: db.prepare<[string, number], { seq: number; uid: string | null }>(
      'SELECT seq, uid FROM entries WHERE store_key = ? ORDER BY seq LIMIT 1 OFFSET ?',
    ),
    payloadAt: db
      .prepare<[string, number], string>('SELECT payload FROM entries WHERE store_key = ? AND seq = ?')
      .pluck(),
    newestPayloads: db
      .prepare<[string, number], string>(
        'SELECT payload FROM entries WHERE store_key = ? ORDER BY seq DESC LIMIT ?',
      )
      .pluck(),
    // For rows whose type nobody recorded: newest first, stopping at the first match.
    newestCostSeq: db
      .prepare<[string, number], number>(
        `SELECT seq FROM entries WHERE store_key = ? AND seq >= ?
           AND instr(payload, '"${COST_STATE_TYPE}"') > 0 AND json_valid(payload)
           AND json_extract(payload, '$.type') = '${COST_STATE_TYPE}'
         ORDER BY seq DESC LIMIT 1`,
      )
      .pluck(),
    keysInRange: db.prepare<[string, string], { store_key: string; mtime: number }>(
      'SELECT store_key, mtime FROM meta WHERE store_key >= ? AND store_key < ?',
    ),
    summaries: db.prepare<[string], { session_id: string; mtime: number; data: string }>(
      `SELECT s.session_id, coalesce(m.mtime, s.mtime) AS mtime, s.data FROM summaries s
         LEFT JOIN meta m ON m.store_key = s.project_key || '/' || s.session_id
       WHERE s.project_key = ?`,
    ),
    deleteEntries: db.prepare<[string]>('DELETE FROM entries WHERE store_key = ?'),
    deleteMeta: db.prepare<[string]>('DELETE FROM meta WHERE store_key = ?'),
    deleteEntriesInRange: db.prepare<[string, string]>(
      'DELETE FROM entries WHERE store_key >= ? AND store_key < ?',
    ),
    deleteMetaInRange: db.prepare<[string, string]>(
      'DELETE FROM meta WHERE store_key >= ? AND store_key < ?',
    ),
    deleteSummary: db.prepare<[string, string]>(
      'DELETE FROM summaries WHERE project_key = ? AND session_id = ?',
    ),
    hasKey: db.prepare<[string], number>('SELECT 1 FROM meta WHERE store_key = ?').pluck(),
    countsInRange: db.prepare<[string, string], { store_key: string; entries: number }>(COUNTS_IN_RANGE),
    projects: db
      .prepare<[], string>(
        "SELECT DISTINCT substr(store_key, 1, instr(store_key, '/') - 1) AS project FROM meta ORDER BY project",
      )
      .pluck(),
  };
}

type Statements = ReturnType<typeof prepareStatements>;

/** A stored row with its entry. */
interface Row {
  seq: number;
  entry: SessionStoreEntry;
}

/** Rows appended through this store that `meta` and the summary have not folded yet. */
interface Pending {
  key: SessionKey;
  rows: Row[];
}

export class SqliteSessionStore implements Required<SessionStore> {
  readonly path: string;
  private readonly db: Database.Database;
  private lastMtime = 0;
  private readonly statements: Statements;
  /** Keys known to have a `meta` row, whose appends take the one-statement path. */
  private readonly established = new Set<string>();
  private readonly pending = new Map<string, Pending>();
  private timer: NodeJS.Timeout | undefined;
  private readonly insertBatch: Database.Transaction<
    (storeKey: string, entries: readonly SessionStoreEntry[], payloads: string[]) => Row[]
  >;
  private readonly firstAppend: Database.Transaction<
    (key: SessionKey, storeKey: string, entries: readonly SessionStoreEntry[], payloads: string[]) => void
  >;
  private readonly foldPending: Database.Transaction<(pending: Pending[]) => void>;

  constructor(file: string, options: SqliteSessionStoreOptions = {}) {
    this.path = path.resolve(file);
    this.db = this.guard('open', () => openDatabase(this.path, options));
    this.statements = prepareStatements(this.db);
    this.insertBatch = this.db.transaction((storeKey, entries, payloads) =>
      this.insertBatchRows(storeKey, entries, payloads),
    );
    this.firstAppend = this.db.transaction((key, storeKey, entries, payloads) => {
      const rows = this.insertBatchRows(storeKey, entries, payloads);
      if (rows.length > 0) this.fold(key, storeKey, rows);
    });
    this.foldPending = this.db.transaction((pending) => {
      for (const { key, rows } of pending) this.fold(key, storeKeyOf(key), rows);
    });
    this.foldLeftovers();
  }

  /** Where the entries are kept, for messages. */
  get location(): string {
    return this.path;
  }

  async append(key: SessionKey, entries: SessionStoreEntry[]): Promise<void> {
    this.appendNow(key, entries);
  }

  /** Synchronous body of `append` (the SDK's interface is async; SQLite here is not). */
  appendNow(given: SessionKey, entries: readonly SessionStoreEntry[]): void {
    this.write(given, entries, (entry) => JSON.stringify(entry));
  }

  /** `append` of rows whose text, when given, is stored as it is (stored-row.ts). */
  async appendRows(given: SessionKey, rows: readonly StoredRow[]): Promise<void> {
    this.write(
      given,
      rows.map((row) => row.entry),
      (_, index) => rowText(rows[index] as StoredRow),
    );
  }

  /** Stores `entries`, each as the text `textOf` gives for it. */
  private write(
    given: SessionKey,
    entries: readonly SessionStoreEntry[],
    textOf: (entry: SessionStoreEntry, index: number) => string,
  ): void {
    const key = this.checked(given, 'store entries under');
    if (entries.length === 0) return;
    const storeKey = storeKeyOf(key);
    // Serialise before touching the database: a bad entry must fail the batch, not half of it.
    const payloads = entries.map((entry, index) => {
      if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
        throw new SessionStoreError(
          this.path,
          `Refusing to store entry ${index} of a batch for ${storeKey} in ${this.path}: it is not a JSON object. Nothing from this batch was written.`,
        );
      }
      return textOf(entry, index);
    });
    this.guard(`append to ${storeKey}`, () => {
      if (!this.established.has(storeKey)) {
        if (this.statements.hasKey.get(storeKey) !== 1) {
          this.firstAppend.immediate(key, storeKey, entries, payloads);
          this.established.add(storeKey);
          return;
        }
        this.established.add(storeKey);
      }
      const rows =
        entries.length === 1
          ? this.insertRows(storeKey, entries, payloads)
          : this.insertBatch.immediate(storeKey, entries, payloads);
      if (rows.length > 0) this.defer(key, storeKey, rows);
    });
  }

  /**
   * Bring `meta` and the summaries up to date with everything appended through this store.
   * Every read of them and `close` do it; call it before reading the file by other means.
   */
  sync(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.size === 0) return;
    const pending = [...this.pending.values()];
    this.guard('update the session index', () => this.foldPending.immediate(pending));
    this.pending.clear();
  }

  /** One entry, in one statement that takes its seq from the primary key (no transaction needed). */
  private insertRows(storeKey: string, entries: readonly SessionStoreEntry[], payloads: string[]): Row[] {
    const entry = entries[0] as SessionStoreEntry;
    const uid = typeof entry.uuid === 'string' ? entry.uuid : null;
    // `all`, never `get`: with RETURNING the row comes back from the first step, and the implicit
    // transaction commits only when the statement is stepped to its end; `get` stops early and
    // better-sqlite3's reset swallows the commit's SQLITE_FULL, so on a full disk every append
    // "succeeded" and none was stored (measured: 50 acknowledged, 0 in the file).
    const [inserted] = this.statements.insert.all(storeKey, storeKey, uid, payloads[0] as string);
    return inserted === undefined ? [] : [{ seq: inserted.seq, entry }];
  }

  /** A batch, inside a write transaction: the next seq is read once and counted up. */
  private insertBatchRows(
    storeKey: string,
    entries: readonly SessionStoreEntry[],
    payloads: string[],
  ): Row[] {
    const rows: Row[] = [];
    let seq = (this.statements.lastSeq.get(storeKey) ?? -1) + 1;
    for (let index = 0; index < entries.length; index += 1) {
      const entry = entries[index] as SessionStoreEntry;
      const uid = typeof entry.uuid === 'string' ? entry.uuid : null;
      if (this.statements.insertAt.run(storeKey, seq, uid, payloads[index] as string).changes === 0) continue;
      rows.push({ seq, entry });
      seq += 1;
    }
    return rows;
  }

  private defer(key: SessionKey, storeKey: string, rows: Row[]): void {
    const pending = this.pending.get(storeKey);
    if (pending === undefined) this.pending.set(storeKey, { key, rows });
    else pending.rows.push(...rows);
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      try {
        this.sync();
      } catch {
        // The rows are committed; the index waits for the next read, close or open.
      }
    }, SIDECAR_DELAY_MS);
    this.timer.unref();
  }

  /**
   * Fold rows into the key's `meta` row and (for a main transcript) its summary. Runs inside a
   * write transaction; `rows` are rows of this key at or beyond `meta.next_seq`, in seq order.
   */
  private fold(key: SessionKey, storeKey: string, rows: readonly Row[]): void {
    const { statements } = this;
    const meta = statements.meta.get(storeKey);
    const last = statements.lastSeq.get(storeKey);
    // Another store deleted the key since these rows were appended: nothing is left to index, and
    // a meta row or summary written now would bring back a session that has no entries.
    if (last == null) return;
    const folded = meta?.next_seq ?? 0;
    const nextSeq = last + 1;
    let costSeq = meta?.cost_seq ?? null;
    for (const { seq, entry } of rows)
      if (entry.type === COST_STATE_TYPE) costSeq = Math.max(costSeq ?? seq, seq);
    // Every row from the mark to the end was looked at: the record of looked-at rows may advance.
    const indexedTo = meta?.indexed_to ?? 0;
    const complete = indexedTo === folded && rows.length === nextSeq - folded;
    const mtime = this.nextMtime(meta?.mtime ?? 0);
    statements.upsertMeta.run(storeKey, mtime, nextSeq, costSeq, complete ? nextSeq : indexedTo);
    if (key.subpath !== undefined) return;
    const stored = statements.summary.get(key.projectKey, key.sessionId);
    const previous = stored === undefined ? undefined : (JSON.parse(stored) as Record<string, unknown>);
    const summary = foldSessionSummary(
      // Stryker disable next-line ConditionalExpression: the SDK folds a previous summary without data as it folds none (data {}, this key's sessionId, the given mtime)
      previous === undefined ? undefined : { sessionId: key.sessionId, mtime, data: previous },
      key,
      rows.map((row) => row.entry),
      // Stryker disable next-line ObjectLiteral: only the fold's data is kept, and the SDK derives no part of it from the mtime
      { mtime },
    );
    const json = JSON.stringify(summary.data);
    if (json !== stored) statements.upsertSummary.run(key.projectKey, key.sessionId, mtime, json);
  }

  /** Fold rows a crash left behind (appended, acknowledged, not yet in `meta`); best effort. */
  private foldLeftovers(): void {
    try {
      const behind = this.statements.behind.all();
      if (behind.length === 0) return;
      this.db
        .transaction(() => {
          for (const { store_key: storeKey, next_seq: from } of behind) {
            const rows = this.statements.rowsFrom.all(storeKey, from).flatMap((row) => {
              const entry = parseStoredEntry(row.payload);
              return entry === undefined ? [] : [{ seq: row.seq, entry }];
            });
            this.fold(keyOf(storeKey), storeKey, rows);
          }
        })
        .immediate();
    } catch {
      // A read-only file or a busy writer: reads still work, and the next open tries again.
    }
  }

  /** Epoch ms, strictly after both this instance's last stamp and the key's stored one. */
  private nextMtime(stored: number): number {
    this.lastMtime = Math.max(Date.now(), this.lastMtime + 1, stored + 1);
    return this.lastMtime;
  }

  /** The transcript for resume: stored entries in append order. Null when the key was never written. */
  async load(key: SessionKey): Promise<SessionStoreEntry[] | null> {
    return this.loadRaw(key);
  }

  /** The entries exactly as appended, or null when the key was never written; throws on a damaged row. */
  loadRaw(given: SessionKey): SessionStoreEntry[] | null {
    const key = this.checked(given, 'load');
    const stored = this.readTranscriptNow(key);
    if (stored === null) return null;
    const [damaged] = stored.unreadable;
    if (damaged !== undefined) throw this.unreadableRowError(storeKeyOf(key), damaged);
    return stored.entries;
  }

  /** The transcript with rows that are not JSON objects reported instead of thrown. */
  async readTranscript(key: SessionKey): Promise<StoredTranscript | null> {
    return this.readTranscriptNow(key);
  }

  readTranscriptNow(given: SessionKey): StoredTranscript | null {
    const stored = this.readStored(this.checked(given, 'load'), (entry) => entry);
    return stored === null ? null : { entries: stored.items, unreadable: stored.unreadable, owned: true };
  }

  /** `load` with each entry's stored text (stored-row.ts); throws on a damaged row, as `loadRaw` does. */
  async loadRows(given: SessionKey): Promise<StoredRow[] | null> {
    const key = this.checked(given, 'load');
    const stored = this.readStored(key, (entry, text): StoredRow => ({ entry, text }));
    if (stored === null) return null;
    const [damaged] = stored.unreadable;
    if (damaged !== undefined) throw this.unreadableRowError(storeKeyOf(key), damaged);
    return stored.items;
  }

  /** The key's readable rows in append order, each made by `make`, and the rows that are not. */
  private readStored<Item>(
    key: SessionKey,
    make: (entry: SessionStoreEntry, text: string) => Item,
  ): { items: Item[]; unreadable: UnreadableRow[] } | null {
    const storeKey = storeKeyOf(key);
    const items: Item[] = [];
    const damaged: { index: number; position: number }[] = [];
    let index = 0;
    // Row by row, not `.all()`: each text is garbage as soon as it is parsed, so the texts never
    // reach the old generation (with them all held, a later load's peak ran into a mark-compact).
    this.guard(`load ${storeKey}`, () => {
      for (const text of this.statements.payloads.iterate(storeKey)) {
        const entry = parseStoredEntry(text);
        if (entry === undefined) damaged.push({ index, position: items.length });
        else items.push(make(entry, text));
        index += 1;
      }
    });
    if (index === 0) return null;
    // After the read: the connection is busy while it iterates.
    const unreadable = damaged.map(({ index: at, position }): UnreadableRow => {
      const row = this.guard(`load ${storeKey}`, () => this.statements.rowAt.get(storeKey, at));
      return { seq: row?.seq ?? at, uuid: row?.uid ?? null, position };
    });
    return { items, unreadable };
  }

  /** The newest `cost-state` entry of `key`, found from the end (see the module header). */
  async lastCostState(key: SessionKey): Promise<SessionStoreEntry | null> {
    return this.lastCostStateNow(key);
  }

  lastCostStateNow(given: SessionKey): SessionStoreEntry | null {
    const storeKey = storeKeyOf(this.checked(given, 'read the cost of'));
    this.sync();
    return this.guard(`read the cost of ${storeKey}`, () => {
      const meta = this.statements.meta.get(storeKey);
      if (meta === undefined) return null;
      let seq = meta.cost_seq;
      // Rows past the record (another writer's) are searched, newest first; past the last row
      // the search is one index probe that finds nothing.
      // Stryker disable next-line ArithmeticOperator: from cost_seq - 1 the search also meets the recorded cost_seq row, a cost-state, so it returns the same newest seq
      const from = Math.max(meta.indexed_to, (seq ?? -1) + 1);
      seq = this.statements.newestCostSeq.get(storeKey, from) ?? seq;
      // Stryker disable next-line ConditionalExpression: a NULL seq matches no row, so the payload is undefined and the answer null all the same
      if (seq === null) return null;
      const payload = this.statements.payloadAt.get(storeKey, seq);
      // Stryker disable next-line ConditionalExpression: parseStoredEntry(undefined) fails JSON.parse and gives undefined as well
      const entry = payload === undefined ? undefined : parseStoredEntry(payload);
      return entry?.type === COST_STATE_TYPE ? entry : null;
    });
  }

  async listSessions(projectKey: string): Promise<Array<{ sessionId: string; mtime: number }>> {
    this.checked({ projectKey }, 'list the sessions of');
    this.sync();
    const prefix = `${projectKey}/`;
    return this.guard('list sessions', () => this.statements.keysInRange.all(...prefixRange(prefix)))
      .map((row) => ({ sessionId: row.store_key.slice(prefix.length), mtime: row.mtime }))
      .filter((row) => !row.sessionId.includes('/'));
  }

  async listSessionSummaries(projectKey: string): Promise<SessionSummaryEntry[]> {
    this.checked({ projectKey }, 'list the summaries of');
    this.sync();
    return this.guard('list summaries', () => this.statements.summaries.all(projectKey)).map((row) => ({
      sessionId: row.session_id,
      mtime: row.mtime,
      data: JSON.parse(row.data),
    }));
  }

  /** A main key removes the session with all its subagent transcripts and its summary; a subpath only itself. */
  async delete(given: SessionKey): Promise<void> {
    const key = this.checked(given, 'delete');
    this.sync();
    const storeKey = storeKeyOf(key);
    const { deleteEntries, deleteMeta, deleteEntriesInRange, deleteMetaInRange, deleteSummary } =
      this.statements;
    const remove = this.db.transaction(() => {
      deleteEntries.run(storeKey);
      deleteMeta.run(storeKey);
      if (key.subpath !== undefined) return;
      // The trailing '/' keeps session `s-1` from taking `s-10` with it.
      const range = prefixRange(`${storeKey}/`);
      deleteEntriesInRange.run(...range);
      deleteMetaInRange.run(...range);
      deleteSummary.run(key.projectKey, key.sessionId);
    });
    this.guard(`delete ${storeKey}`, () => remove.immediate());
    this.established.clear();
  }

  /** Only subpaths a real key has: a row an older version stored under another one stays out. */
  async listSubkeys(given: { projectKey: string; sessionId: string }): Promise<string[]> {
    const key = this.checked(given, 'list the subkeys of');
    this.sync();
    const prefix = `${key.projectKey}/${key.sessionId}/`;
    return this.guard('list subkeys', () => this.statements.keysInRange.all(...prefixRange(prefix)))
      .map((row) => row.store_key.slice(prefix.length))
      .filter(isStorableSubpath);
  }

  /**
   * How many entries each key of `projectKey` holds (main transcripts and subagents), without
   * reading them: what the shared store's reconcile compares (store/shared/session-sync.ts).
   */
  entryCounts(projectKey: string): EntryCount[] {
    this.checked({ projectKey }, 'count the entries of');
    this.sync();
    const rows = this.guard('count entries', () =>
      this.statements.countsInRange.all(...prefixRange(`${projectKey}/`)),
    );
    return keyCounts(projectKey, rows);
  }

  /**
   * The next seq of each key of a session ('' for the main transcript): where each stood, so that
   * a step's books later read only what came after (runtime/books/step-transcripts.ts). One
   * index lookup per key, no entry read.
   */
  nextSeqs(projectKey: string, sessionId: string): Map<string, number> {
    const key = this.checked({ projectKey, sessionId }, 'mark the transcripts of');
    const main = `${key.projectKey}/${key.sessionId}`;
    return this.guard(`mark ${main}`, () => {
      const subkeys = this.statements.keysInRange.all(...prefixRange(`${main}/`));
      const marks = new Map<string, number>();
      for (const storeKey of [main, ...subkeys.map((row) => row.store_key)]) {
        const last = this.statements.lastSeq.get(storeKey);
        if (last != null) marks.set(storeKey.slice(main.length + 1), last + 1);
      }
      return marks;
    });
  }

  /**
   * The entries of `key` from seq `from` on, after its first `head` entries below `from` (the
   * books of a step: what it appended, and a worker's account of itself at its start). Null when
   * the key holds nothing; throws on a damaged row, as `loadRaw` does.
   */
  entriesFrom(given: SessionKey, from: number, head = 0): SessionStoreEntry[] | null {
    const storeKey = storeKeyOf(this.checked(given, 'load'));
    return this.guard(`load ${storeKey}`, () => {
      if (this.statements.lastSeq.get(storeKey) == null) return null;
      const rows = [
        // Stryker disable next-line EqualityOperator: at head 0 the query's LIMIT 0 returns no row, as skipping it does (this also hides the line's head <= 0 mutant)
        ...(head > 0 ? this.statements.rowsBelow.all(storeKey, from, head) : []),
        ...this.statements.rowsFrom.all(storeKey, from),
      ];
      return rows.map((row, position) => {
        const entry = parseStoredEntry(row.payload);
        if (entry === undefined)
          throw this.unreadableRowError(storeKey, { seq: row.seq, uuid: null, position });
        return entry;
      });
    });
  }

  /** Whether a main transcript exists for this session. */
  hasSession(projectKey: string, sessionId: string): boolean {
    this.checked({ projectKey, sessionId }, 'look up');
    return (
      this.guard('look up a session', () => this.statements.hasKey.get(`${projectKey}/${sessionId}`)) === 1
    );
  }

  /**
   * The main thread's context size at its latest turn that reported one: input + cache read +
   * cache creation tokens of the newest entry (among the last `scan`) with a non-zero total.
   */
  lastContext(projectKey: string, sessionId: string, scan = 60): number {
    this.checked({ projectKey, sessionId }, 'read the context of');
    const storeKey = `${projectKey}/${sessionId}`;
    const payloads = this.guard(`read ${storeKey}`, () => this.statements.newestPayloads.all(storeKey, scan));
    for (const payload of payloads) {
      const usage = (parseStoredEntry(payload)?.message as { usage?: Record<string, unknown> } | undefined)
        ?.usage;
      if (typeof usage !== 'object' || usage === null) continue;
      const tokens = ['input_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'].reduce(
        (sum, field) => sum + (typeof usage[field] === 'number' ? (usage[field] as number) : 0),
        0,
      );
      if (tokens > 0) return tokens;
    }
    return 0;
  }

  /** Project keys that have at least one transcript, sorted. */
  projects(): string[] {
    this.sync();
    return this.guard('list projects', () => this.statements.projects.all());
  }

  close(): void {
    if (!this.db.open) return;
    try {
      this.sync();
    } finally {
      this.db.close();
    }
    stampCleanClose(this.path);
  }

  private unreadableRowError(storeKey: string, row: UnreadableRow): SessionStoreError {
    return new SessionStoreError(
      this.path,
      `The session database ${this.path} holds an unreadable entry for ${storeKey} (seq ${row.seq} is not a JSON object), so the transcript was not loaded and nothing half-read is resumed. Inspect it with: sqlite3 ${this.path} "SELECT payload FROM entries WHERE store_key = '${storeKey}' AND seq = ${row.seq}"`,
    );
  }

  /** The key as stored (see `checkSessionKey`); a key no real session has is refused, naming it. */
  private checked<K extends SessionKeyParts>(key: K, action: string): K {
    const checked = checkSessionKey(key);
    if (typeof checked !== 'string') return checked;
    throw new SessionStoreError(
      this.path,
      `Refusing to ${action} the session key ${JSON.stringify(key)} in ${this.path}: ${checked}. Nothing was read or written.`,
    );
  }

  /** Run a database operation, turning SQLite's failures into a message that names the file. */
  private guard<T>(action: string, operation: () => T): T {
    try {
      return operation();
    } catch (error) {
      if (error instanceof SessionStoreError) throw error;
      // Stryker disable next-line StringLiteral: a stand-in for a missing code only has to start with none of SQLite's codes below
      const code = (error as { code?: string }).code ?? '';
      const detail = error instanceof Error ? error.message : String(error);
      let advice: string;
      if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
        advice = 'Another process is holding it locked; wait for it to finish (or stop it) and run again.';
      } else if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT')) {
        advice =
          'It is not a readable SQLite database. Move it aside (for example to sessions.db.corrupt) and run again to start a fresh one; the moved file keeps whatever can be recovered.';
      } else if (
        code.startsWith('SQLITE_READONLY') ||
        code.startsWith('SQLITE_CANTOPEN') ||
        // Stryker disable next-line MethodExpression: SQLITE_PERM has no extended codes, so it ends with what it starts with
        code.startsWith('SQLITE_PERM')
      ) {
        advice =
          'It cannot be opened for writing; check that the directory exists and that you may write to it.';
      } else {
        advice = 'Nothing was changed by this operation.';
      }
      throw new SessionStoreError(
        this.path,
        `Session database ${this.path}: could not ${action} (${detail}). ${advice}`,
        {
          cause: error,
        },
      );
    }
  }
}

/** The key a store key names (`<project>/<session>[/<subpath>]`; project keys hold no '/'). */
function keyOf(storeKey: string): SessionKey {
  // `split` gives at least one part; a key with none for the session (an older writer's) folds as
  // session '', which no real session has, so its rows join no real session's summary.
  const [projectKey, sessionId = '', ...subpath] = storeKey.split('/') as [string, ...string[]];
  return subpath.length === 0
    ? { projectKey, sessionId }
    : // Stryker disable next-line StringLiteral: fold reads only whether a key has a subpath, never its text
      { projectKey, sessionId, subpath: subpath.join('/') };
}
