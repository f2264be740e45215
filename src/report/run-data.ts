/**
 * Every read of a run's data for `flower status`, `report` and `log`, in one place: the manifest
 * (and the asides' one), the lineage, the session store, the workbench and its notes. Everything
 * else in `src/report/` is pure functions over what this module returns.
 *
 * Invariants:
 * - Read-only. Nothing here takes a lock, sets a corrupt file aside or creates a file: a flower may
 *   be writing the directory right now, and a viewer must not change what it looks at. A corrupt
 *   manifest is reported as corrupt and left as it is; the next flower run sets it aside.
 * - The session store is opened read-only (`store/sqlite-reader.ts`) and read only through
 *   `TranscriptReader` and the session list, so another backend (PostgreSQL, issue 14) can take
 *   its place here without touching the analysis.
 * - Nothing throws for a missing or broken file: each source says what state it is in, and the
 *   command decides what it can still show.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { SessionKey } from '@anthropic-ai/claude-agent-sdk';
import { type InFlightMarker, inFlightMarkers } from '../runtime/in-flight.js';
import { readStepTranscripts, type SessionTranscripts, type TranscriptReader } from '../runtime/ledger.js';
import type { LineageRecord } from '../runtime/lineage.js';
import { peekLineage } from '../runtime/lineage.js';
import type { PeekedDocument } from '../runtime/locked-json-file.js';
import { MANIFEST_FILE, peekManifest, type StoredManifestRow } from '../runtime/manifest.js';
import { holderIsGone, localProcesses, processIsAlive } from '../runtime/process-liveness.js';
import { TASK_LOCK_FILE } from '../runtime/task-lock.js';
import { ASIDE_RUN_DIR } from '../runtime/task-spend.js';
import type { SqliteSessionReader } from '../store/sqlite-reader.js';

export interface RunLocation {
  /** Absolute workspace. */
  workspace: string;
  /** Absolute run directory. */
  runDir: string;
}

/** Files of one workbench directory. */
export interface FileCount {
  files: number;
  bytes: number;
}

export interface WorkbenchData {
  root: string;
  scripts: FileCount;
  artifacts: FileCount;
  notes: FileCount;
  spill: FileCount;
  /** The brief, the goal and the Q&A log as text, when they exist. */
  brief?: string;
  goal?: string;
  qaLog?: string;
}

/** A main session the store holds, with the project it is filed under. */
export interface StoredSession {
  projectKey: string;
  sessionId: string;
  /** Epoch milliseconds of its last write. */
  mtime: number;
}

export type StoreState =
  | { state: 'missing' }
  | { state: 'unreadable'; reason: string }
  | { state: 'ok'; sessions: Map<string, StoredSession> };

/**
 * A process at work on the task, as its own record says (the task lock, an in-flight marker).
 * `alive` is whether that process still runs here; null when it is on another host (its pid
 * means nothing here).
 */
export interface TaskWorker {
  pid: number;
  host: string;
  /** Epoch seconds it started (the lock) or started the attempt (a marker). */
  since: number;
  alive: boolean | null;
}

/** An attempt that has no manifest row yet: the marker `runs/in-flight/<session>.json`. */
export interface InFlightAttempt extends TaskWorker {
  sessionId: string;
  step: string;
}

/** Everything but the transcripts, which are read on demand (`transcripts`). */
export interface RunData {
  location: RunLocation;
  manifest: PeekedDocument<StoredManifestRow[]>;
  /** Earlier corrupt manifests a flower run set aside (`manifest.json.corrupt-…`), file names. */
  setAside: string[];
  asides: PeekedDocument<StoredManifestRow[]>;
  lineage: PeekedDocument<LineageRecord>;
  store: StoreState;
  /** The workbench, when one exists (`.flower/` in the workspace, or the `--isolate` one beside it). */
  workbench: WorkbenchData | undefined;
  /** Main and subagent transcripts of these sessions, as stored; unknown ids are left out. */
  transcripts(sessionIds: readonly string[]): Promise<SessionTranscripts[]>;
  /**
   * What owners that lost the task sent after that, kept aside by the database (a task in
   * PostgreSQL only; store/postgres/task-lease.ts): never part of the books or the lineage.
   */
  fencedOut?: FencedOutWork;
  /** The live holder of `runs/task.lock` (a flower working on the task now), if any. */
  holder?: TaskWorker;
  /** Attempts running now or killed before they wrote a row (their in-flight markers). */
  inFlight?: InFlightAttempt[];
  close(): void;
}

/** Work of fenced-out owners, as the report shows it. */
export interface FencedOutWork {
  /** Transcript entries kept aside, and the sessions they belong to. */
  entries: number;
  sessions: string[];
  /** Their responses priced once each (null: a model not in the price table). */
  costUsd: number | null;
  /** Record changes kept aside (manifest rows, lineage, markers). */
  changes: number;
}

