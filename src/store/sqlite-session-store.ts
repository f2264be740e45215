/**
 * SqliteSessionStore: every transcript flower's agents write (main thread and each subagent),
 * mirrored into one SQLite file (`runs/sessions.db`) through the SDK's `SessionStore` interface,
 * and read back on resume.
 *
 * Invariants:
 * - Stored rows are the entries exactly as appended; nothing ever rewrites them. The optional
 *   rewrite layers (expire → trim → prune) apply to the copy `load()` returns, never to the file.
 * - Appends are idempotent by `uuid` (the SDK retries failed batches, and imports replay): an
 *   entry whose uuid is stored, or repeated within the batch, is skipped; entries without a uuid
 *   are always appended. A batch of only known entries changes nothing: no seq, mtime or summary.
 * - `mtime` is epoch milliseconds, strictly increasing per key and per store instance. The SDK
 *   compares it against local files to decide which copy is newer; a clock that stalls or runs
 *   backwards breaks that.
 * - A main transcript's summary is folded inside the same transaction as its rows (the SDK's
 *   `foldSessionSummary`, `data` kept verbatim), so concurrent writers cannot interleave a
 *   read-fold-write.
 * - Failures are whole: a batch that cannot be written leaves nothing behind, a transcript with
 *   an unreadable row is not returned at all, and every error names the database file.
 *
 * Schema (as the reference's `sessions.db`, so its tooling and queries keep working):
 * `entries(store_key, seq, uid, payload)`, `meta(store_key, mtime, next_seq)`,
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
import type { LoadReport } from './load-report.js';
import { type RewriteOptions, type RewritePolicies, resolvePolicies, rewriteForResume } from './rewrite.js';
import { storeKeyOf } from './session-key.js';
import { createSpillWriter, type SpillWriter } from './spill.js';

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
    store_key TEXT PRIMARY KEY,
    mtime     INTEGER NOT NULL,
    next_seq  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS summaries (
    project_key TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    mtime       INTEGER NOT NULL,
    data        TEXT NOT NULL,
    PRIMARY KEY (project_key, session_id)
);
`;

export interface SqliteSessionStoreOptions extends RewriteOptions {
  /**
   * The workspace sessions run in. Giving it turns on the rewrite layers for `load()` (expire →
   * trim → prune, with these policies) and is where trim puts its spill files. Without it `load()`
   * returns exactly what was appended.
   */
  workspace?: string;
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

type MetaRow = { mtime: number; next_seq: number };

/** Keys sharing `prefix` form one contiguous range: [prefix, prefix with its last char + 1). */
function prefixRange(prefix: string): [string, string] {
  const last = prefix.charCodeAt(prefix.length - 1);
  return [prefix, prefix.slice(0, -1) + String.fromCharCode(last + 1)];
}

