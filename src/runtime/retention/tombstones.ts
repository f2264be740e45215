/**
 * The run directory's tombstones: `<run dir>/dropped-sessions.json`, the sessions `flower gc`
 * dropped (store/retention/tombstones.ts says what one is and why they exist), read by start-up
 * recovery (transcript-safety.ts) and kept level with the database's by the pull (shared/pull.ts).
 *
 * Red lines:
 * - Written under the file's advisory lock and merged (locked-json-file.ts): gc and the pull of an
 *   aside may add at once, and neither loses the other's. Owner-only, like the rest of `runs/`.
 * - Readers never lock and never repair: a file that cannot be read counts as no tombstones (the
 *   worst outcome is a dropped session copied back, which loses nothing), and the next writer sets
 *   it aside with a warning.
 * - Kept for good: a tombstone is a few dozen bytes, and the agent's own copy of the session may
 *   outlive any period we would pick (gc leaves those files alone, see gc-action.ts).
 * - With a database (`settleTombstones`, at the pull): both sides end with the union, and the
 *   local store loses its copies of dropped sessions, except one a lineage or an in-flight marker
 *   of this run directory still names, which is kept and synced as before: a tombstone never
 *   costs a live session (gc never drops one, so that only happens when the books contradict
 *   each other, and then the data wins).
 */
import { join } from 'node:path';
import {
  decodeTombstone,
  droppedIds,
  mergeTombstones,
  missingTombstones,
  type Tombstone,
} from '../../store/retention/tombstones.js';
import type { SharedStore } from '../../store/shared/shared-store.js';
import { inFlightMarkers } from '../in-flight.js';
import { peekLineage } from '../lineage.js';
import { type JsonDocumentCodec, peekJsonDocument, updateJsonDocument } from '../locked-json-file.js';

export const TOMBSTONES_FILE = 'dropped-sessions.json';

interface TombstonesDocument {
  dropped: Tombstone[];
}

const tombstonesCodec: JsonDocumentCodec<TombstonesDocument> = {
  empty: () => ({ dropped: [] }),
  decode: (value) => {
    const dropped = (value as { dropped?: unknown } | null)?.dropped;
    if (!Array.isArray(dropped)) return undefined;
    return {
      dropped: dropped.map(decodeTombstone).filter((tombstone) => tombstone !== undefined),
    };
  },
};

export const tombstonesPath = (runDir: string): string => join(runDir, TOMBSTONES_FILE);

/** The run directory's tombstones; none when the file is missing or cannot be read. */
export function readTombstones(runDir: string): Tombstone[] {
  return peekJsonDocument(tombstonesPath(runDir), tombstonesCodec).document.dropped;
}

/** Adds `tombstones` to the run directory's file (merged under its lock); returns the whole list. */
export function addTombstones(
  runDir: string,
  tombstones: readonly Tombstone[],
  onWarning?: (line: string) => void,
): Tombstone[] {
  return updateJsonDocument(
    tombstonesPath(runDir),
    tombstonesCodec,
    (current) => ({ dropped: mergeTombstones(current.dropped, tombstones) }),
    onWarning ? { onWarning } : {},
  ).dropped;
}

/** The part of the local session store the pull's tombstones touch. */
export interface DroppableStore {
  hasSession(projectKey: string, sessionId: string): boolean;
  delete(key: { projectKey: string; sessionId: string }): Promise<void>;
}

/**
 * At the pull: makes the run directory's tombstones and the database's the same (their union),
 * drops the local copies of dropped sessions and returns their ids, for the sync to leave out
 * (a session this run directory still names as live is neither: see the header).
 */
export async function settleTombstones(
  shared: Pick<SharedStore, 'tombstones'>,
  runDir: string,
  projectKey: string,
  local: DroppableStore,
  options: { onWarning?: (line: string) => void; onVerbose?: (line: string) => void } = {},
): Promise<Set<string>> {
  const stored = await shared.tombstones.list(projectKey);
  const here = readTombstones(runDir);
  const up = missingTombstones(here, stored).filter((tombstone) => tombstone.projectKey === projectKey);
  const down = missingTombstones(stored, here);
  if (up.length > 0) await shared.tombstones.add(up);
  if (down.length > 0) addTombstones(runDir, down, options.onWarning);
  const dropped = droppedIds(mergeTombstones(stored, here), projectKey);
  const live = new Set([
    ...Object.values(peekLineage(runDir).document.steps),
    ...inFlightMarkers(runDir).map((marker) => marker.sessionId),
  ]);
  for (const sessionId of dropped) {
    if (live.has(sessionId)) {
      dropped.delete(sessionId);
      continue;
    }
    if (!local.hasSession(projectKey, sessionId)) continue;
    await local.delete({ projectKey, sessionId });
    options.onVerbose?.(`Session ${sessionId} was dropped by flower gc; its copy in ${runDir} is gone too.`);
  }
  return dropped;
}
