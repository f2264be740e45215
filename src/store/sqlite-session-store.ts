/**
 * SqliteSessionStore: the embedded backend. Every transcript flower's agents write (main thread
 * and each subagent) is mirrored into one SQLite file (`runs/sessions.db`) through the SDK's
 * `SessionStore` interface and read back on resume. It stores and finds entries and nothing else:
 * what a resume is fed (expire, trim, prune, spill files) is the rewriting layer's business
 * (rewriting-store.ts), which wraps this store or any other backend (backend.ts).
 *
 * Invariants:
 * - Stored rows are the entries exactly as appended; nothing ever rewrites them.
 * - Durability: `append` resolves only after its transaction committed, so an entry it
 *   acknowledged is on disk (WAL with `synchronous = NORMAL`: it survives a crash or SIGKILL of
 *   flower and of the agent, not a power cut — the agent's own JSONL is the primary copy).
 *   The SDK mirrors one entry per call and awaits each (`sessionStoreFlush: 'eager'`), so one
 *   call costs about one insert: the key's meta row and summary are kept in memory between calls
 *   and trusted only while no other connection has committed (`PRAGMA data_version`, read inside
 *   the write transaction), and the summary row is written only when the fold changed it.
 * - Appends are idempotent by `uuid` (the SDK retries failed batches, and imports replay): an
 *   entry whose uuid is stored, or repeated within the batch, is skipped; entries without a uuid
 *   are always appended. A batch of only known entries changes nothing: no seq, mtime or summary.
 * - `mtime` is epoch milliseconds, strictly increasing per key and per store instance. The SDK
 *   compares it against local files to decide which copy is newer; a clock that stalls or runs
 *   backwards breaks that. A session summary carries its key's current mtime.
 * - A main transcript's summary is folded inside the same transaction as its rows (the SDK's
 *   `foldSessionSummary`, `data` kept verbatim), so concurrent writers cannot interleave a
 *   read-fold-write.
 * - The newest `cost-state` entry of a key is found without reading the transcript: `meta`
 *   records its seq on append (`cost_seq`), and `indexed_to` says up to which seq every row was
 *   looked at; rows another writer added (an older flower, the reference's tools) are searched
 *   from the end in SQL, and only those.
 * - Failures are whole: a batch that cannot be written leaves nothing behind, `load` of a
 *   transcript with an unreadable row returns nothing (one line names the key and the seq), and
 *   every error names the database file.
 *
 * Schema (the reference's `sessions.db`, so its tooling and queries keep working, plus two
 * columns in `meta`): `entries(store_key, seq, uid, payload)`,
 * `meta(store_key, mtime, next_seq, cost_seq, indexed_to)`,
 * `summaries(project_key, session_id, mtime, data)`; see `SCHEMA`.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import {
  foldSessionSummary,
  type SessionKey,
  type SessionStore,
  type SessionStoreEntry,
  type SessionSummaryEntry,
} from '@anthropic-ai/claude-agent-sdk';
import Database from 'better-sqlite3';
import type { StoredTranscript, UnreadableRow } from './backend.js';
import { COST_STATE_TYPE } from './cost-state.js';
import { storeKeyOf } from './session-key.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS entries (
    store_key TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    uid       TEXT,
    payload   TEXT NOT NULL,
    PRIMARY KEY (store_key, seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS entries_uid
    ON entries(store_key, uid) WHERE uid IS NOT NULL;
CREATE TABLE IF NOT EXISTS meta (
    store_key  TEXT PRIMARY KEY,
    mtime      INTEGER NOT NULL,
    next_seq   INTEGER NOT NULL,
    cost_seq   INTEGER,
    indexed_to INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS summaries (
    project_key TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    mtime       INTEGER NOT NULL,
    data        TEXT NOT NULL,
    PRIMARY KEY (project_key, session_id)
);
`;

/** Columns a database written by the reference (or an older flower) lacks in `meta`. */
const META_COLUMNS: Record<string, string> = {
  cost_seq: 'ALTER TABLE meta ADD COLUMN cost_seq INTEGER',
  indexed_to: 'ALTER TABLE meta ADD COLUMN indexed_to INTEGER NOT NULL DEFAULT 0',
};