function prepareStatements(db: Database.Database) {
  return {
    meta: db.prepare<[string], MetaRow>('SELECT mtime, next_seq FROM meta WHERE store_key = ?'),
    insert: db.prepare<[string, number, string | null, string]>(
      'INSERT INTO entries (store_key, seq, uid, payload) VALUES (?, ?, ?, ?) ON CONFLICT (store_key, uid) WHERE uid IS NOT NULL DO NOTHING',
    ),
    upsertMeta: db.prepare<[string, number, number]>(
      'INSERT INTO meta (store_key, mtime, next_seq) VALUES (?, ?, ?) ON CONFLICT (store_key) DO UPDATE SET mtime = excluded.mtime, next_seq = excluded.next_seq',
    ),
    summary: db.prepare<[string, string], { mtime: number; data: string }>(
      'SELECT mtime, data FROM summaries WHERE project_key = ? AND session_id = ?',
    ),
    upsertSummary: db.prepare<[string, string, number, string]>(
      'INSERT INTO summaries (project_key, session_id, mtime, data) VALUES (?, ?, ?, ?) ON CONFLICT (project_key, session_id) DO UPDATE SET mtime = excluded.mtime, data = excluded.data',
    ),
    payloads: db
      .prepare<[string], string>('SELECT payload FROM entries WHERE store_key = ? ORDER BY seq')
      .pluck(),
    newestPayloads: db
      .prepare<[string, number], string>(
        'SELECT payload FROM entries WHERE store_key = ? ORDER BY seq DESC LIMIT ?',
      )
      .pluck(),
    keysInRange: db.prepare<[string, string], { store_key: string; mtime: number }>(
      'SELECT store_key, mtime FROM meta WHERE store_key >= ? AND store_key < ?',
    ),
    summaries: db.prepare<[string], { session_id: string; mtime: number; data: string }>(
      'SELECT session_id, mtime, data FROM summaries WHERE project_key = ?',
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

export class SqliteSessionStore implements SessionStore {
  readonly path: string;
  private readonly db: Database.Database;
  private readonly policies: RewritePolicies | undefined;
  private readonly spill: SpillWriter | undefined;
  private readonly reports = new Map<string, LoadReport>();
  private lastMtime = 0;
  private readonly statements: Statements;
  private readonly appendTransaction: Database.Transaction<
    (key: SessionKey, storeKey: string, entries: readonly SessionStoreEntry[], payloads: string[]) => void
  >;

  constructor(file: string, options: SqliteSessionStoreOptions = {}) {
    this.path = path.resolve(file);
    this.db = this.guard('open', () => {
      mkdirSync(path.dirname(this.path), { recursive: true });
      const db = new Database(this.path);
      try {
        db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
        db.pragma('journal_mode = WAL');
        // The local JSONL is the primary copy (the store is a mirror), so WAL's NORMAL sync —
        // durable against process crashes, not power loss — is the right trade for speed.
        db.pragma('synchronous = NORMAL');
        db.exec(SCHEMA);
      } catch (error) {
        db.close();
        throw error;
      }
      return db;
    });
    if (options.workspace !== undefined) {
      this.policies = resolvePolicies(options);
      this.spill = createSpillWriter(options.workspace, this.policies.trim.spillDirname);
    }
    this.statements = prepareStatements(this.db);
    this.appendTransaction = this.db.transaction(this.appendRows.bind(this));
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
    this.guard(`append to ${storeKey}`, () =>
      this.appendTransaction.immediate(key, storeKey, entries, payloads),
    );
  }

  private appendRows(
    key: SessionKey,
    storeKey: string,
    entries: readonly SessionStoreEntry[],
    payloads: string[],
  ): void {
    const { insert, meta: selectMeta, upsertMeta } = this.statements;
    const meta = selectMeta.get(storeKey);
    let seq = meta?.next_seq ?? 0;
    const inserted: SessionStoreEntry[] = [];
    for (let index = 0; index < entries.length; index += 1) {
      const entry = entries[index] as SessionStoreEntry;
      const uid = typeof entry.uuid === 'string' ? entry.uuid : null;
      if (insert.run(storeKey, seq, uid, payloads[index] as string).changes > 0) {
        seq += 1;
        inserted.push(entry);
      }
    }
    if (inserted.length === 0) return; // a replayed batch: leave mtime and summary alone
    const mtime = this.nextMtime(meta?.mtime ?? 0);
    upsertMeta.run(storeKey, mtime, seq);
    if (key.subpath === undefined) this.foldSummary(key, inserted, mtime);
  }

  private foldSummary(key: SessionKey, inserted: SessionStoreEntry[], mtime: number): void {
    const previousRow = this.statements.summary.get(key.projectKey, key.sessionId);
    const previous: SessionSummaryEntry | undefined =
      previousRow === undefined
        ? undefined
        : { sessionId: key.sessionId, mtime: previousRow.mtime, data: JSON.parse(previousRow.data) };
    const folded = foldSessionSummary(previous, key, inserted, { mtime });
    this.statements.upsertSummary.run(
      key.projectKey,
      key.sessionId,
      folded.mtime,
      JSON.stringify(folded.data),
    );
  }

  /** Epoch ms, strictly after both this instance's last stamp and the key's stored one. */
  private nextMtime(stored: number): number {
    this.lastMtime = Math.max(Date.now(), this.lastMtime + 1, stored + 1);
    return this.lastMtime;
  }

  /**
   * The transcript for resume: stored entries in append order, rewritten by the configured
   * layers (the stored rows are untouched). Null when the key was never written.
   */
  async load(key: SessionKey): Promise<SessionStoreEntry[] | null> {
    const entries = this.loadRaw(key);
    if (entries === null || this.policies === undefined || this.spill === undefined) return entries;
    const { entries: rewritten, report } = rewriteForResume(entries, this.policies, this.spill);
    this.reports.set(storeKeyOf(key), report);
    return rewritten;
  }

  /** The entries exactly as appended, or null when the key was never written. */
  loadRaw(key: SessionKey): SessionStoreEntry[] | null {
    const storeKey = storeKeyOf(key);
    const payloads = this.guard(`load ${storeKey}`, () => this.statements.payloads.all(storeKey));
    if (payloads.length === 0) return null;
    return payloads.map((payload, index) => this.parseRow(storeKey, index, payload));
  }

  /** What the rewrite layers changed in the most recent `load` of this key. */
  lastLoadReport(key: SessionKey): LoadReport | undefined {
    return this.reports.get(storeKeyOf(key));
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
      const range = prefixRange(`${storeKey}/`);
      deleteEntriesInRange.run(...range);
      deleteMetaInRange.run(...range);
      deleteSummary.run(key.projectKey, key.sessionId);
    });
    this.guard(`delete ${storeKey}`, () => remove.immediate());
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
    for (const [index, payload] of payloads.entries()) {
      const entry = this.parseRow(storeKey, -1 - index, payload);
      const usage = (entry.message as { usage?: Record<string, unknown> } | undefined)?.usage;
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

  private parseRow(storeKey: string, position: number, payload: string): SessionStoreEntry {
    let value: unknown;
    try {
      value = JSON.parse(payload);
    } catch {
      value = undefined;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      const where = position >= 0 ? `row ${position + 1}` : `row ${-position} from the end`;
      throw new SessionStoreError(
        this.path,
        `The session database ${this.path} holds an unreadable entry for ${storeKey} (${where} is not a JSON object). The transcript was not loaded, so nothing half-read is resumed. Inspect it with: sqlite3 ${this.path} "SELECT seq, payload FROM entries WHERE store_key = '${storeKey}'"`,
      );
    }
    return value as SessionStoreEntry;
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
