/**
 * The local store's transcripts read for one resume, each entry remembering the row text it was
 * parsed from, so that whoever writes the resumed history out again (runtime/resume-files.ts) can
 * write an unchanged entry's stored text instead of serialising it once more.
 *
 * Why: a resume through the SDK's `sessionStore` option serialises every entry of the session
 * (main transcript and every subagent's) back into JSONL files for the binary. On a realistic
 * 20k-entry session with 50 subagents that was most of flower's own CPU before the first model
 * request (`JSON.stringify`, `Buffer.from` and the garbage they leave; issue 23). A row's text
 * in `sessions.db` is already the entry's JSON, exactly as the SDK appended it.
 *
 * Invariants:
 * - Read-only: its own read-only connection to the SQLite file (the store keeps its connection
 *   private and writable); it never creates, migrates or writes the file. Rows committed by the
 *   runtime's store before the read are seen (WAL).
 * - Serves the rewriting layer as a backend (`RewritingSessionStore` over it), with `owned:
 *   false`: the layer copies an entry it edits, so an entry the load returns that is one of these
 *   parsed objects is unchanged, and `storedText` gives its row text. Any other entry (edited,
 *   inserted) has none and must be serialised.
 * - A row that is not a JSON object is reported as unreadable (its seq, uid and position), as
 *   the SQLite store's own `readTranscript` does, so the layer resumes around it and says so.
 * - A row whose text holds a line break (not what `JSON.stringify` writes) gets no stored text:
 *   written out as is it would break the JSONL file in two.
 * - Everything but reading transcripts goes to the store itself; `close` closes only this
 *   connection.
 */
import type { SessionKey, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import Database from 'better-sqlite3';
import type { SessionBackend, StoredTranscript, UnreadableRow } from './backend.js';
import { storeKeyOf } from './session-key.js';
import type { SqliteSessionStore } from './sqlite-session-store.js';

/** A row as read: its seq, its uid, and its text as the bytes stored (no string made for the copy). */
type StoredRow = [seq: number, uid: string | null, payload: Buffer];

/** A line break, which `JSON.stringify` never writes inside an entry. */
const LINE_BREAK = 0x0a;

export class TextKeptTranscripts implements SessionBackend {
  readonly location: string;
  private readonly store: SqliteSessionStore;
  private readonly db: Database.Database;
  private readonly rows: Database.Statement<[string], StoredRow>;
  private readonly texts = new Map<object, Buffer>();

  constructor(store: SqliteSessionStore) {
    this.store = store;
    this.location = store.location;
    this.db = new Database(store.path, { readonly: true, fileMustExist: true });
    try {
      // As a blob: the bytes are copied once, and written out again without being encoded.
      this.rows = this.db
        .prepare<[string], StoredRow>(
          'SELECT seq, uid, CAST(payload AS BLOB) FROM entries WHERE store_key = ? ORDER BY seq',
        )
        .raw(true);
    } catch (error) {
      this.db.close();
      throw error;
    }
  }

  /** The row text (UTF-8) `entry` was parsed from, when it is one of this reader's entries. */
  storedText(entry: object): Buffer | undefined {
    return this.texts.get(entry);
  }

  async readTranscript(key: SessionKey): Promise<StoredTranscript | null> {
    const rows = this.rows.all(storeKeyOf(key));
    if (rows.length === 0) return null;
    const entries: SessionStoreEntry[] = [];
    const unreadable: UnreadableRow[] = [];
    for (const [seq, uid, payload] of rows) {
      const entry = parseObject(payload.toString('utf8'));
      if (entry === undefined) {
        unreadable.push({ seq, uuid: uid, position: entries.length });
        continue;
      }
      if (payload.indexOf(LINE_BREAK) === -1) this.texts.set(entry, payload);
      entries.push(entry);
    }
    return { entries, unreadable, owned: false };
  }

  async load(key: SessionKey): Promise<SessionStoreEntry[] | null> {
    return (await this.readTranscript(key))?.entries ?? null;
  }

  append(key: SessionKey, entries: SessionStoreEntry[]): Promise<void> {
    return this.store.append(key, entries);
  }

  listSessions(projectKey: string): ReturnType<SqliteSessionStore['listSessions']> {
    return this.store.listSessions(projectKey);
  }

  listSessionSummaries(projectKey: string): ReturnType<SqliteSessionStore['listSessionSummaries']> {
    return this.store.listSessionSummaries(projectKey);
  }

  delete(key: SessionKey): Promise<void> {
    return this.store.delete(key);
  }

  listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]> {
    return this.store.listSubkeys(key);
  }

  lastCostState(key: SessionKey): Promise<SessionStoreEntry | null> {
    return this.store.lastCostState(key);
  }

  /** Closes this connection and lets go of the texts. */
  close(): void {
    this.texts.clear();
    this.db.close();
  }
}

/** The entry a row holds, or undefined when its text is not a JSON object. */
function parseObject(payload: string): SessionStoreEntry | undefined {
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
