/**
 * What a runtime settles before its first step, left over by earlier processes in the same run
 * directory (`Runtime.prepare`):
 * 1. transcript entries that never reached the session store are copied in (`transcript-safety`),
 *    and those of killed resumed attempts from the copies the SDK left in the temp directory
 *    (`store/transcript-recovery`), so the books of 3 count every reply the endpoint served;
 * 2. a damaged `lineage.json` is rebuilt from the manifest, the in-flight markers and the store
 *    (`lineage-rebuild`), and the choice is said in one line; it runs before the killed steps are
 *    booked (3), so their markers are what still names their sessions;
 * 3. steps of processes killed with SIGKILL get their manifest rows from the store (`in-flight`).
 *
 * Invariants: runs once per runtime; never throws (each part warns instead); the manifest is read
 * without its lock, and only killed processes' rows are added to it; a resume copy is read and
 * removed only for a session whose in-flight marker names a process that is gone (a live one may
 * still be writing it).
 */

import { tmpdir } from 'node:os';
import type { SessionKey } from '@anthropic-ai/claude-agent-sdk';
import type { SqliteSessionStore } from '../store/sqlite-session-store.js';
import { recoverResumedSince, removeResumeCopy, resumeCopiesOf } from '../store/transcript-recovery.js';
import { bookKilledAttempts, type InFlightMarker, inFlightMarkers, killedAttempts } from './in-flight.js';
import { readStepTranscripts, stepSessions } from './ledger.js';
import type { Lineage } from './lineage.js';
import { firstPromptText, type LineageChoice, rebuildLineage } from './lineage-rebuild.js';
import { peekManifest, type StoredManifestRow } from './manifest.js';
import type { TranscriptSafety } from './transcript-safety.js';

export interface Leftovers {
  runDir: string;
  projectKey: string;
  store: SqliteSessionStore;
  lineage: Lineage;
  transcripts: TranscriptSafety;
  onWarning?: (line: string) => void;
  onVerbose?: (line: string) => void;
}

function describeChoices(path: string, choices: readonly LineageChoice[]): string {
  if (choices.length === 0)
    return `${path} could not be rebuilt: no step in the manifest has a session the store still holds, so the steps start new sessions.`;
  const parts = choices.map(
    (choice) => `${choice.step} continues session ${choice.sessionId} (${choice.reason})`,
  );
  return `Rebuilt ${path} from the manifest and the session store: ${parts.join('; ')}.`;
}

async function rebuild(leftovers: Leftovers, rows: readonly StoredManifestRow[]): Promise<void> {
  const { store, projectKey, lineage } = leftovers;
  const sessions = await store.listSessions(projectKey);
  const firstPrompts = new Map<string, string | undefined>();
  const firstPromptOf = (sessionId: string) => {
    if (!firstPrompts.has(sessionId))
      firstPrompts.set(sessionId, firstPromptText(store.loadRaw({ projectKey, sessionId }) ?? []));
    return firstPrompts.get(sessionId);
  };
  const choices = rebuildLineage(rows, sessions, firstPromptOf, inFlightMarkers(leftovers.runDir));
  for (const choice of choices) lineage.remember(choice.step, choice.sessionId);
  leftovers.onWarning?.(describeChoices(lineage.path, choices));
}

/**
 * A resumed session's binary writes into the SDK's resume copy, not the agent's config directory,
 * and a SIGKILL leaves that copy behind with the last replies the store never got. Copies what
 * each killed attempt wrote there into the store, then removes the copy as the SDK would have.
 */
async function recoverResumeCopies(leftovers: Leftovers, killed: readonly InFlightMarker[]): Promise<void> {
  const { store, projectKey } = leftovers;
  let entries = 0;
  const sessions = new Set<string>();
  for (const marker of killed) {
    for (const copy of resumeCopiesOf(tmpdir(), projectKey, marker.sessionId)) {
      try {
        const recovered = await recoverResumedSince(
          store,
          copy.projectsRoot,
          projectKey,
          marker.sessionId,
          marker.startedAt,
        );
        entries += recovered.entries;
        if (recovered.entries > 0) sessions.add(marker.sessionId);
        removeResumeCopy(copy.directory);
      } catch (error) {
        leftovers.onVerbose?.(
          `Could not compare session ${marker.sessionId} with ${copy.directory}: ${(error as Error).message}`,
        );
      }
    }
  }
  if (entries > 0)
    leftovers.onWarning?.(
      `The session store was missing ${entries} transcript entr${entries === 1 ? 'y' : 'ies'} of ${sessions.size} resumed session${sessions.size === 1 ? '' : 's'} whose process was killed; they were copied back from the copy Claude Code was writing in ${tmpdir()}.`,
    );
}

export async function settleLeftovers(leftovers: Leftovers): Promise<void> {
  const rows = peekManifest(leftovers.runDir).document;
  const known = [...Object.values(leftovers.lineage.steps), ...rows.flatMap(stepSessions)];
  const killed = killedAttempts(leftovers.runDir);
  await leftovers.transcripts.recoverAtStart(
    known,
    killed.map((marker) => marker.sessionId),
  );
  await recoverResumeCopies(leftovers, killed);
  if (leftovers.lineage.damaged) {
    try {
      await rebuild(leftovers, rows);
    } catch (error) {
      leftovers.onWarning?.(`Could not rebuild ${leftovers.lineage.path}: ${(error as Error).message}`);
    }
  }
  const { store, projectKey } = leftovers;
  const reader = {
    load: async (key: SessionKey) => store.loadRaw(key),
    listSubkeys: (key: { projectKey: string; sessionId: string }) => store.listSubkeys(key),
  };
  await bookKilledAttempts(
    leftovers.runDir,
    rows,
    {
      transcripts: async (sessionId) => (await readStepTranscripts(reader, projectKey, [sessionId]))[0],
      context: (sessionId) => store.lastContext(projectKey, sessionId),
    },
    {
      ...(leftovers.onWarning ? { onWarning: leftovers.onWarning } : {}),
      ...(leftovers.onVerbose ? { onVerbose: leftovers.onVerbose } : {}),
    },
  );
}
