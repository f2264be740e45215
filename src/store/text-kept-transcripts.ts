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
import { parseStoredEntry } from './transcript.js';

/**
 * Rows longer than this (in bytes) are read as their stored bytes, which are written out again
 * without being encoded; shorter ones as strings, which SQLite's driver decodes more cheaply than
 * a buffer is made and decoded per row (measured on 20k-entry sessions: the bytes of a transcript
 * are in its few large rows, the count in its many small ones).
 */
const LARGE_ROW_BYTES = 4096;

/** A line break, which `JSON.stringify` never writes inside an entry. */
const LINE_BREAK = '\n';
const LINE_BREAK_BYTE = 0x0a;

export class TextKeptTranscripts implements SessionBackend {
  readonly location: string;
  private readonly store: SqliteSessionStore;
  private readonly db: Database.Database;
  /** A transcript's row texts, a large one as its stored bytes (see `LARGE_ROW_BYTES`). */
  private readonly payloads: Database.Statement<[string], string | Buffer>;
  /** The seq and uid of a transcript's row at an offset (only asked for an unreadable row). */
  private readonly rowAt: Database.Statement<[string, number], { seq: number; uid: string | null }>;
  private readonly texts = new Map<object, string | Buffer>();

  constructor(store: SqliteSessionStore) {
    this.store = store;
    this.location = store.location;
    this.db = new Database(store.path, { readonly: true, fileMustExist: true });
    try {
      // The length of a text cast to a blob is its size in bytes, known without reading it.
      this.payloads = this.db
        .prepare<[string], string | Buffer>(
          `SELECT CASE WHEN length(CAST(payload AS BLOB)) > ${LARGE_ROW_BYTES} THEN CAST(payload AS BLOB) ELSE payload END
             FROM entries WHERE store_key = ? ORDER BY seq`,
        )
        .pluck();
      this.rowAt = this.db.prepare<[string, number], { seq: number; uid: string | null }>(
        'SELECT seq, uid FROM entries WHERE store_key = ? ORDER BY seq LIMIT 1 OFFSET ?',
      );
    } catch (error) {
      this.db.close();
      throw error;
    }
  }

  /** The row text (a string, or its UTF-8 bytes) `entry` was parsed from, when it is one of this reader's. */
  storedText(entry: object): string | Buffer | undefined {
    return this.texts.get(entry);
  }

  async readTranscript(key: SessionKey): Promise<StoredTranscript | null> {
    const storeKey = storeKeyOf(key);
    const payloads = this.payloads.all(storeKey);
    if (payloads.length === 0) return null;
    const entries: SessionStoreEntry[] = [];
    const unreadable: UnreadableRow[] = [];
    for (let index = 0; index < payloads.length; index += 1) {
      const payload = payloads[index] as string | Buffer;
      const text = typeof payload === 'string';
      const entry = parseStoredEntry(text ? payload : payload.toString('utf8'));
      if (entry === undefined) {
        const row = this.rowAt.get(storeKey, index);
        unreadable.push({ seq: row?.seq ?? index, uuid: row?.uid ?? null, position: entries.length });
        continue;
      }
      if (text ? !payload.includes(LINE_BREAK) : payload.indexOf(LINE_BREAK_BYTE) === -1)
        this.texts.set(entry, payload);
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
