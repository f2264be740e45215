/**
 * A session backend that keeps the local store first and sends every change to the shared one
 * behind it: what the SDK mirrors (through the rewriting layer) lands in the run directory's
 * SQLite store as without a database, and each appended batch is then queued for PostgreSQL.
 *
 * Invariants:
 * - The local store decides: an append resolves when the local append did, whatever the shared
 *   store does; a failed local append fails as before and sends nothing.
 * - Every batch the local store took is queued, in order (write-behind.ts); a batch the queue
 *   could not send by the end stays in the local store, which the next start's reconcile sends
 *   (session-sync.ts). Reads only ever go to the local store.
 * - Deletes go to both (the shared one behind), so a rewrite that removes a transcript does not
 *   leave the old one to come back at the next pull.
 */
import type {
  SessionKey,
  SessionStore,
  SessionStoreEntry,
  SessionSummaryEntry,
} from '@anthropic-ai/claude-agent-sdk';
import type { SessionBackend, StoredTranscript } from '../backend.js';
import { storeKeyOf } from '../session-key.js';
import type { WriteBehindQueue } from './write-behind.js';

type LocalBackend = SessionBackend;

export class MirroredSessionStore implements SessionBackend {
  readonly location: string | undefined;
  readTranscript?: (key: SessionKey) => Promise<StoredTranscript | null>;
  lastCostState?: (key: SessionKey) => Promise<SessionStoreEntry | null>;

  constructor(
    private readonly local: LocalBackend,
    /** Where each change goes behind the local store (the database, fenced by the lease). */
    private readonly shared: Pick<Required<SessionStore>, 'append' | 'delete'>,
    private readonly queue: WriteBehindQueue,
  ) {
    this.location = local.location;
    if (local.readTranscript) this.readTranscript = (key) => local.readTranscript!(key);
    if (local.lastCostState) this.lastCostState = (key) => local.lastCostState!(key);
  }

  async append(key: SessionKey, entries: SessionStoreEntry[]): Promise<void> {
    await this.local.append(key, entries);
    if (entries.length === 0) return;
    // The SDK may reuse its batch array: the queue keeps its own copy.
    const batch = [...entries];
    this.queue.push(`append to ${storeKeyOf(key)}`, () => this.shared.append(key, batch));
  }

  async delete(key: SessionKey): Promise<void> {
    await this.local.delete(key);
    this.queue.push(`delete ${storeKeyOf(key)}`, () => this.shared.delete(key));
  }

  load(key: SessionKey): Promise<SessionStoreEntry[] | null> {
    return this.local.load(key);
  }

  listSessions(projectKey: string): Promise<Array<{ sessionId: string; mtime: number }>> {
    return this.local.listSessions(projectKey);
  }

  listSessionSummaries(projectKey: string): Promise<SessionSummaryEntry[]> {
    return this.local.listSessionSummaries(projectKey);
  }

  listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]> {
    return this.local.listSubkeys(key);
  }

  close(): void | Promise<void> {
    return this.local.close?.();
  }
}
