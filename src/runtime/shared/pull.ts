/**
 * The pull: before a process works on a task whose state is in PostgreSQL, its run directory is
 * brought up to date from the database, and the database from the run directory. A machine with
 * no `runs/` at all ends up with an equivalent one (sessions.db, manifest.json, lineage.json,
 * in-flight markers, endpoints.json, spill files); a machine whose earlier process could not send
 * everything sends it now.
 *
 * Order: first the outbox (what an earlier process here changed and never had confirmed) is sent,
 * so that after it the database is the newer side of every record it holds; then
 * - records the database has replace or join the local files (a run's rows, a step's session, a
 *   marker, an endpoint, a spill file);
 * - what only the run directory has (state from before the store was set, a booked row, a file
 *   written while the database was away and the outbox lost) is sent up;
 * - sessions are reconciled by entry counts per key, both ways (store/shared/session-sync.ts),
 *   except those `flower gc` dropped: both sides' tombstones are merged into each, and the local
 *   copies of those sessions are dropped too (runtime/retention/tombstones.ts, `settleTombstones`).
 *
 * Invariants:
 * - Idempotent: a second pull right after the first changes nothing on either side.
 * - Nothing pulled is emitted as this process's change (task-changes.ts), so it is never sent back.
 * - A lineage.json written for another workspace path is not sent up (its sessions belong to that
 *   path); the Runtime says so in one line. When the database has no task for this path but one for
 *   a workspace of the same base name, that is said in one line (`onWarning`) with how to continue,
 *   and the task starts fresh here.
 * - Throws (one line, `PostgresStoreError`) only when the database fails; local files it could
 *   not write are warnings.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { SessionKey, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { writeFileAtomic } from '../../config/atomic-file.js';
import { PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE } from '../../config/private-files.js';
import type { Fence } from '../../store/postgres/task-lease.js';
import {
  type FencedWork,
  type TaskRecord,
  type TaskRecordChange,
  taskNameOf,
} from '../../store/postgres/task-records.js';
import { projectKeyFor } from '../../store/session-key.js';
import { type EntryCount, type SessionSyncReport, syncSessions } from '../../store/shared/session-sync.js';
import type { SharedStore } from '../../store/shared/shared-store.js';
import type { TaskRef } from '../../store/shared/task-lock-types.js';
import { spillDirectory } from '../../store/spill.js';
import { countEntries } from '../../store/sqlite-database.js';
import { SqliteSessionStore } from '../../store/sqlite-session-store.js';
import { defaultTrimPolicy } from '../../store/trim.js';
import { addEndpoints, readEndpoints } from '../endpoint-history.js';
import { type InFlightMarker, inFlightMarkers, restoreInFlight } from '../in-flight.js';
import { peekLineage, replaceLineage } from '../lineage.js';
import { peekManifest, replaceManifestRows } from '../manifest.js';
import { settleTombstones } from '../retention/tombstones.js';
import { prepareRunDirectory } from '../run-directory.js';
import { mergeLineage, mergeManifest } from './merge.js';
import { clearOutbox, readOutbox } from './outbox.js';
import { addedRowKey } from './records.js';

export interface PullOptions {
  /**
   * The lease this process holds: every change the pull sends is fenced by it. What the run
   * directory holds from before (outbox lines, local-only records, transcript entries the
   * database lacks) is sent as the work of `previousEpoch` (this copy's last lease), so that the
   * database keeps it aside, instead of merging it, when another copy of the task worked since.
   */
  fence?: Fence;
  previousEpoch?: number | undefined;
  onWarning?: (line: string) => void;
  onVerbose?: (line: string) => void;
  /** Where spill files live, relative to the workspace (default `.flower/spill`). */
  spillDirname?: string;
}

export interface PullReport {
  /** Changes an earlier process left in the outbox, sent first. */
  replayed: number;
  /** Records brought into the run directory, and sent up from it. */
  recordsPulled: number;
  recordsPushed: number;
  sessions: SessionSyncReport;
  /** Changes and transcript entries of this run directory kept aside as overtaken work. */
  keptAside: { changes: number; entries: number };
  /** Set when the database holds this task for another workspace path (said in one line). */
  foreignWorkspace?: string;
  ms: number;
}

