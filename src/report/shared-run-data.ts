/**
 * The run's data for `flower status`, `report` and `log` when the task state is kept in PostgreSQL
 * (FLOWER_STORE_URL): the shared record, merged with whatever this machine's run directory holds,
 * in the same `RunData` shape the analysis reads (run-data.ts), so nothing downstream knows where
 * the rows came from.
 *
 * Invariants:
 * - Read-only everywhere: nothing is written to the workspace, the run directory, a temporary
 *   directory or the database; the records and transcripts are read into memory. A machine with no
 *   run directory (or no workspace at all: the path names the task, it need not exist here) shows
 *   the task from the database alone.
 * - The merge is the pull's (runtime/shared/pull.ts), without its writes: the database's rows of a
 *   run replace this machine's rows of that run, rows of runs only this machine has (never sent)
 *   are added after them, a booked row counts once; the database's lineage steps win over local
 *   ones; the wake count is the larger. So a stale run directory never hides another machine's
 *   spend, and unsent local rows are not lost from the view.
 * - Each session's transcript is read from whichever side wrote it last (the larger mtime), so a
 *   session another machine continued shows its newest entries.
 */
import { join } from 'node:path';
import type { SessionKey } from '@anthropic-ai/claude-agent-sdk';
import {
  ledgerCost,
  readStepTranscripts,
  type SessionTranscripts,
  stepLedger,
  type TranscriptReader,
  UNBOUNDED,
} from '../runtime/ledger.js';
import type { LineageRecord } from '../runtime/lineage.js';
import type { PeekedDocument } from '../runtime/locked-json-file.js';
import type { StoredManifestRow } from '../runtime/manifest.js';
import { mergeLineage, mergeManifest } from '../runtime/shared/merge.js';
import { fencedManifestRecords } from '../runtime/shared/pull.js';
import { ASIDE_RUN_DIR } from '../runtime/task-spend.js';
import type { FencedWork, TaskRecord } from '../store/postgres/task-records.js';
import { projectKeyFor } from '../store/session-key.js';
import type { SharedStore } from '../store/shared/shared-store.js';
import {
  type FencedOutWork,
  openRunData,
  type RunData,
  type RunLocation,
  type StoredSession,
} from './run-data.js';

const BOOK_KINDS = ['manifest-run', 'manifest-added', 'lineage-step', 'woke'] as const;

/** The pull's manifest merge (runtime/shared/merge.ts), kept as this machine's file when nothing is known. */
export function mergedManifest(
  records: readonly TaskRecord[],
  local: PeekedDocument<StoredManifestRow[]>,
  taskKnown: boolean,
): PeekedDocument<StoredManifestRow[]> {
  const { rows } = mergeManifest(records, local.document);
  // A torn local file with nothing in the database is still worth saying; otherwise rows are rows.
  if (local.state === 'corrupt' && rows.length === 0) return local;
  if (rows.length === 0 && !taskKnown) return local;
  return { state: 'ok', document: rows };
}

/** The pull's lineage merge, or this machine's file when the database says nothing. */
export function mergedLineage(
  records: readonly TaskRecord[],
  local: PeekedDocument<LineageRecord>,
  workspace: string,
): PeekedDocument<LineageRecord> {
  const merged = mergeLineage(records, local.state === 'ok' ? local.document : undefined, workspace);
  return merged.fromDatabase ? { state: 'ok', document: merged.lineage } : local;
}

/** Reads the task's books and transcripts from `shared` and this machine's run directory. Never writes. */
export async function openSharedRunData(location: RunLocation, shared: SharedStore): Promise<RunData> {
  const { workspace, runDir } = location;
  const local = await openRunData(location);
  try {
    const projectKey = projectKeyFor(workspace);
    const [main, asides, listed, fenced] = await Promise.all([
      shared.records.read({ workspace, runDir }, { kinds: BOOK_KINDS }),
      shared.records.read({ workspace, runDir: join(runDir, ASIDE_RUN_DIR) }, { kinds: BOOK_KINDS }),
      shared.sessions.listSessions(projectKey),
      shared.records.readFenced({ workspace, runDir }),
    ]);
    const remote = new Map<string, StoredSession>(
      listed.map(({ sessionId, mtime }) => [sessionId, { projectKey, sessionId, mtime }]),
    );
    const sessions = new Map<string, StoredSession>(local.store.state === 'ok' ? local.store.sessions : []);
    for (const [id, session] of remote) {
      const here = sessions.get(id);
      if (here === undefined || here.mtime <= session.mtime) sessions.set(id, session);
    }
    const fromDatabase = (id: string) => sessions.get(id) === remote.get(id) && remote.has(id);
    const reader: TranscriptReader = {
      load: (key: SessionKey) => shared.sessions.load(key),
      listSubkeys: (key) => shared.sessions.listSubkeys(key),
    };
    return {
      ...local,
      // As the pull merges them: a fenced-out owner's rows are books of real spend, marked.
      manifest: mergedManifest(
        [...main.records, ...fencedManifestRecords(fenced)],
        local.manifest,
        main.task !== undefined,
      ),
      asides: mergedManifest(asides.records, local.asides, asides.task !== undefined),
      lineage: mergedLineage(main.records, local.lineage, workspace),
      ...(fenced.entries.length + fenced.changes.length > 0 ? { fencedOut: fencedOutWork(fenced) } : {}),
      store: sessions.size > 0 || local.store.state === 'ok' ? { state: 'ok', sessions } : local.store,
      async transcripts(sessionIds) {
        const here = sessionIds.filter((id) => !fromDatabase(id));
        const there = sessionIds.filter(fromDatabase);
        const found: SessionTranscripts[] = [
          ...(await local.transcripts(here)),
          ...(there.length > 0 ? await readStepTranscripts(reader, projectKey, there) : []),
        ];
        const order = new Map(sessionIds.map((id, index) => [id, index]));
        return found.sort((a, b) => (order.get(a.sessionId) ?? 0) - (order.get(b.sessionId) ?? 0));
      },
      close() {
        local.close();
      },
    };
  } catch (error) {
    local.close();
    throw error;
  }
}

/** The fenced-out owners' work: counted, and its responses priced once each, by the ledger's rules. */
export function fencedOutWork(fenced: FencedWork): FencedOutWork {
  const bySession = new Map<string, SessionTranscripts>();
  for (const kept of fenced.entries) {
    const session = bySession.get(kept.sessionId) ?? { sessionId: kept.sessionId, main: [], subagents: [] };
    bySession.set(kept.sessionId, session);
    if (kept.subpath === '') (session.main as unknown[]).push(kept.entry);
    else {
      let subagent = session.subagents.find((each) => each.subpath === kept.subpath);
      if (subagent === undefined) {
        subagent = { subpath: kept.subpath, agentId: kept.subpath.replace(/^.*agent-/, ''), entries: [] };
        (session.subagents as unknown[]).push(subagent);
      }
      (subagent.entries as unknown[]).push(kept.entry);
    }
  }
  const sessions = [...bySession.values()];
  return {
    entries: fenced.entries.length,
    sessions: sessions.map((session) => session.sessionId),
    costUsd: ledgerCost(stepLedger(sessions, UNBOUNDED)),
    changes: fenced.changes.length,
  };
}