function countFiles(directory: string): FileCount {
  const total: FileCount = { files: 0, bytes: 0 };
  const visit = (path: string) => {
    let names: string[];
    try {
      names = readdirSync(path);
    } catch {
      return;
    }
    for (const name of names) {
      if (name.startsWith('.')) continue;
      const child = join(path, name);
      try {
        const stat = statSync(child);
        if (stat.isDirectory()) visit(child);
        else if (stat.isFile()) {
          total.files += 1;
          total.bytes += stat.size;
        }
      } catch {
        // Vanished while we looked: a flower is working here.
      }
    }
  };
  visit(directory);
  return total;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** The workbench of `workspace`: `.flower/` inside it, else the `--isolate` one at `<parent>/.flower-<name>`. */
function findWorkbench(workspace: string): WorkbenchData | undefined {
  const candidates = [join(workspace, '.flower'), join(dirname(workspace), `.flower-${basename(workspace)}`)];
  const root = candidates.find((candidate) => existsSync(candidate));
  if (root === undefined) return undefined;
  const notes = join(root, 'notes');
  const data: WorkbenchData = {
    root,
    scripts: countFiles(join(root, 'scripts')),
    artifacts: countFiles(join(root, 'artifacts')),
    notes: countFiles(notes),
    spill: countFiles(join(root, 'spill')),
  };
  const brief = readText(join(notes, 'brief.md'));
  const goal = readText(join(notes, 'goal.md'));
  const qaLog = readText(join(notes, 'qa-log.md'));
  if (brief !== undefined) data.brief = brief;
  if (goal !== undefined) data.goal = goal;
  if (qaLog !== undefined) data.qaLog = qaLog;
  return data;
}

function setAsideManifests(runDir: string): string[] {
  try {
    return readdirSync(runDir)
      .filter((name) => name.startsWith(`${MANIFEST_FILE}.corrupt-`))
      .sort();
  } catch {
    return [];
  }
}

function errorText(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
}

/** The holder `runs/task.lock` names, when it is not certainly gone. Reads only. */
function lockHolder(runDir: string): TaskWorker | undefined {
  const text = readText(join(runDir, TASK_LOCK_FILE));
  if (text === undefined) return undefined;
  try {
    const record = JSON.parse(text) as { pid?: unknown; host?: unknown; startedAt?: unknown };
    if (typeof record.pid !== 'number' || typeof record.host !== 'string') return undefined;
    const holder = record as { pid: number; host: string; bootId?: string; processStart?: string };
    if (holderIsGone(holder)) return undefined;
    const since = typeof record.startedAt === 'string' ? Date.parse(record.startedAt) / 1000 : Number.NaN;
    const here = localProcesses().host === holder.host;
    return {
      pid: holder.pid,
      host: holder.host,
      since: Number.isFinite(since) ? since : 0,
      alive: here ? true : null,
    };
  } catch {
    return undefined;
  }
}

/** The in-flight markers, each with whether its process still runs here. Reads only. */
export function inFlightAttempts(
  markers: readonly InFlightMarker[],
  here = localProcesses(),
): InFlightAttempt[] {
  return markers.map((marker) => ({
    sessionId: marker.sessionId,
    step: marker.step,
    pid: marker.pid,
    host: marker.host,
    since: marker.startedAt,
    alive: marker.host === here.host ? processIsAlive(marker.pid, here) : null,
  }));
}

/** Opens the store read-only; the native binding is loaded only here, when a command needs it. */
async function openStore(file: string): Promise<{ store?: SqliteSessionReader; state: StoreState }> {
  if (!existsSync(file)) return { state: { state: 'missing' } };
  let store: SqliteSessionReader | undefined;
  try {
    const { SqliteSessionReader } = await import('../store/sqlite-reader.js');
    store = new SqliteSessionReader(file);
    const sessions = new Map<string, StoredSession>();
    for (const projectKey of store.projects()) {
      for (const { sessionId, mtime } of store.listSessions(projectKey)) {
        const known = sessions.get(sessionId);
        if (known === undefined || known.mtime < mtime)
          sessions.set(sessionId, { projectKey, sessionId, mtime });
      }
    }
    return { store, state: { state: 'ok', sessions } };
  } catch (error) {
    store?.close();
    return { state: { state: 'unreadable', reason: errorText(error) } };
  }
}

/** Reads a run directory's books and opens its store for reading. Never throws, never writes. */
export async function openRunData(location: RunLocation): Promise<RunData> {
  const { runDir, workspace } = location;
  const { store, state } = await openStore(join(runDir, 'sessions.db'));
  const reader: TranscriptReader | undefined = store && {
    load: async (key: SessionKey) => store.load(key),
    listSubkeys: async (key) => store.listSubkeys(key),
  };
  return {
    location,
    manifest: peekManifest(runDir),
    setAside: setAsideManifests(runDir),
    asides: peekManifest(join(runDir, ASIDE_RUN_DIR)),
    lineage: peekLineage(runDir),
    store: state,
    workbench: findWorkbench(workspace),
    holder: lockHolder(runDir),
    inFlight: inFlightAttempts(inFlightMarkers(runDir)),
    async transcripts(sessionIds) {
      if (reader === undefined || state.state !== 'ok') return [];
      const byProject = new Map<string, string[]>();
      for (const id of sessionIds) {
        const session = state.sessions.get(id);
        if (session === undefined) continue;
        byProject.set(session.projectKey, [...(byProject.get(session.projectKey) ?? []), id]);
      }
      const found: SessionTranscripts[] = [];
      for (const [projectKey, ids] of byProject)
        found.push(...(await readStepTranscripts(reader, projectKey, ids)));
      const order = new Map(sessionIds.map((id, index) => [id, index]));
      return found.sort((a, b) => (order.get(a.sessionId) ?? 0) - (order.get(b.sessionId) ?? 0));
    },
    close() {
      store?.close();
    },
  };
}