export interface SqliteSessionStoreOptions {
  /** How long a write waits for another process holding the database before failing. */
  busyTimeoutMs?: number;
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

/** What `meta` holds for a key, as this instance last committed or read it. */
interface KeyState {
  mtime: number;
  nextSeq: number;
  costSeq: number | null;
  indexedTo: number;
}

/** A main transcript's summary as stored, with its serialised form for cheap comparison. */
interface SummaryState {
  data: Record<string, unknown>;
  json: string;
}

/** Keys sharing `prefix` form one contiguous range: [prefix, prefix with its last char + 1). */
function prefixRange(prefix: string): [string, string] {
  const last = prefix.charCodeAt(prefix.length - 1);
  return [prefix, prefix.slice(0, -1) + String.fromCharCode(last + 1)];
}

function prepareStatements(db: Database.Database) {
  return {
    dataVersion: db.prepare<[], number>('PRAGMA data_version').pluck(),
    meta: db.prepare<[string], MetaRow>(
      'SELECT mtime, next_seq, cost_seq, indexed_to FROM meta WHERE store_key = ?',
    ),
    insert: db.prepare<[string, number, string | null, string]>(
      'INSERT INTO entries (store_key, seq, uid, payload) VALUES (?, ?, ?, ?) ON CONFLICT (store_key, uid) WHERE uid IS NOT NULL DO NOTHING',
    ),
    upsertMeta: db.prepare<[string, number, number, number | null, number]>(
      'INSERT INTO meta (store_key, mtime, next_seq, cost_seq, indexed_to) VALUES (?, ?, ?, ?, ?) ON CONFLICT (store_key) DO UPDATE SET mtime = excluded.mtime, next_seq = excluded.next_seq, cost_seq = excluded.cost_seq, indexed_to = excluded.indexed_to',
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
    // For rows no cost-aware writer looked at: newest first, stopping at the first match.
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
    projects: db
      .prepare<[], string>(
        "SELECT DISTINCT substr(store_key, 1, instr(store_key, '/') - 1) AS project FROM meta ORDER BY project",
      )
      .pluck(),
  };
}

type Statements = ReturnType<typeof prepareStatements>;

/** What one append committed, applied to the in-memory state only after the commit. */
interface Committed {
  storeKey: string;
  key: KeyState;
  summary: SummaryState | undefined;
}

export class SqliteSessionStore implements Required<SessionStore> {
  readonly path: string;
  private readonly db: Database.Database;
  private lastMtime = 0;
  private readonly statements: Statements;
  private readonly appendTransaction: Database.Transaction<
    (
      key: SessionKey,
      storeKey: string,
      entries: readonly SessionStoreEntry[],
      payloads: string[],
    ) => Committed | undefined
  >;
  /** `PRAGMA data_version` when `keyStates`/`summaryStates` were last known to match the file. */
  private knownVersion = -1;
  private readonly keyStates = new Map<string, KeyState>();
  private readonly summaryStates = new Map<string, SummaryState>();

  constructor(file: string, options: SqliteSessionStoreOptions = {}) {
    this.path = path.resolve(file);
    this.db = this.guard('open', () => openDatabase(this.path, options));
    this.statements = prepareStatements(this.db);
    this.appendTransaction = this.db.transaction(this.appendRows.bind(this));
  }

  /** Where the entries are kept, for messages. */
  get location(): string {
    return this.path;
  }

  async append(key: SessionKey, entries: SessionStoreEntry[]): Promise<void> {
    this.appendNow(key, entries);
  }

  /** Synchronous body of `append` (the SDK's interface is async; SQLite here is not). */
  appendNow(key: SessionKey, entries: readonly SessionStoreEntry[]): void {
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
      return JSON.stringify(entry);
    });
    let committed: Committed | undefined;
    try {
      committed = this.guard(`append to ${storeKey}`, () =>
        this.appendTransaction.immediate(key, storeKey, entries, payloads),
      );
    } catch (error) {
      this.knownVersion = -1; // the cached state may be ahead of what was committed
      throw error;
    }
    if (committed === undefined) return;
    this.keyStates.set(committed.storeKey, committed.key);
    if (committed.summary !== undefined)
      this.summaryStates.set(`${key.projectKey}/${key.sessionId}`, committed.summary);
  }

