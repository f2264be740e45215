/**
 * Tombstones: what `flower gc` dropped, so that nothing copies it back. Pure: the run directory's
 * file (runtime/retention/tombstones.ts) and the database's table (store/postgres/tombstones.ts)
 * keep them; this says what one is, how two lists merge, and which sessions they rule out.
 *
 * Why they exist (issue 18, observation 9): a dropped session lives on outside the store that gc
 * emptied: in the agent's own transcripts (Claude Code's JSONL in its config directory), in the
 * `runs/` of another machine, in the database when only the local copy went. Each of those is a
 * source that start-up recovery and the session sync copy from, and the task's books (kept whole
 * by gc) still name the session. Without a record of the drop, the next start restored it.
 *
 * Red lines:
 * - A tombstone is keyed by project key and session id, like the store's own sessions, and names
 *   a main session: its subagent transcripts go with it.
 * - Tombstones only accumulate: merging two lists is their union, and of two tombstones for one
 *   session the earlier drop is kept (the first gc that dropped it is the one to explain).
 * - A record that does not have the shape is left out, never fatal: a tombstone lost only means
 *   a session may come back, which loses nothing.
 */

import type { CollectableKind } from './reachability.js';

export interface Tombstone {
  projectKey: string;
  sessionId: string;
  /** When gc dropped it (epoch ms). */
  droppedAt: number;
  /** Why: the kind of session no resume reaches. */
  kind: CollectableKind;
  /** Its last write before the drop (epoch ms): what made it old enough. */
  lastWrite: number;
  /** The machine gc ran on (a pid would say nothing later). */
  host: string;
}

const KINDS: ReadonlySet<string> = new Set<CollectableKind>(['retired', 'aside', 'archived']);

export const tombstoneKey = (tombstone: Pick<Tombstone, 'projectKey' | 'sessionId'>): string =>
  `${tombstone.projectKey}\n${tombstone.sessionId}`;

/** The tombstone `value` holds, or undefined when it has not the shape. */
export function decodeTombstone(value: unknown): Tombstone | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { projectKey, sessionId, droppedAt, kind, lastWrite, host } = value as Record<string, unknown>;
  if (typeof projectKey !== 'string' || projectKey === '') return undefined;
  if (typeof sessionId !== 'string' || sessionId === '') return undefined;
  if (typeof droppedAt !== 'number' || !Number.isFinite(droppedAt)) return undefined;
  if (typeof kind !== 'string' || !KINDS.has(kind)) return undefined;
  return {
    projectKey,
    sessionId,
    droppedAt,
    kind: kind as CollectableKind,
    lastWrite: typeof lastWrite === 'number' && Number.isFinite(lastWrite) ? lastWrite : 0,
    host: typeof host === 'string' ? host : '',
  };
}

/** The union of the lists, one tombstone per session (the earliest drop), in a stable order. */
export function mergeTombstones(...lists: ReadonlyArray<readonly Tombstone[]>): Tombstone[] {
  const byKey = new Map<string, Tombstone>();
  for (const list of lists)
    for (const tombstone of list) {
      const key = tombstoneKey(tombstone);
      const known = byKey.get(key);
      if (known === undefined || tombstone.droppedAt < known.droppedAt) byKey.set(key, tombstone);
    }
  return [...byKey.values()].sort(
    (a, b) => a.droppedAt - b.droppedAt || (tombstoneKey(a) < tombstoneKey(b) ? -1 : 1),
  );
}

/** The tombstones of `from` that `into` lacks (by session): what one side must send the other. */
export function missingTombstones(from: readonly Tombstone[], into: readonly Tombstone[]): Tombstone[] {
  const known = new Set(into.map(tombstoneKey));
  return from.filter((tombstone) => !known.has(tombstoneKey(tombstone)));
}

/** The session ids of `projectKey` that the tombstones rule out. */
export function droppedIds(tombstones: readonly Tombstone[], projectKey: string): Set<string> {
  return new Set(
    tombstones
      .filter((tombstone) => tombstone.projectKey === projectKey)
      .map((tombstone) => tombstone.sessionId),
  );
}
