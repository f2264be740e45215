/**
 * How the task's files map onto task records (store/postgres/task-records.ts), both ways: a
 * change this process made (task-changes.ts) becomes record changes to send, and the records
 * become the files a run directory holds.
 *
 * The mapping follows the files' own merge rules: manifest rows are owned per run id (a save
 * replaces its run's rows: one `put` of the run's rows) and booked rows are added (`put-once` per
 * row); lineage steps merge per step key (last writer wins); the wake counter is merged (see
 * task-records.ts); markers are set and cleared per session; an endpoint's first answer and a
 * spill file are written once.
 */
import { hostname } from 'node:os';
import type { TaskRecordChange } from '../../store/postgres/task-records.js';
import type { StoredManifestRow } from '../manifest.js';
import type { TaskFileChange } from '../task-changes.js';

/** The record key of a booked row: one per killed attempt. */
export function addedRowKey(row: StoredManifestRow): string {
  return `${String(row.run ?? '')}/${String(row.session_id ?? '')}/${String(row.started_at ?? '')}`;
}

/** Distinguishes this process's wakes when it wakes more than once (one per workflow run). */
const processToken = `${hostname()}:${process.pid}:${Date.now().toString(36)}`;
let wakes = 0;

export function recordChangesOf(change: TaskFileChange, at: number = Date.now()): TaskRecordChange[] {
  switch (change.kind) {
    case 'manifest-run':
      return [{ op: 'put', kind: 'manifest-run', key: change.run, value: change.rows, at }];
    case 'manifest-added':
      return change.rows.map((row) => ({
        op: 'put-once' as const,
        kind: 'manifest-added' as const,
        key: addedRowKey(row),
        value: row,
        at,
      }));
    case 'lineage-step':
      return [
        { op: 'put', kind: 'lineage-step', key: change.step, value: { sessionId: change.sessionId }, at },
      ];
    case 'wake':
      wakes += 1;
      return [{ op: 'wake', run: `${processToken}#${wakes}`, atLeast: change.woke, at }];
    case 'in-flight':
      return [{ op: 'put', kind: 'in-flight', key: change.marker.sessionId, value: change.marker, at }];
    case 'in-flight-cleared':
      return change.sessionIds.map((sessionId) => ({
        op: 'delete' as const,
        kind: 'in-flight' as const,
        key: sessionId,
        at,
      }));
    case 'lineage-archived':
      return (['lineage-step', 'woke', 'wake'] as const).map((kind) => ({
        op: 'delete-kind' as const,
        kind,
        at,
      }));
    case 'endpoint':
      return [
        { op: 'put-once', kind: 'endpoint', key: change.key, value: { firstAnswer: change.firstAnswer }, at },
      ];
  }
}
