/**
 * Which stored sessions no resume can reach any more, and may therefore be dropped (`flower gc`).
 * Pure: the caller gathers what the task's records say (runtime/retention/task-references.ts) and
 * what the store holds; this decides.
 *
 * Red lines:
 * - A session a live reference names (a lineage of the task, an in-flight marker that the next
 *   start books from the transcript) is never dropped, whatever else is said about it.
 * - A session written at or after the cutoff is never dropped: "older than N days" is about the
 *   session's last write, so a generation retired a minute ago stays for N days.
 * - Only sessions positively known to be of a collectable kind are dropped. A session nothing
 *   names (a library caller's, another workspace's, one whose row was never written) is kept:
 *   not knowing who reaches it is not the same as knowing nobody does.
 */

/** The kinds of sessions no resume reaches. */
export type CollectableKind = 'retired' | 'aside' | 'archived';

/** In the order they are reported. */
export const COLLECTABLE_KINDS: readonly CollectableKind[] = ['retired', 'aside', 'archived'];

/** One main session as the store lists it. */
export interface StoredSessionRef {
  projectKey: string;
  sessionId: string;
  /** Epoch milliseconds of its last write. */
  mtime: number;
}

/** What the task's records say about its sessions, by session id. */
export interface TaskReferences {
  /** Sessions something live still resumes or books from: never dropped. */
  live: ReadonlySet<string>;
  /** Sessions a handoff retired (a manifest row's `retired`). */
  retired: ReadonlySet<string>;
  /** Sessions of side questions (the aside books, or the aside run directory's own store). */
  asides: ReadonlySet<string>;
  /** Sessions of tasks that `--new` archived (their archived lineage). */
  archived: ReadonlySet<string>;
  /**
   * Every session the task's own books name (its manifest rows, lineage, archived lineages): a
   * copy of one of these in the asides' store is not an aside (with a shared store, the asides'
   * run directory is brought up to date with every session of the workspace).
   */
  named?: ReadonlySet<string>;
}

export type RetentionVerdict =
  | { drop: true; kind: CollectableKind }
  | { drop: false; reason: 'live' | 'recent' | 'unclaimed' };

export interface ClassifiedSession {
  session: StoredSessionRef;
  verdict: RetentionVerdict;
}

/** The kind a session is known to be, if any (an aside that a handoff retired counts as an aside). */
function kindOf(sessionId: string, references: TaskReferences): CollectableKind | undefined {
  if (references.asides.has(sessionId)) return 'aside';
  if (references.retired.has(sessionId)) return 'retired';
  if (references.archived.has(sessionId)) return 'archived';
  return undefined;
}

/** Decides every session: dropped (with its kind) or kept (with why). `cutoffMs`: epoch ms. */
export function classifySessions(
  sessions: readonly StoredSessionRef[],
  references: TaskReferences,
  cutoffMs: number,
): ClassifiedSession[] {
  return sessions.map((session): ClassifiedSession => {
    if (references.live.has(session.sessionId)) return { session, verdict: { drop: false, reason: 'live' } };
    const kind = kindOf(session.sessionId, references);
    if (kind === undefined) return { session, verdict: { drop: false, reason: 'unclaimed' } };
    if (!(session.mtime < cutoffMs)) return { session, verdict: { drop: false, reason: 'recent' } };
    return { session, verdict: { drop: true, kind } };
  });
}
