/**
 * How a task's shared record and a run directory's files combine: the one merge the pull writes
 * into the run directory (pull.ts), the report shows without writing (report/shared-run-data.ts)
 * and gc reads its references from (retention/shared-references.ts). Pure.
 *
 * Rules (the files' own merge rules, see records.ts):
 * - Manifest: the database's rows come first, in the order they were first written; a run the
 *   database knows is the database's (its rows replace this machine's rows of that run); a booked
 *   row counts once (by `addedRowKey`); rows only this machine has (never sent) follow, in file
 *   order.
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

/** The manifest rows the records hold (runs and booked rows), in first-write order. */
export function manifestRowsOf(records: readonly TaskRecord[]): StoredManifestRow[] {
  const rows: StoredManifestRow[] = [];
  const books = records.filter(
    (record) => record.kind === 'manifest-run' || record.kind === 'manifest-added',
  );
  for (const record of books.sort((a, b) => a.seq - b.seq)) {
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
  return { rows, localOnlyRuns, localOnlyAdded };
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
