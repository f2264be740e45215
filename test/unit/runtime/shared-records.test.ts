/**
 * How a change of the task's files becomes record changes (runtime/shared/records.ts): each wake
 * of a process is its own run (a process that wakes twice counts twice, a replay of one counts
 * once), a start-over forgets the lineage's steps, its count and its wakes, and each booked row
 * is its own write-once record.
 */
import { describe, expect, it } from 'vitest';
import { addedRowKey, recordChangesOf } from '../../../src/runtime/shared/records.js';

describe('recordChangesOf', () => {
  it('gives each wake of this process a run of its own', () => {
    const [first] = recordChangesOf({ kind: 'wake', woke: 1 }, 10);
    const [second] = recordChangesOf({ kind: 'wake', woke: 2 }, 11);
    expect(first).toMatchObject({ op: 'wake', atLeast: 1, at: 10 });
    expect(second).toMatchObject({ op: 'wake', atLeast: 2, at: 11 });
    expect(first?.op === 'wake' && second?.op === 'wake' && first.run !== second.run).toBe(true);
  });

  it('a start-over deletes the steps, the wake count and the wakes, as of its time', () => {
    expect(recordChangesOf({ kind: 'lineage-archived' }, 7)).toEqual([
      { op: 'delete-kind', kind: 'lineage-step', at: 7 },
      { op: 'delete-kind', kind: 'woke', at: 7 },
      { op: 'delete-kind', kind: 'wake', at: 7 },
    ]);
  });

  it('books each killed attempt once, keyed by its run, session and start', () => {
    const rows = [
      { run: 'r', session_id: 's', started_at: 1 },
      { run: 'r', session_id: 's', started_at: 2 },
    ];
    const changes = recordChangesOf({ kind: 'manifest-added', rows }, 3);
    expect(changes).toEqual([
      { op: 'put-once', kind: 'manifest-added', key: 'r/s/1', value: rows[0], at: 3 },
      { op: 'put-once', kind: 'manifest-added', key: 'r/s/2', value: rows[1], at: 3 },
    ]);
    expect(addedRowKey({ run: 'r', session_id: 's', started_at: 2 })).toBe('r/s/2');
  });

  it('a cleared marker is a delete per session, as of its time', () => {
    expect(recordChangesOf({ kind: 'in-flight-cleared', sessionIds: ['a', 'b'] }, 5)).toEqual([
      { op: 'delete', kind: 'in-flight', key: 'a', at: 5 },
      { op: 'delete', kind: 'in-flight', key: 'b', at: 5 },
    ]);
  });
});