const isSpillFile = (name: string) => /^[0-9a-f]{16}\.txt$/.test(name);

/** Brings `task`'s run directory and the database to the same state (see the module header). */
export async function pullTaskState(
  shared: SharedStore,
  task: TaskRef,
  options: PullOptions = {},
): Promise<PullReport> {
  const started = performance.now();
  const workspace = resolve(task.workspace);
  const runDir = resolve(workspace, task.runDir);
  const keptAside = { changes: 0, entries: 0 };
  const fenceFor = (origin: number | undefined): Fence | undefined =>
    options.fence === undefined
      ? undefined
      : { ...options.fence, ...(origin === undefined ? {} : { origin }) };
  const outbox = readOutbox(runDir);
  let replayed = 0;
  for (const entry of outbox) {
    const outcome = await shared.records.write(
      task,
      entry.changes,
      fenceFor(entry.epoch ?? options.previousEpoch),
    );
    if (outcome === 'fenced') keptAside.changes += entry.changes.length;
    replayed += entry.changes.length;
  }
  if (outbox.length > 0) clearOutbox(runDir);
  // One after another on one connection: side by side, the pool opened a connection per read,
  // which costs more CPU than the round trips it saves (issue 23: a level start has 30 ms).
  const { task: stored, records: current } = await shared.records.read(task, {
    kinds: ['manifest-run', 'manifest-added', 'lineage-step', 'woke', 'in-flight', 'endpoint'],
  });
  const spills = await shared.records.read(task, { kinds: ['spill'], keysOnly: true });
  const fenced = await shared.records.readFenced(task);
  // Manifest rows that a fenced-out owner sent are the books of real work (its spend is spend):
  // they join the local manifest, marked, and are never sent up as this run directory's own.
  const records = [...current, ...fencedManifestRecords(fenced)];
  let foreignWorkspace: string | undefined;
  if (stored === undefined) foreignWorkspace = await sameNameElsewhere(shared, task, options);

  prepareRunDirectory(runDir, workspace);
  const pushes: TaskRecordChange[] = [];
  const now = Date.now();
  let pulled = 0;
  const fileOptions = options.onWarning ? { onWarning: options.onWarning } : {};
  const byKind = (kind: TaskRecord['kind']) => records.filter((record) => record.kind === kind);

  // Manifest: the database's rows of each run it knows replace the local ones; local-only runs
  // and booked rows go up.
  const local = peekManifest(runDir).document;
  const manifest = mergeManifest(records, local);
  for (const [run, rows] of manifest.localOnlyRuns)
    pushes.push({ op: 'put', kind: 'manifest-run', key: run, value: rows, at: now });
  for (const row of manifest.localOnlyAdded)
    pushes.push({ op: 'put-once', kind: 'manifest-added', key: addedRowKey(row), value: row, at: now });
  if (JSON.stringify(manifest.rows) !== JSON.stringify(local)) {
    replaceManifestRows(runDir, () => manifest.rows, fileOptions);
    pulled += byKind('manifest-run').length + byKind('manifest-added').length;
  }

  // Lineage: the database's steps win (after the outbox, it is the newer side); local-only steps
  // of this workspace go up; the wake count is the larger of the two, and the database learns it.
  const peeked = peekLineage(runDir);
  const lineage = peeked.state === 'ok' ? peeked.document : { workspace: '', woke: 0, steps: {} };
  const merged = mergeLineage(records, lineage, workspace);
  if (merged.ours) {
    for (const [step, sessionId] of Object.entries(lineage.steps)) {
      if (!(step in merged.databaseSteps))
        pushes.push({ op: 'put', kind: 'lineage-step', key: step, value: { sessionId }, at: 0 });
    }
    if (lineage.woke > merged.databaseWoke)
      pushes.push({ op: 'wake', run: '', atLeast: lineage.woke, at: now });
  }
  if (merged.fromDatabase && JSON.stringify(merged.lineage) !== JSON.stringify(lineage)) {
    replaceLineage(runDir, () => merged.lineage, fileOptions);
    pulled += 1;
  }

  // In-flight markers: what either side has and the other lacks.
  const localMarkers = new Map(inFlightMarkers(runDir).map((marker) => [marker.sessionId, marker]));
  for (const record of byKind('in-flight')) {
    if (localMarkers.has(record.key)) continue;
    restoreInFlight(runDir, record.value as InFlightMarker);
    pulled += 1;
  }
  const dbMarkers = new Set(byKind('in-flight').map((record) => record.key));
  for (const [sessionId, marker] of localMarkers) {
    if (!dbMarkers.has(sessionId))
      pushes.push({
        op: 'put',
        kind: 'in-flight',
        key: sessionId,
        value: marker,
        at: marker.startedAt * 1000,
      });
  }

  // Endpoints: the union.
  const localEndpoints = readEndpoints(runDir);
  const dbEndpoints = Object.fromEntries(
    byKind('endpoint').map((record) => [record.key, record.value as { firstAnswer: string }]),
  );
  const newEndpoints = Object.fromEntries(
    Object.entries(dbEndpoints).filter(([key]) => !(key in localEndpoints)),
  );
  if (Object.keys(newEndpoints).length > 0) {
    addEndpoints(runDir, newEndpoints);
    pulled += Object.keys(newEndpoints).length;
  }
  for (const [key, value] of Object.entries(localEndpoints))
    if (!(key in dbEndpoints)) pushes.push({ op: 'put-once', kind: 'endpoint', key, value, at: now });

  // Spill files: content-addressed, so a name present on both sides is the same file.
  const spillDir = spillDirectory(workspace, options.spillDirname ?? defaultTrimPolicy.spillDirname);
  const localSpills = new Set(listSpillFiles(spillDir));
  const dbSpills = new Set(spills.records.map((record) => record.key));
  const wanted = [...dbSpills].filter((name) => !localSpills.has(name));
  for (let at = 0; at < wanted.length; at += 100) {
    const texts = await shared.records.readValues(task, 'spill', wanted.slice(at, at + 100));
    for (const [name, text] of texts) {
      try {
        writeFileAtomic(join(spillDir, name), String(text), {
          mode: PRIVATE_FILE_MODE,
          directoryMode: PRIVATE_DIRECTORY_MODE,
        });
        pulled += 1;
      } catch (error) {
        options.onWarning?.(
          `Could not write the spill file ${join(spillDir, name)}: ${(error as Error).message}.`,
        );
      }
    }
  }
  pushes.push(...spillChanges(spillDir, localSpills, dbSpills, now));

  if ((await shared.records.write(task, pushes, fenceFor(options.previousEpoch))) === 'fenced')
    keptAside.changes += pushes.length;

  // Sessions: entry counts per key, both ways.
  const local_ = new LocalSessions(join(runDir, 'sessions.db'), fileOptions);
  let sessions: SessionSyncReport;
  try {
    const projectKey = projectKeyFor(workspace);
    const sessionFence = fenceFor(options.previousEpoch);
    // Transcripts in which this copy holds work that was kept aside (now, or when a fenced-out
    // process here sent it): the next resume here must not follow that work.
    const overtaken = new Set<string>();
    const upward =
      sessionFence === undefined
        ? shared.sessions
        : {
            entryCounts: (key: string) => shared.sessions.entryCounts(key),
            load: (key: SessionKey) => shared.sessions.load(key),
            loadRows: (key: SessionKey) => shared.sessions.loadRows(key),
            append: async (key: SessionKey, entries: SessionStoreEntry[]) => {
              const name = taskNameOf(task);
              const done = await shared.sessions.appendFenced(key, entries, name, sessionFence);
              if (done.outcome === 'fenced') {
                keptAside.entries += done.kept;
                overtaken.add(keyOf(key));
              }
            },
          };
    // What gc dropped stays out of the sync (tombstones), and out of this run directory.
    const dropped = await settleTombstones(
      shared,
      runDir,
      projectKeyFor(workspace),
      {
        hasSession: (project, sessionId) => local_.store().hasSession(project, sessionId),
        delete: (key) => local_.store().delete(key),
      },
      options,
    );
    sessions = await syncSessions(
      {
        entryCounts: (key) => local_.entryCounts(key),
        load: (key) => local_.store().load(key),
        append: (key, entries) => local_.store().append(key, entries),
        // The database's rows are stored here as the text it sent, not serialised again.
        loadRows: (key) => local_.store().loadRows(key),
        appendRows: (key, rows) => local_.store().appendRows(key, rows),
      },
      upward,
      projectKey,
      (sessionId) => !dropped.has(sessionId),
    );
    // Everything local is now in the database, applied or kept aside: the keys holding
    // kept-aside work take the database's version.
    for (const key of await keysHoldingFenced(local_, fenced, projectKey)) overtaken.add(key);
    if (overtaken.size > 0) await resetLocalKeys(local_.store(), shared, [...overtaken]);
  } finally {
    local_.close();
  }
  if (keptAside.changes + keptAside.entries > 0)
    options.onWarning?.(
      `Another flower worked on this task since this run directory last did: ${describeKept(keptAside)} of the earlier work here ${keptAside.changes + keptAside.entries === 1 ? 'was' : 'were'} kept aside in ${shared.display} (flower report shows it) and this run continues from the newer work.`,
    );
  const report: PullReport = {
    replayed,
    keptAside,
    recordsPulled: pulled,
    recordsPushed: pushes.length,
    sessions,
    ms: performance.now() - started,
    ...(foreignWorkspace ? { foreignWorkspace } : {}),
  };
  options.onVerbose?.(
    `Task state from ${shared.display}: ${report.recordsPulled} records and ${sessions.pulled} transcript entries brought in, ${report.recordsPushed + report.replayed} records and ${sessions.pushed} entries sent (${Math.round(report.ms)} ms).`,
  );
  return report;
}

