/**
 * How a task's shared record and a run directory's files combine: the one merge the pull writes
 * into the run directory (pull.ts), the report shows without writing (report/shared-run-data.ts)
 * and gc reads its references from (retention/shared-references.ts). Pure.
 *
 * Rules (the files' own merge rules, see records.ts):
 * - Manifest: the database's rows come first, in the order they were first written; a run the
 *   database knows is the database's (its rows replace this machine's rows of that run, and its
 *   newest save replaces its earlier ones, kept aside or not); a booked row counts once (by
 *   `addedRowKey`); rows only this machine has (never sent) follow, in file order.
 * - A booked row (a killed attempt's, `killed-unrecorded`) gives way to a row of the same run,
 *   step and session that ended after the attempt started: that process was alive after all and
 *   wrote its own row, which holds the whole attempt (see `withoutSupersededBookings`).
 * - Lineage: the database's steps win over this machine's; the wake count is the larger; a local
 *   file written for another workspace path contributes nothing.
 * - A record whose value does not have the expected shape is skipped, never a crash.
 */
import type { TaskRecord } from '../../store/postgres/task-records.js';
import { KILLED_UNRECORDED } from '../in-flight.js';
import type { LineageRecord } from '../lineage.js';
import type { StoredManifestRow } from '../manifest.js';
import { addedRowKey } from './records.js';

const isRow = (value: unknown): value is StoredManifestRow =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The manifest rows the records hold (runs and booked rows), in first-write order. One record
 * counts per kind and key, as the database keeps them: a run's newest save (its rows replace the
 * earlier ones), a booked row's first write. The fenced-out owners' records join under the same
 * rule, so a change kept aside twice counts once (seen: a cut-off holder's write held up on the
 * wire reached the server when the path came back, and its outbox replayed it at the next start),
 * and a run whose later save was kept aside is not counted beside its earlier applied save.
 */
export function manifestRowsOf(records: readonly TaskRecord[]): StoredManifestRow[] {
  const rows: StoredManifestRow[] = [];
  const books = records.filter(
    // Stryker disable next-line ConditionalExpression: the loop below takes only these two kinds anyway (the filter keeps the caller's records unsorted)
    (record) => record.kind === 'manifest-run' || record.kind === 'manifest-added',
  );
  const chosen = new Map<string, TaskRecord>();
  for (const record of books.sort((a, b) => a.seq - b.seq)) {
    const id = `${record.kind}\n${record.key}`;
    const held = chosen.get(id);
    // A Map keeps a key's first position when its value is replaced: first-write order stays.
    if (held === undefined || (record.kind === 'manifest-run' && record.at > held.at)) chosen.set(id, record);
  }
  for (const record of chosen.values()) {
    if (record.kind === 'manifest-run' && Array.isArray(record.value))
      rows.push(...record.value.filter(isRow));
    else if (record.kind === 'manifest-added' && isRow(record.value)) rows.push(record.value);
  }
  return rows;
}

export interface ManifestMerge {
  /** What the run directory's manifest should hold. */
  rows: StoredManifestRow[];
  /** This machine's rows the database does not have: whole runs, and booked rows. */
  localOnlyRuns: Map<string, StoredManifestRow[]>;
  localOnlyAdded: StoredManifestRow[];
}

export function mergeManifest(
  records: readonly TaskRecord[],
  local: readonly StoredManifestRow[],
): ManifestMerge {
  const knownRuns = new Set(records.filter((r) => r.kind === 'manifest-run').map((r) => r.key));
  const knownAdded = new Set(records.filter((r) => r.kind === 'manifest-added').map((r) => r.key));
  const rows = manifestRowsOf(records);
  const localOnlyRuns = new Map<string, StoredManifestRow[]>();
  const localOnlyAdded: StoredManifestRow[] = [];
  for (const row of local) {
    const run = String(row.run ?? '');
    if (row.error === KILLED_UNRECORDED) {
      if (knownAdded.has(addedRowKey(row))) continue;
      localOnlyAdded.push(row);
    } else {
      if (knownRuns.has(run)) continue;
      localOnlyRuns.set(run, [...(localOnlyRuns.get(run) ?? []), row]);
    }
    rows.push(row);
  }
  return { rows: withoutSupersededBookings(rows), localOnlyRuns, localOnlyAdded };
}

/**
 * The rows without the booked ones that the attempt's own row holds. A machine that takes the task
 * over books the in-flight attempt of the holder it replaced from what of it reached the database
 * (in-flight.ts: it cannot tell a holder cut off from the database from a dead one on another
 * host). A holder that was only cut off ends that attempt itself and writes its row (kept aside:
 * it had lost the task), which counts every reply of the attempt; counting the booked row too
 * charged the replies that had reached the database twice (partition chaos test). The match is
 * the booking rule's own: same run and session (and step), ended at or after the attempt's start.
 */
export function withoutSupersededBookings(rows: readonly StoredManifestRow[]): StoredManifestRow[] {
  const own = rows.filter((row) => row.error !== KILLED_UNRECORDED);
  const superseded = (booked: StoredManifestRow) =>
    own.some(
      (row) =>
        row.run === booked.run &&
        row.step === booked.step &&
        row.session_id === booked.session_id &&
        typeof row.ended_at === 'number' &&
        typeof booked.started_at === 'number' &&
        row.ended_at >= booked.started_at,
    );
  return rows.filter((row) => row.error !== KILLED_UNRECORDED || !superseded(row));
}

export interface LineageMerge {
  /** What the run directory's lineage should hold. */
  lineage: LineageRecord;
  /** Whether the database had anything to say (steps or wakes). */
  fromDatabase: boolean;
  /** Whether the local file belongs to this workspace (it may then send its own steps up). */
  ours: boolean;
  /** The database's steps and wake count, as found. */
  databaseSteps: Record<string, string>;
  databaseWoke: number;
}

export function mergeLineage(
  records: readonly TaskRecord[],
  local: LineageRecord | undefined,
  workspace: string,
): LineageMerge {
  const databaseSteps: Record<string, string> = {};
  for (const record of records) {
    const id = (record.value as { sessionId?: unknown } | undefined)?.sessionId;
    if (record.kind === 'lineage-step' && typeof id === 'string' && id !== '') databaseSteps[record.key] = id;
  }
  const databaseWoke = Number(records.find((record) => record.kind === 'woke')?.value ?? 0) || 0;
  const ours = local !== undefined && (local.workspace === workspace || local.workspace === '');
  return {
    lineage: {
      workspace,
      woke: Math.max(databaseWoke, ours ? local.woke : 0),
      steps: { ...(ours ? local.steps : {}), ...databaseSteps },
    },
    fromDatabase: Object.keys(databaseSteps).length > 0 || databaseWoke > 0,
    ours,
    databaseSteps,
    databaseWoke,
  };
}