  private appendRows(
    key: SessionKey,
    storeKey: string,
    entries: readonly SessionStoreEntry[],
    payloads: string[],
  ): Committed | undefined {
    const { insert, upsertMeta } = this.statements;
    // Inside the write lock: if no other connection committed since our last write, what we
    // remember of the meta row and the summary is exactly what the file holds.
    const version = this.statements.dataVersion.get() as number;
    if (version !== this.knownVersion) {
      this.keyStates.clear();
      this.summaryStates.clear();
      this.knownVersion = version;
    }
    const before = this.keyState(storeKey);
    let seq = before.nextSeq;
    let costSeq = before.costSeq;
    const inserted: SessionStoreEntry[] = [];
    for (let index = 0; index < entries.length; index += 1) {
      const entry = entries[index] as SessionStoreEntry;
      const uid = typeof entry.uuid === 'string' ? entry.uuid : null;
      if (insert.run(storeKey, seq, uid, payloads[index] as string).changes === 0) continue;
      if (entry.type === COST_STATE_TYPE) costSeq = seq;
      seq += 1;
      inserted.push(entry);
    }
    if (inserted.length === 0) return undefined; // a replayed batch: leave mtime and summary alone
    const after: KeyState = {
      mtime: this.nextMtime(before.mtime),
      nextSeq: seq,
      costSeq,
      // Only a gap-free record of looked-at rows may advance (see `lastCostStateNow`).
      indexedTo: before.indexedTo === before.nextSeq ? seq : before.indexedTo,
    };
    upsertMeta.run(storeKey, after.mtime, after.nextSeq, after.costSeq, after.indexedTo);
    const summary = key.subpath === undefined ? this.foldSummary(key, inserted, after.mtime) : undefined;
    return { storeKey, key: after, summary };
  }

  private keyState(storeKey: string): KeyState {
    const known = this.keyStates.get(storeKey);
    if (known !== undefined) return known;
    const row = this.statements.meta.get(storeKey);
    return row === undefined
      ? { mtime: 0, nextSeq: 0, costSeq: null, indexedTo: 0 }
      : { mtime: row.mtime, nextSeq: row.next_seq, costSeq: row.cost_seq, indexedTo: row.indexed_to };
  }

