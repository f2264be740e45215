/**
 * The backend seam: where transcript entries are kept, as opposed to what a resume is fed.
 *
 * A backend implements the SDK's `SessionStore` contract — every method — and knows nothing about
 * rewriting. The rewriting layer (`RewritingSessionStore`, rewriting-store.ts) wraps any backend
 * and is the only place that knows about expire/trim/prune/heal, spill files and load reports.
 * `SqliteSessionStore` is the embedded backend; a PostgreSQL one plugs in the same way.
 *
 * Writing a backend:
 * 1. Implement `SessionStore` with all methods. Run `describeSessionStoreConformance`
 *    (test/unit/store/session-store-conformance.ts) against it bare and under the rewriting layer,
 *    and the property tests (test/unit/store/layers.property.test.ts) under the layer.
 * 2. Durability: `append` resolves only once its entries are committed. The SDK mirrors one
 *    entry per call (`sessionStoreFlush: 'eager'`) and awaits each call before the next, so a
 *    call's fixed cost is paid per entry: keep it near one insert (sqlite-session-store.ts shows
 *    one way: one statement per entry, the derived session index brought up to date shortly after
 *    for everything appended meanwhile, and on open after a crash).
 * 3. The fast paths below are optional; without them the layer falls back to `load`, which is
 *    correct but reads the whole transcript:
 *    - `readTranscript` returns a damaged row as `unreadable` (with its position) instead of
 *      failing the whole load, so the layer can resume around it and say which row it was;
 *    - `lastCostState` finds the newest `cost-state` entry without reading the transcript (an
 *      index, or a column maintained on append).
 */
import type { SessionKey, SessionStore, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';

/** A stored row that is not a JSON object. */
/** How many entries a key holds: what two stores compare before copying a transcript. */
export interface EntryCount {
  sessionId: string;
  /** '' for the main transcript. */
  subpath: string;
  entries: number;
}

export interface UnreadableRow {
  /** The backend's order number for the row (SQLite: `entries.seq`), for the message. */
  seq: number;
  /** The uuid the row was stored under, when the backend keeps it apart from the payload. */
  uuid: string | null;
  /** How many readable entries of the transcript come before it. */
  position: number;
}

/** A transcript as stored: the readable entries in append order, and the rows that were not. */
export interface StoredTranscript {
  entries: SessionStoreEntry[];
  unreadable: UnreadableRow[];
  /**
   * True when `entries` are fresh objects made for this call that the caller may change (parsed
   * rows, say); the rewriting layer then edits them in place instead of copying them.
   */
  owned?: boolean;
}

export type SessionBackend = Required<SessionStore> & {
  /** Where the entries are kept, for messages (a file path; a URL without its password). */
  readonly location?: string;
  /** The transcript with damaged rows reported rather than thrown; null for an unknown key. */
  readTranscript?(key: SessionKey): Promise<StoredTranscript | null>;
  /** The newest `cost-state` entry of the transcript, found from the end; null when it has none. */
  lastCostState?(key: SessionKey): Promise<SessionStoreEntry | null>;
  close?(): void | Promise<void>;
};
