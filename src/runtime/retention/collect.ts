/**
 * `flower gc`'s work: over each session store of a task, drop the sessions no resume can reach
 * (store/retention/reachability.ts decides which), measuring what each one held first.
 *
 * Red lines:
 * - The caller holds the task (`lockTask`), so no flower of this task writes a session meanwhile.
 * - A session is dropped whole, through the backend's own `delete` (its subagent transcripts and
 *   summary go with it); one that fails stops the collection with the backend's one-line error
 *   (what was dropped before it stays dropped: each drop is whole on its own).
 * - `dryRun` reads only: the same selection and the same figures, nothing deleted.
 * - Manifest rows are never touched: they are the books (spend, report, budget), and they stay
 *   whole after their transcripts are gone.
 * - A drop is recorded (`record`: the tombstones, store/retention/tombstones.ts) before the first
 *   session of a store is deleted, so no drop is ever unrecorded: a collection cut off halfway
 *   leaves tombstones of sessions still stored, which only keeps them from being copied around
 *   until the next gc drops them; the other order could bring back what was dropped.
 */
import type { SessionKey, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import type { StoredTranscript } from '../../store/backend.js';
import {
  type ClassifiedSession,
  COLLECTABLE_KINDS,
  type CollectableKind,
  classifySessions,
  type StoredSessionRef,
  type TaskReferences,
} from '../../store/retention/reachability.js';

/** The part of a session backend collection uses (both backends have it). */
export interface CollectableStore {
  listSessions(projectKey: string): Promise<Array<{ sessionId: string; mtime: number }>>;
  listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]>;
  load(key: SessionKey): Promise<SessionStoreEntry[] | null>;
  readTranscript?(key: SessionKey): Promise<StoredTranscript | null>;
  delete(key: SessionKey): Promise<void>;
}

export interface StoreToCollect {
  /** For the summary: `runs/sessions.db`, the masked URL, … */
  label: string;
  store: CollectableStore;
  /** The project keys the task's sessions are filed under. */
  projectKeys: readonly string[];
  /** The aside run directory's own store: its sessions that the task's books do not name are asides. */
  allAsides?: boolean;
}

/** What the dropped sessions of one kind held in one store. */
export interface Freed {
  /** Session ids (the same session may be dropped from two stores: its local and its shared copy). */
  sessions: string[];
  /** Main and subagent transcripts. */
  transcripts: number;
  entries: number;
  /** Bytes of the entries as stored (their JSON text). */
  bytes: number;
}

export interface StoreOutcome {
  label: string;
  freed: Record<CollectableKind, Freed>;
  /** Session ids kept, by why. */
  kept: { live: string[]; recent: string[]; unclaimed: string[] };
}

/** A session about to be dropped, and why. */
export interface DroppedSession {
  session: StoredSessionRef;
  kind: CollectableKind;
}

export interface CollectOptions {
  references: TaskReferences;
  /** Sessions last written before this (epoch ms) may go. */
  cutoffMs: number;
  dryRun: boolean;
  /** Records the drops of one store before any of them is deleted (not called on a dry run). */
  record?: (drops: readonly DroppedSession[]) => Promise<void> | void;
}

function noneFreed(): Record<CollectableKind, Freed> {
  const freed = {} as Record<CollectableKind, Freed>;
  for (const kind of COLLECTABLE_KINDS) freed[kind] = { sessions: [], transcripts: 0, entries: 0, bytes: 0 };
  return freed;
}

async function readWhole(
  store: CollectableStore,
  key: SessionKey,
): Promise<{ entries: number; bytes: number }> {
  if (store.readTranscript) {
    const stored = await store.readTranscript(key);
    if (stored === null) return { entries: 0, bytes: 0 };
    const bytes = stored.entries.reduce((sum, entry) => sum + Buffer.byteLength(JSON.stringify(entry)), 0);
    return { entries: stored.entries.length + stored.unreadable.length, bytes };
  }
  const entries = (await store.load(key)) ?? [];
  return {
    entries: entries.length,
    bytes: entries.reduce((sum, entry) => sum + Buffer.byteLength(JSON.stringify(entry)), 0),
  };
}

/** The transcripts, entries and bytes one main session holds with its subagents. */
async function measure(store: CollectableStore, session: StoredSessionRef): Promise<Omit<Freed, 'sessions'>> {
  const main = { projectKey: session.projectKey, sessionId: session.sessionId };
  const subpaths = await store.listSubkeys(main);
  const sizes = await Promise.all([
    readWhole(store, main),
    ...subpaths.map((subpath) => readWhole(store, { ...main, subpath })),
  ]);
  return {
    transcripts: sizes.length,
    entries: sizes.reduce((sum, size) => sum + size.entries, 0),
    bytes: sizes.reduce((sum, size) => sum + size.bytes, 0),
  };
}

/** The main sessions `store` holds under the task's project keys. */
export async function listTaskSessions(target: StoreToCollect): Promise<StoredSessionRef[]> {
  const sessions: StoredSessionRef[] = [];
  for (const projectKey of new Set(target.projectKeys))
    for (const { sessionId, mtime } of await target.store.listSessions(projectKey))
      sessions.push({ projectKey, sessionId, mtime });
  return sessions;
}

/** Classifies and (unless `dryRun`) drops the unreachable sessions of one store. */
export async function collectStore(target: StoreToCollect, options: CollectOptions): Promise<StoreOutcome> {
  const sessions = await listTaskSessions(target);
  // The asides' own store: what the task's books do not name is a side question's session.
  const references: TaskReferences = target.allAsides
    ? {
        ...options.references,
        asides: new Set([
          ...options.references.asides,
          ...sessions.map((s) => s.sessionId).filter((id) => !options.references.named?.has(id)),
        ]),
      }
    : options.references;
  const classified: ClassifiedSession[] = classifySessions(sessions, references, options.cutoffMs);
  const outcome: StoreOutcome = {
    label: target.label,
    freed: noneFreed(),
    kept: { live: [], recent: [], unclaimed: [] },
  };
  const drops: DroppedSession[] = [];
  for (const { session, verdict } of classified)
    if (verdict.drop) drops.push({ session, kind: verdict.kind });
  if (!options.dryRun && drops.length > 0) await options.record?.(drops);
  for (const { session, verdict } of classified) {
    if (!verdict.drop) {
      outcome.kept[verdict.reason].push(session.sessionId);
      continue;
    }
    const size = await measure(target.store, session);
    if (!options.dryRun)
      await target.store.delete({ projectKey: session.projectKey, sessionId: session.sessionId });
    const freed = outcome.freed[verdict.kind];
    freed.sessions.push(session.sessionId);
    freed.transcripts += size.transcripts;
    freed.entries += size.entries;
    freed.bytes += size.bytes;
  }
  return outcome;
}