/** Record changes that send the spill files the database lacks. */
function spillChanges(
  spillDir: string,
  local: Iterable<string>,
  stored: ReadonlySet<string>,
  at: number,
): TaskRecordChange[] {
  const changes: TaskRecordChange[] = [];
  for (const name of local) {
    if (stored.has(name)) continue;
    try {
      changes.push({
        op: 'put-once',
        kind: 'spill',
        key: name,
        value: readFileSync(join(spillDir, name), 'utf8'),
        at,
      });
    } catch {
      // Gone meanwhile: nothing to send.
    }
  }
  return changes;
}

/**
 * Sends the spill files this run wrote that the database lacks (at the end of a process, so that
 * another machine resuming after it finds the files the trimmed transcript points at). Returns
 * how many were sent.
 */
export async function pushSpillFiles(
  shared: SharedStore,
  task: TaskRef,
  spillDirname: string = defaultTrimPolicy.spillDirname,
): Promise<number> {
  const spillDir = spillDirectory(resolve(task.workspace), spillDirname);
  const local = listSpillFiles(spillDir);
  if (local.length === 0) return 0;
  const stored = new Set(
    (await shared.records.read(task, { kinds: ['spill'], keysOnly: true })).records.map(
      (record) => record.key,
    ),
  );
  const changes = spillChanges(spillDir, local, stored, Date.now());
  await shared.records.write(task, changes);
  return changes.length;
}

