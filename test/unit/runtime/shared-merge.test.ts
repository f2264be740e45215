/**
 * The manifest merge of the shared record (runtime/shared/merge.ts) with a booked row and the row
 * its process wrote after all: a machine that took the task over booked the in-flight attempt of
 * the holder it replaced, and that holder, only cut off from the database, ended the attempt
 * itself and wrote its own row (kept aside). The books count the attempt once, at its own row.
 * And one record per kind and key: a change kept aside twice, or a run saved again after it lost
 * the task, counts once.
 */
import { describe, expect, it } from 'vitest';
import { KILLED_UNRECORDED } from '../../../src/runtime/in-flight.js';
import {
  manifestRowsOf,
  mergeManifest,
  withoutSupersededBookings,
} from '../../../src/runtime/shared/merge.js';
import { fencedManifestRecords } from '../../../src/runtime/shared/pull.js';
import type { FencedWork, TaskRecord, TaskRecordChange } from '../../../src/store/postgres/task-records.js';

const booked = {
  run: 'run-a',
  step: 'clarify',
  session_id: 's1',
  started_at: 1000,
  ended_at: 1040,
  cost_usd: 0.09,
  error: KILLED_UNRECORDED,
};
const own = {
  run: 'run-a',
  step: 'clarify',
  session_id: 's1',
  started_at: 990,
  ended_at: 1080,
  cost_usd: 0.102,
  error: 'another flower took this task over',
  fenced_out: true,
};
const record = (kind: TaskRecord['kind'], key: string, value: unknown, seq: number): TaskRecord => ({
  kind,
  key,
  value,
  at: seq,
  seq,
});

describe('a booked row and its own process row', () => {
  it('the booked row gives way to a row of the same run, step and session that ended after it started', () => {
    expect(withoutSupersededBookings([booked, own])).toEqual([own]);
    const records = [
      record('manifest-added', 'run-a/s1/1000', booked, 1),
      record('manifest-run', 'run-a', [own], 2),
    ];
    expect(mergeManifest(records, []).rows).toEqual([own]);
    // Locally too: the holder's own manifest and the booking pulled from the database.
    expect(mergeManifest([record('manifest-added', 'run-a/s1/1000', booked, 1)], [own]).rows).toEqual([own]);
  });

  it('stays when no row of that process holds the attempt', () => {
    const otherRun = { ...own, run: 'run-b' };
    const otherSession = { ...own, session_id: 's2' };
    const otherStep = { ...own, step: 'work' };
    const before = { ...own, ended_at: 999 };
    for (const row of [otherRun, otherSession, otherStep, before])
      expect(withoutSupersededBookings([booked, row])).toEqual([booked, row]);
    // Two bookings of one process never hide each other.
    const later = { ...booked, started_at: 1050, ended_at: 1070 };
    expect(withoutSupersededBookings([booked, later])).toEqual([booked, later]);
  });
});

describe('one record per kind and key, kept aside or not', () => {
  const save = (rows: unknown[], at: number): TaskRecordChange => ({
    op: 'put',
    kind: 'manifest-run',
    key: 'run-a',
    value: rows,
    at,
  });
  const keptAside = (...changes: TaskRecordChange[]): FencedWork => ({
    changes: changes.map((change, index) => ({ epoch: 8, keptAt: new Date(5000 + index), change })),
    entries: [],
  });

  it('a change kept aside twice (delivered late, then replayed from the outbox) counts once', () => {
    const change = save([{ ...own, fenced_out: undefined }], 1080);
    const rows = manifestRowsOf(fencedManifestRecords(keptAside(change, change)));
    expect(rows.map((row) => [row.run, row.cost_usd, row.fenced_out])).toEqual([['run-a', 0.102, true]]);
  });

  it("a run's newest save replaces its earlier one, applied or kept aside, in first-write order", () => {
    const first = { run: 'run-a', step: 'clarify', cost_usd: 0.1 };
    const second = { run: 'run-a', step: 'set-goal', cost_usd: 0.2 };
    const other = { run: 'run-b', step: 'clarify', cost_usd: 0.4 };
    const records = [
      record('manifest-run', 'run-a', [first], 1),
      record('manifest-run', 'run-b', [other], 2),
      ...fencedManifestRecords(keptAside(save([first, second], 3000))),
    ];
    expect(manifestRowsOf(records).map((row) => [row.run, row.step, row.fenced_out])).toEqual([
      ['run-a', 'clarify', true],
      ['run-a', 'set-goal', true],
      ['run-b', 'clarify', undefined],
    ]);
    // An older save kept aside after a newer one was applied changes nothing.
    const stale = [
      record('manifest-run', 'run-a', [first, second], 3),
      ...fencedManifestRecords(keptAside(save([first], 2))),
    ];
    expect(manifestRowsOf(stale).map((row) => row.step)).toEqual(['clarify', 'set-goal']);
  });

  it('a booked row counts at its first write', () => {
    const records = [
      record('manifest-added', 'run-a/s1/1000', booked, 1),
      ...fencedManifestRecords(
        keptAside({ op: 'put-once', kind: 'manifest-added', key: 'run-a/s1/1000', value: booked, at: 9 }),
      ),
    ];
    expect(manifestRowsOf(records)).toEqual([booked]);
  });
});