  /** Fold the inserted entries into the session summary; writes the row only when it changed. */
  private foldSummary(key: SessionKey, inserted: SessionStoreEntry[], mtime: number): SummaryState {
    const sessionKey = `${key.projectKey}/${key.sessionId}`;
    let previous = this.summaryStates.get(sessionKey);
    if (previous === undefined) {
      const json = this.statements.summary.get(key.projectKey, key.sessionId);
      if (json !== undefined) previous = { data: JSON.parse(json), json };
    }
    const folded = foldSessionSummary(
      previous === undefined ? undefined : { sessionId: key.sessionId, mtime, data: previous.data },
      key,
      inserted,
      { mtime },
    );
    const json = JSON.stringify(folded.data);
    if (json !== previous?.json)
      this.statements.upsertSummary.run(key.projectKey, key.sessionId, mtime, json);
    return { data: folded.data, json };
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
  loadRaw(key: SessionKey): SessionStoreEntry[] | null {
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

  readTranscriptNow(key: SessionKey): StoredTranscript | null {
    const storeKey = storeKeyOf(key);
    const payloads = this.guard(`load ${storeKey}`, () => this.statements.payloads.all(storeKey));
    if (payloads.length === 0) return null;
    const entries: SessionStoreEntry[] = [];
    const unreadable: UnreadableRow[] = [];
    for (let index = 0; index < payloads.length; index += 1) {
      const entry = parseEntry(payloads[index] as string);
      if (entry !== undefined) {
        entries.push(entry);
        continue;
      }
      const row = this.guard(`load ${storeKey}`, () => this.statements.rowAt.get(storeKey, index));
      unreadable.push({ seq: row?.seq ?? index, uuid: row?.uid ?? null, position: entries.length });
    }
    return { entries, unreadable, owned: true };
  }

  /** The newest `cost-state` entry of `key`, found from the end (see the module header). */
  async lastCostState(key: SessionKey): Promise<SessionStoreEntry | null> {
    return this.lastCostStateNow(key);
  }

  lastCostStateNow(key: SessionKey): SessionStoreEntry | null {
    const storeKey = storeKeyOf(key);
    return this.guard(`read the cost of ${storeKey}`, () => {
      const meta = this.statements.meta.get(storeKey);
      if (meta === undefined) return null;
      let seq = meta.cost_seq;
      if (meta.indexed_to < meta.next_seq) {
        const from = Math.max(meta.indexed_to, (seq ?? -1) + 1);
        seq = this.statements.newestCostSeq.get(storeKey, from) ?? seq;
      }
      if (seq === null) return null;
      const payload = this.statements.payloadAt.get(storeKey, seq);
      const entry = payload === undefined ? undefined : parseEntry(payload);
      return entry?.type === COST_STATE_TYPE ? entry : null;
    });
  }

  async listSessions(projectKey: string): Promise<Array<{ sessionId: string; mtime: number }>> {
    const prefix = `${projectKey}/`;
    return this.guard('list sessions', () => this.statements.keysInRange.all(...prefixRange(prefix)))
      .map((row) => ({ sessionId: row.store_key.slice(prefix.length), mtime: row.mtime }))
      .filter((row) => !row.sessionId.includes('/'));
  }

  async listSessionSummaries(projectKey: string): Promise<SessionSummaryEntry[]> {
    return this.guard('list summaries', () => this.statements.summaries.all(projectKey)).map((row) => ({
      sessionId: row.session_id,
      mtime: row.mtime,
      data: JSON.parse(row.data),
    }));
  }

  /** A main key removes the session with all its subagent transcripts and its summary; a subpath only itself. */
  async delete(key: SessionKey): Promise<void> {
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
    try {
      this.guard(`delete ${storeKey}`, () => remove.immediate());
    } finally {
      this.knownVersion = -1;
    }
  }

  async listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]> {
    const prefix = `${key.projectKey}/${key.sessionId}/`;
    return this.guard('list subkeys', () => this.statements.keysInRange.all(...prefixRange(prefix))).map(
      (row) => row.store_key.slice(prefix.length),
    );
  }

  /** Whether a main transcript exists for this session. */
  hasSession(projectKey: string, sessionId: string): boolean {
    return (
      this.guard('look up a session', () => this.statements.hasKey.get(`${projectKey}/${sessionId}`)) === 1
    );
  }

  /**
   * The main thread's context size at its latest turn that reported one: input + cache read +
   * cache creation tokens of the newest entry (among the last `scan`) with a non-zero total.
   */
  lastContext(projectKey: string, sessionId: string, scan = 60): number {
    const storeKey = `${projectKey}/${sessionId}`;
    const payloads = this.guard(`read ${storeKey}`, () => this.statements.newestPayloads.all(storeKey, scan));
    for (const payload of payloads) {
      const usage = (parseEntry(payload)?.message as { usage?: Record<string, unknown> } | undefined)?.usage;
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
    return this.guard('list projects', () => this.statements.projects.all());
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  private unreadableRowError(storeKey: string, row: UnreadableRow): SessionStoreError {
    return new SessionStoreError(
      this.path,
      `The session database ${this.path} holds an unreadable entry for ${storeKey} (seq ${row.seq} is not a JSON object), so the transcript was not loaded and nothing half-read is resumed. Inspect it with: sqlite3 ${this.path} "SELECT payload FROM entries WHERE store_key = '${storeKey}' AND seq = ${row.seq}"`,
    );
  }

  /** Run a database operation, turning SQLite's failures into a message that names the file. */
  private guard<T>(action: string, operation: () => T): T {
    try {
      return operation();
    } catch (error) {
      if (error instanceof SessionStoreError) throw error;
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

/** Open (creating if needed) the database file with flower's pragmas and schema. */
function openDatabase(file: string, options: SqliteSessionStoreOptions): Database.Database {
  mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  try {
    db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    db.pragma('journal_mode = WAL');
    // The local JSONL is the primary copy (the store is a mirror), so WAL's NORMAL sync —
    // durable against process crashes, not power loss — is the right trade for speed.
    db.pragma('synchronous = NORMAL');
    // A damaged file is to be recognised here, before anything is written to it.
    db.exec(SCHEMA);
    addMissingColumns(db);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/** Bring a reference-era `meta` table up to date; safe when two processes open the file at once. */
function addMissingColumns(db: Database.Database): void {
  const missing = (): string[] => {
    const present = new Set(
      db
        .prepare<[], { name: string }>('PRAGMA table_info(meta)')
        .all()
        .map((column) => column.name),
    );
    return Object.keys(META_COLUMNS).filter((column) => !present.has(column));
  };
  if (missing().length === 0) return;
  db.transaction(() => {
    for (const column of missing()) db.exec(META_COLUMNS[column] as string);
  }).immediate();
}

/** The entry a payload holds, or undefined when it is not a JSON object. */
function parseEntry(payload: string): SessionStoreEntry | undefined {
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return undefined;
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as SessionStoreEntry)
    : undefined;
}