/** The spill files of a directory (its `records/` cache is rebuilt from them, never shared). */
export function listSpillFiles(directory: string): string[] {
  try {
    return readdirSync(directory).filter(isSpillFile);
  } catch {
    return [];
  }
}

/** A task of a workspace with the same base name elsewhere: said in one line, with how to continue. */
async function sameNameElsewhere(
  shared: SharedStore,
  task: TaskRef,
  options: PullOptions,
): Promise<string | undefined> {
  const name = taskNameOf(task);
  const tasks = await shared.records.listTasks();
  const other = tasks.find(
    (candidate) =>
      candidate.workspace !== name.workspace &&
      basename(candidate.workspace) === basename(name.workspace) &&
      candidate.runDir === name.runDir,
  );
  if (other === undefined) return undefined;
  options.onWarning?.(
    `${shared.display} holds a task for ${other.workspace}, not for ${name.workspace}: to continue it, run flower from ${other.workspace} (in a container, mount the workspace there: -v "$PWD:${other.workspace}"); starting a fresh task here.`,
  );
  return other.workspace;
}

const keyOf = (key: SessionKey): string => `${key.projectKey}\n${key.sessionId}\n${key.subpath ?? ''}`;
const keyFrom = (text: string): SessionKey => {
  const [projectKey, sessionId, subpath] = text.split('\n') as [string, string, string];
  return { projectKey, sessionId, ...(subpath === '' ? {} : { subpath }) };
};

