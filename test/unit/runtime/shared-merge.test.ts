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
import type { StoredManifestRow } from '../../../src/runtime/manifest.js';
import {
  manifestRowsOf,
  mergeLineage,
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

describe('the records the manifest is read from', () => {
  it('in order of first write, whatever order they come in; other kinds and malformed values are skipped', () => {
    const a = { run: 'run-a', step: 'clarify' };
    const b = { run: 'run-b', step: 'work' };
    const c = { run: 'run-c', step: 'work', error: KILLED_UNRECORDED };
    const records = [
      record('manifest-added', 'run-c/s/1', c, 3),
      record('manifest-run', 'run-b', [b, null, 'row', [1], 7], 2),
      record('lineage-step', 'work', [a], 0),
      record('manifest-run', 'run-a', [a], 1),
      record('manifest-run', 'run-d', { run: 'run-d' }, 4),
      record('manifest-added', 'run-e/s/1', [c], 5),
      record('manifest-added', 'run-f/s/1', null, 6),
    ];
    expect(manifestRowsOf(records)).toEqual([a, b, c]);
  });

  it('a run and a booked row with the same key are two records', () => {
    const run = { run: 'k', step: 'work' };
    const added = { run: 'k', step: 'work', error: KILLED_UNRECORDED };
    expect(
      manifestRowsOf([record('manifest-run', 'k', [run], 1), record('manifest-added', 'k', added, 2)]),
    ).toEqual([run, added]);
  });

  it("a run's save at the same time as the one held does not replace it", () => {
    const first = { run: 'run-a', step: 'clarify' };
    const second = { run: 'run-a', step: 'work' };
    const same = [
      { kind: 'manifest-run', key: 'run-a', value: [first], at: 50, seq: 1 },
      { kind: 'manifest-run', key: 'run-a', value: [second], at: 50, seq: 2 },
    ] as TaskRecord[];
    expect(manifestRowsOf(same)).toEqual([first]);
    const newer = [
      { kind: 'manifest-run', key: 'run-a', value: [first], at: 50, seq: 1 },
      { kind: 'manifest-run', key: 'run-a', value: [second], at: 51, seq: 2 },
    ] as TaskRecord[];
    expect(manifestRowsOf(newer)).toEqual([second]);
  });
});

describe('mergeManifest', () => {
  it('leaves the records it is given as they were (pure)', () => {
    const records = [record('manifest-run', 'run-b', [], 2), record('manifest-run', 'run-a', [], 1)];
    const before = [...records];
    mergeManifest(records, []);
    manifestRowsOf(records);
    expect(records).toEqual(before);
  });

  it("a run the database only has a wake of is still this machine's to send", () => {
    const row = { run: 'run-b', step: 'work', cost_usd: 0.2 };
    const merged = mergeManifest([record('wake', 'run-b', { woke: 2 }, 1)], [row]);
    expect(merged.rows).toEqual([row]);
    expect([...merged.localOnlyRuns]).toEqual([['run-b', [row]]]);
  });

  it('only a booked row’s own record stands for it', () => {
    const row = { run: 'run-a', session_id: 's2', started_at: 2000, error: KILLED_UNRECORDED };
    const merged = mergeManifest([record('in-flight', 'run-a/s2/2000', {}, 1)], [row]);
    expect(merged.localOnlyAdded).toEqual([row]);
  });

  it("the database's runs replace this machine's rows of them; rows only this machine has follow, by run", () => {
    const dbRow = { run: 'run-a', step: 'clarify', cost_usd: 0.1 };
    const localOfA = { run: 'run-a', step: 'clarify', cost_usd: 0.3 };
    const localB1 = { run: 'run-b', step: 'work', cost_usd: 0.2 };
    const localB2 = { run: 'run-b', step: 'judge', cost_usd: 0.1 };
    const noRun = { step: 'odd' } as StoredManifestRow;
    const merged = mergeManifest(
      [record('manifest-run', 'run-a', [dbRow], 1)],
      [localOfA, localB1, noRun, localB2],
    );
    expect(merged.rows).toEqual([dbRow, localB1, noRun, localB2]);
    expect([...merged.localOnlyRuns]).toEqual([
      ['run-b', [localB1, localB2]],
      ['', [noRun]],
    ]);
    expect(merged.localOnlyAdded).toEqual([]);
  });

  it('a booked row the database has counts once; one it does not have is sent', () => {
    const known = { run: 'run-a', session_id: 's1', started_at: 1000, error: KILLED_UNRECORDED };
    const fresh = { run: 'run-a', session_id: 's2', started_at: 2000, error: KILLED_UNRECORDED };
    const merged = mergeManifest([record('manifest-added', 'run-a/s1/1000', known, 1)], [known, fresh]);
    expect(merged.rows).toEqual([known, fresh]);
    expect(merged.localOnlyAdded).toEqual([fresh]);
    expect(merged.localOnlyRuns.size).toBe(0);
    // A booked row is never a run of its own, even of a run the database does not know.
    expect(mergeManifest([], [fresh]).localOnlyRuns.size).toBe(0);
    // A run the database knows does not hide a booked row of that run it does not have.
    const withRun = mergeManifest([record('manifest-run', 'run-a', [], 1)], [fresh]);
    expect(withRun.rows).toEqual([fresh]);
    expect(withRun.localOnlyAdded).toEqual([fresh]);
  });

  it('drops a booked row its own process row holds, wherever each came from', () => {
    const merged = mergeManifest([record('manifest-run', 'run-a', [own], 1)], [booked]);
    expect(merged.rows).toEqual([own]);
    expect(merged.localOnlyAdded).toEqual([booked]);
  });
});

describe('withoutSupersededBookings: the match', () => {
  it('an own row that ended exactly when the attempt started holds it', () => {
    expect(withoutSupersededBookings([booked, { ...own, ended_at: 1000 }])).toEqual([
      { ...own, ended_at: 1000 },
    ]);
  });

  it('a row or a booking without a numeric time holds nothing and is not held', () => {
    const untimed = { ...own, ended_at: '1080' } as unknown as StoredManifestRow;
    expect(withoutSupersededBookings([booked, untimed])).toEqual([booked, untimed]);
    const unstarted = { ...booked, started_at: '1000' } as unknown as StoredManifestRow;
    expect(withoutSupersededBookings([unstarted, own])).toEqual([unstarted, own]);
  });

  it('keeps every row that is not a booking, in order', () => {
    const rows = [own, { ...own, step: 'work' }, { ...own, run: 'run-b' }];
    expect(withoutSupersededBookings(rows)).toEqual(rows);
  });
});

describe('mergeLineage', () => {
  const workspace = '/work/ws';
  const step = (key: string, sessionId: unknown, seq: number) =>
    record('lineage-step', key, { sessionId }, seq);

  it("the database's steps win over this machine's, and the wake count is the larger", () => {
    const merged = mergeLineage(
      [step('work', 's-db', 1), step('judge', '', 2), step('clarify', 7, 3), record('woke', 'w', 3, 4)],
      { workspace, woke: 5, steps: { work: 's-local', clarify: 's-c' } },
      workspace,
    );
    expect(merged).toEqual({
      lineage: { workspace, woke: 5, steps: { work: 's-db', clarify: 's-c' } },
      fromDatabase: true,
      ours: true,
      databaseSteps: { work: 's-db' },
      databaseWoke: 3,
    });
    expect(
      mergeLineage([record('woke', 'w', 9, 1)], { workspace, woke: 5, steps: {} }, workspace).lineage.woke,
    ).toBe(9);
  });

  it('a local file written for another workspace path contributes nothing; one with no path is ours', () => {
    const elsewhere = mergeLineage([], { workspace: '/other', woke: 4, steps: { work: 's-x' } }, workspace);
    expect(elsewhere).toEqual({
      lineage: { workspace, woke: 0, steps: {} },
      fromDatabase: false,
      ours: false,
      databaseSteps: {},
      databaseWoke: 0,
    });
    const unnamed = mergeLineage([], { workspace: '', woke: 2, steps: { work: 's-y' } }, workspace);
    expect(unnamed.ours).toBe(true);
    expect(unnamed.lineage).toEqual({ workspace, woke: 2, steps: { work: 's-y' } });
    expect(mergeLineage([], undefined, workspace).ours).toBe(false);
  });

  it('the database has something to say with steps alone or a wake alone; a malformed wake is none', () => {
    expect(mergeLineage([step('work', 's', 1)], undefined, workspace).fromDatabase).toBe(true);
    expect(mergeLineage([record('woke', 'w', 1, 1)], undefined, workspace).fromDatabase).toBe(true);
    const odd = mergeLineage(
      [record('woke', 'w', 'many', 1), record('lineage-step', 'work', undefined, 2)],
      undefined,
      workspace,
    );
    expect(odd).toMatchObject({ fromDatabase: false, databaseWoke: 0, databaseSteps: {} });
  });
});
