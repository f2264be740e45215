/**
 * The task-records family on PostgreSQL: its merge rules (last writer wins by time, write-once,
 * guarded deletes, the merged wake counter) and that concurrent writers of one task, each with a
 * pool of its own as separate processes would have, lose nothing of each other's.
 */
import { describe, expect, it } from 'vitest';
import { type TaskRecordChange, taskNameOf } from '../../../../src/store/postgres/task-records.js';
import type { SharedStore } from '../../../../src/store/shared/shared-store.js';
import { sharedStoresPerTest, usePostgres } from '../../../support/postgres.js';

const postgres = usePostgres();
const { open } = sharedStoresPerTest(postgres, 'records');

const task = { workspace: '/work', runDir: '/work/runs' };
const values = async (store: SharedStore, kind?: string) =>
  Object.fromEntries(
    (await store.records.read(task)).records
      .filter((record) => kind === undefined || record.kind === kind)
      .map((record) => [`${record.kind}:${record.key}`, record.value]),
  );

describe('task records', () => {
  it('name a task by its workspace and its run directory relative to it', () => {
    expect(taskNameOf({ workspace: '/work', runDir: '/work/runs' })).toEqual({
      workspace: '/work',
      runDir: 'runs',
    });
    expect(taskNameOf({ workspace: '/work/', runDir: 'runs/x' })).toEqual({
      workspace: '/work',
      runDir: 'runs/x',
    });
    // The workspace itself as run directory: '.' would be a name as good, '' is none.
    expect(taskNameOf({ workspace: '/work', runDir: '/work' })).toEqual({
      workspace: '/work',
      runDir: '/work',
    });
    expect(taskNameOf({ workspace: '/work', runDir: '/var/runs' })).toEqual({
      workspace: '/work',
      runDir: '/var/runs',
    });
  });

  it('merge: last writer by time wins, write-once keeps the first, a delete older than the value keeps it', async () => {
    const store = await open();
    await store.records.write(task, [
      { op: 'put', kind: 'lineage-step', key: 'work', value: { sessionId: 'new' }, at: 200 },
      { op: 'put', kind: 'lineage-step', key: 'work', value: { sessionId: 'late-but-old' }, at: 100 },
      { op: 'put-once', kind: 'endpoint', key: 'h:1', value: { firstAnswer: 'first' }, at: 1 },
      { op: 'put-once', kind: 'endpoint', key: 'h:1', value: { firstAnswer: 'second' }, at: 2 },
      { op: 'put', kind: 'in-flight', key: 's1', value: { sessionId: 's1' }, at: 500 },
      { op: 'delete', kind: 'in-flight', key: 's1', at: 400 },
      { op: 'put', kind: 'in-flight', key: 's2', value: { sessionId: 's2' }, at: 500 },
      { op: 'delete', kind: 'in-flight', key: 's2', at: 600 },
    ]);
    expect(await values(store)).toEqual({
      'lineage-step:work': { sessionId: 'new' },
      'endpoint:h:1': { firstAnswer: 'first' },
      'in-flight:s1': { sessionId: 's1' },
    });
    // A start-over forgets a kind's records written before it, not one written after.
    await store.records.write(task, [
      { op: 'put', kind: 'lineage-step', key: 'later', value: { sessionId: 'after' }, at: 900 },
      { op: 'delete-kind', kind: 'lineage-step', at: 800 },
    ]);
    expect(await values(store, 'lineage-step')).toEqual({ 'lineage-step:later': { sessionId: 'after' } });
    expect((await store.records.listTasks()).map((found) => [found.workspace, found.runDir])).toEqual([
      ['/work', 'runs'],
    ]);
  });

  it('count wakes once per run, never below what a writer saw, and a replay adds nothing', async () => {
    const store = await open();
    const wake = (run: string, atLeast: number): TaskRecordChange => ({ op: 'wake', run, atLeast, at: 1 });
    await store.records.write(task, [wake('a', 1)]);
    await store.records.write(task, [wake('b', 1)]); // another machine, also first to it: a counter, not a max
    await store.records.write(task, [wake('a', 1)]); // a replayed outbox
    expect(await values(store, 'woke')).toEqual({ 'woke:': 2 });
    await store.records.write(task, [wake('', 7)]); // a run directory that counted 7 before the database
    expect(await values(store, 'woke')).toEqual({ 'woke:': 7 });
    await store.records.write(task, [wake('c', 3)]);
    expect(await values(store, 'woke')).toEqual({ 'woke:': 8 });
  });

  it('lose nothing when eight processes write one task at once', async () => {
    const first = await open();
    const writers = [first, ...(await Promise.all(Array.from({ length: 7 }, () => open())))];
    await Promise.all(
      writers.map(async (store, writer) => {
        for (let round = 0; round < 5; round += 1) {
          await store.records.write(task, [
            { op: 'put', kind: 'manifest-run', key: `run-${writer}`, value: [{ round }], at: round },
            {
              op: 'put',
              kind: 'lineage-step',
              key: `step-${writer}-${round}`,
              value: { sessionId: 'x' },
              at: 1,
            },
            {
              op: 'put-once',
              kind: 'manifest-added',
              key: `${writer}/${round}`,
              value: { writer, round },
              at: 1,
            },
            { op: 'wake', run: `process-${writer}-${round}`, atLeast: 1, at: 1 },
          ]);
        }
      }),
    );
    const records = (await first.records.read(task)).records;
    const count = (kind: string) => records.filter((record) => record.kind === kind).length;
    expect(count('manifest-run')).toBe(8);
    expect(count('lineage-step')).toBe(40);
    expect(count('manifest-added')).toBe(40);
    expect(records.find((record) => record.kind === 'woke')?.value).toBe(40);
    for (const record of records.filter((found) => found.kind === 'manifest-run'))
      expect(record.value).toEqual([{ round: 4 }]);
    expect(await first.records.deleteRecords(task, ['lineage-step'])).toBe(40);
    expect((await first.records.read(task, { kinds: ['lineage-step'] })).records).toEqual([]);
  });

  it('read keys without their values, and the values of some keys', async () => {
    const store = await open();
    await store.records.write(task, [
      { op: 'put-once', kind: 'spill', key: 'a.txt', value: 'A'.repeat(10), at: 1 },
      { op: 'put-once', kind: 'spill', key: 'b.txt', value: 'B', at: 1 },
    ]);
    const keys = (await store.records.read(task, { kinds: ['spill'], keysOnly: true })).records;
    expect(keys.map((record) => [record.key, record.value])).toEqual([
      ['a.txt', undefined],
      ['b.txt', undefined],
    ]);
    expect(await store.records.readValues(task, 'spill', ['b.txt'])).toEqual(new Map([['b.txt', 'B']]));
  });
  it('apply a change of equal time (a replay), and a delete of equal time removes the value', async () => {
    const store = await open();
    await store.records.write(task, [
      { op: 'put', kind: 'lineage-step', key: 'work', value: { sessionId: 'first' }, at: 100 },
      { op: 'put', kind: 'lineage-step', key: 'work', value: { sessionId: 'same time' }, at: 100 },
      { op: 'put', kind: 'in-flight', key: 's1', value: { sessionId: 's1' }, at: 300 },
      { op: 'delete', kind: 'in-flight', key: 's1', at: 300 },
      { op: 'put', kind: 'woke', key: 'x', value: 1, at: 300 },
      { op: 'delete-kind', kind: 'woke', at: 300 },
    ]);
    expect(await values(store)).toEqual({ 'lineage-step:work': { sessionId: 'same time' } });
  });

  it('read records in the order they were first written, an overwrite keeping its place', async () => {
    const store = await open();
    await store.records.write(task, [
      { op: 'put', kind: 'manifest-run', key: 'run-b', value: [1], at: 1 },
      { op: 'put', kind: 'manifest-run', key: 'run-a', value: [2], at: 1 },
      { op: 'put', kind: 'manifest-run', key: 'run-c', value: [3], at: 1 },
    ]);
    await store.records.write(task, [{ op: 'put', kind: 'manifest-run', key: 'run-b', value: [4], at: 2 }]);
    expect((await store.records.read(task)).records.map((record) => [record.key, record.value])).toEqual([
      ['run-b', [4]],
      ['run-a', [2]],
      ['run-c', [3]],
    ]);
  });

  it('delete every record of a task, and the task with them', async () => {
    const store = await open();
    await store.records.write(task, [{ op: 'put', kind: 'lineage-step', key: 'a', value: {}, at: 1 }]);
    expect(await store.records.deleteRecords(task)).toBe(1);
    expect(await store.records.findTask(task)).toBeUndefined();
    expect(await store.records.listTasks()).toEqual([]);
  });
});
