/**
 * `MirrorGuard`: the `SessionStore` the SDK mirrors into, wrapped around any backend, so that a
 * batch the backend refuses is kept instead of dropped.
 *
 * Without it a refused batch is retried by the SDK three times within a second and then dropped
 * with a `mirror_error` message; on a full disk 20 of 43 entries never reached `sessions.db` and
 * the run still said "finished" (measured). The agent's own JSONL has them, but for a resumed
 * session that copy lives in a temporary config directory the SDK deletes when the agent process
 * exits, so the entries must be kept on flower's side while the process runs.
 *
 * Invariants:
 * - A refused batch is held in memory, per key, in the order it came, and `append` resolves: the
 *   guard owns the retry from then on. Every later append of that key goes behind the held
 *   entries and first tries to write them, so the backend sees each key's entries in their
 *   original order once it accepts writes again. `flush` tries every held key.
 * - Held entries are written in chunks of `batchSize` (a backend may limit a request's size), and a
 *   chunk leaves the queue only when the backend accepted it. Appends are idempotent by `uuid`
 *   (SessionStore contract), so a chunk that landed although the call failed is not doubled.
 * - Reads (`load`, `listSessions`, ...) go straight to the backend; the guard adds no caching.
 * - It depends on the SDK's `SessionStore` interface only, so every backend gets the same guard.
 */
import type { SessionKey, SessionStore, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { storeKeyOf } from './session-key.js';

/** What a refused append looked like, for the caller's warning. */
export interface MirrorFailure {
  key: SessionKey;
  /** The backend's error message. */
  error: string;
  /** Entries held for this key now. */
  held: number;
}

/** Entries of one key that the backend has not accepted yet. */
export interface HeldEntries {
  key: SessionKey;
  entries: SessionStoreEntry[];
  /** The backend's latest error for this key. */
  error: string;
}

export interface MirrorGuardOptions {
  /** Every refused write (the first one of a key, and every later retry that fails again). */
  onFailure?: (failure: MirrorFailure) => void;
  /** Held entries of a key reached the backend. */
  onCaughtUp?: (key: SessionKey, entries: number) => void;
  /** Largest number of held entries sent in one append; the SDK's own flush threshold is 500. */
  batchSize?: number;
}

/** The backend's own words: a wrapped error's cause is the short, specific part ("disk is full"). */
function messageOf(error: unknown): string {
  if (error instanceof Error && error.cause instanceof Error) return error.cause.message;
  return error instanceof Error ? error.message : String(error);
}

export class MirrorGuard implements SessionStore {
  readonly listSessions?: SessionStore['listSessions'];
  readonly listSessionSummaries?: SessionStore['listSessionSummaries'];
  readonly delete?: SessionStore['delete'];
  readonly listSubkeys?: SessionStore['listSubkeys'];

  private readonly held = new Map<string, HeldEntries>();
  /** The last queued task per key (see `inOrder`). */
  private readonly tails = new Map<string, Promise<void>>();
  private readonly batchSize: number;

  constructor(
    private readonly backend: SessionStore,
    private readonly options: MirrorGuardOptions = {},
  ) {
    this.batchSize = Math.max(1, options.batchSize ?? 500);
    // Optional methods stay optional: the SDK changes behaviour on whether they exist.
    if (backend.listSessions) this.listSessions = backend.listSessions.bind(backend);
    if (backend.listSessionSummaries) this.listSessionSummaries = backend.listSessionSummaries.bind(backend);
    if (backend.delete) this.delete = backend.delete.bind(backend);
    if (backend.listSubkeys) this.listSubkeys = backend.listSubkeys.bind(backend);
  }

  append(key: SessionKey, entries: SessionStoreEntry[]): Promise<void> {
    if (entries.length === 0) return Promise.resolve();
    return this.inOrder(storeKeyOf(key), () => this.appendNow(key, entries));
  }

  load(key: SessionKey): Promise<SessionStoreEntry[] | null> {
    return this.backend.load(key);
  }

  /** Tries to write everything held; returns what is still held afterwards. */
  async flush(): Promise<HeldEntries[]> {
    await Promise.all(
      [...this.held.keys()].map((id) =>
        this.inOrder(id, async () => {
          const waiting = this.held.get(id);
          if (waiting !== undefined) await this.drain(id, waiting);
        }),
      ),
    );
    return this.pending();
  }

  /** Everything held now, oldest key first (copies: changing them changes nothing here). */
  pending(): HeldEntries[] {
    return [...this.held.values()].map((waiting) => ({ ...waiting, entries: [...waiting.entries] }));
  }

  /** Whether anything is held. */
  get holding(): boolean {
    return this.held.size > 0;
  }

  /** Forgets what is held for `key` (the caller saved it elsewhere and will restore it later). */
  release(key: SessionKey): void {
    this.held.delete(storeKeyOf(key));
  }

  private async appendNow(key: SessionKey, entries: SessionStoreEntry[]): Promise<void> {
    const id = storeKeyOf(key);
    const waiting = this.held.get(id);
    if (waiting !== undefined) {
      waiting.entries.push(...entries);
      await this.drain(id, waiting);
      return;
    }
    try {
      await this.backend.append(key, entries);
    } catch (error) {
      const kept: HeldEntries = { key, entries: [...entries], error: messageOf(error) };
      this.held.set(id, kept);
      this.options.onFailure?.({ key, error: kept.error, held: kept.entries.length });
    }
  }

  /**
   * Runs `task` after every earlier task of the same key: the SDK may call `append` again before
   * an earlier call settled, and two drains of one queue would write the same chunk twice.
   */
  private inOrder(id: string, task: () => Promise<void>): Promise<void> {
    const run = (this.tails.get(id) ?? Promise.resolve()).then(task);
    const tail = run.catch(() => {});
    this.tails.set(id, tail);
    // Stryker disable next-line BlockStatement: forgetting a settled tail only frees memory; a later task chained on it starts as at once
    void tail.then(() => {
      // Stryker disable next-line ConditionalExpression: keeping a settled tail only keeps memory; a task chained on it starts at once all the same
      if (this.tails.get(id) === tail) this.tails.delete(id);
    });
    return run;
  }

  /** Writes the held entries of one key chunk by chunk; stops at the first refusal. */
  private async drain(id: string, waiting: HeldEntries): Promise<void> {
    let written = 0;
    while (waiting.entries.length > 0) {
      const chunk = waiting.entries.slice(0, this.batchSize);
      try {
        await this.backend.append(waiting.key, chunk);
      } catch (error) {
        waiting.error = messageOf(error);
        this.options.onFailure?.({ key: waiting.key, error: waiting.error, held: waiting.entries.length });
        return;
      }
      waiting.entries.splice(0, chunk.length);
      written += chunk.length;
    }
    this.held.delete(id);
    this.options.onCaughtUp?.(waiting.key, written);
  }
}