function describeKept(kept: { changes: number; entries: number }): string {
  const parts: string[] = [];
  if (kept.entries > 0) parts.push(`${kept.entries} transcript entr${kept.entries === 1 ? 'y' : 'ies'}`);
  if (kept.changes > 0) parts.push(`${kept.changes} record${kept.changes === 1 ? '' : 's'}`);
  return parts.join(' and ');
}

/** The fenced-out owners' manifest rows as records, each row marked `fenced_out`. */
export function fencedManifestRecords(fenced: FencedWork): TaskRecord[] {
  const records: TaskRecord[] = [];
  for (const { change, keptAt } of fenced.changes) {
    if (change.op !== 'put' && change.op !== 'put-once') continue;
    if (change.kind !== 'manifest-run' && change.kind !== 'manifest-added') continue;
    const mark = (row: unknown) => ({ ...(row as Record<string, unknown>), fenced_out: true });
    records.push({
      kind: change.kind,
      key: change.key,
      value: change.kind === 'manifest-run' ? (change.value as unknown[]).map(mark) : mark(change.value),
      at: change.at,
      seq: Number.MAX_SAFE_INTEGER - 1_000_000 + keptAt.getTime() / 1000,
    });
  }
  return records;
}

type LocalStore = InstanceType<typeof SqliteSessionStore>;

/**
 * The run directory's session store, opened only when a transcript is read or written: at a level
 * start the counts (`countEntries`, one plain connection) agree with the database's and that is
 * all the pull reads here. Opening the store (a write connection, its checks, every statement prepared)
 * cost about 6 ms of CPU, a fifth of what a level start with `--store` may add (issue 23); the
 * Runtime opens it anyway after the pull.
 */
class LocalSessions {
  private opened: LocalStore | undefined;

  constructor(
    private readonly file: string,
    private readonly options: { onWarning?: (line: string) => void },
  ) {}

  store(): LocalStore {
    this.opened ??= new SqliteSessionStore(this.file, this.options);
    return this.opened;
  }

  /** Counted over a plain connection while the store is not open; a file that cannot be read so
   * is opened as the store, which sets a damaged file aside and says so. */
  entryCounts(projectKey: string): EntryCount[] {
    if (this.opened === undefined) {
      try {
        return countEntries(this.file, projectKey);
      } catch {
        // Read by the store below.
      }
    }
    return this.store().entryCounts(projectKey);
  }

  close(): void {
    this.opened?.close();
  }
}

/** The local keys that hold an entry the database kept aside (no fenced entries: none, nothing read). */
async function keysHoldingFenced(
  local: LocalSessions,
  fenced: FencedWork,
  projectKey: string,
): Promise<string[]> {
  const keys = new Map<string, Set<string>>();
  for (const entry of fenced.entries) {
    if (entry.uuid === null) continue;
    const key = keyOf({ projectKey, sessionId: entry.sessionId, subpath: entry.subpath });
    if (!keys.has(key)) keys.set(key, new Set());
    keys.get(key)?.add(entry.uuid);
  }
  const affected: string[] = [];
  for (const [key, uuids] of keys) {
    const entries = (await local.store().load(keyFrom(key))) ?? [];
    if (entries.some((entry) => typeof entry.uuid === 'string' && uuids.has(entry.uuid))) affected.push(key);
  }
  return affected;
}

/**
 * Replaces each local key's transcript with the database's (a main key's delete takes its
 * subagent transcripts with it, so those come back from the database too).
 */
async function resetLocalKeys(
  local: LocalStore,
  shared: SharedStore,
  keys: readonly string[],
): Promise<void> {
  for (const text of keys) {
    const key = keyFrom(text);
    const subkeys =
      key.subpath === undefined
        ? (await shared.sessions.listSubkeys(key)).map((subpath) => ({ ...key, subpath }))
        : [];
    await local.delete(key);
    for (const each of [key, ...subkeys]) {
      const stored = (await shared.sessions.load(each)) ?? [];
      if (stored.length > 0) await local.append(each, stored);
    }
  }
}
