/**
 * The registry of this process's task-file changes (runtime/task-changes.ts): a listener hears
 * the changes of its run directory (however the path is spelled) until it unsubscribes, and a
 * listener that throws neither reaches the writer nor keeps the others from hearing.
 */
import { describe, expect, it } from 'vitest';
import {
  emitTaskChange,
  subscribeTaskChanges,
  type TaskFileChange,
} from '../../../src/runtime/task-changes.js';

const wake: TaskFileChange = { kind: 'wake', woke: 1 };

describe('task changes', () => {
  it('reach the listeners of that run directory, however its path is spelled, until they unsubscribe', () => {
    const heard: string[] = [];
    const stop = subscribeTaskChanges('/tmp/flower-changes/runs', (change) => heard.push(`a ${change.kind}`));
    const other = subscribeTaskChanges('/tmp/flower-changes/other', (change) =>
      heard.push(`b ${change.kind}`),
    );
    emitTaskChange('/tmp/flower-changes/x/../runs', wake);
    stop();
    emitTaskChange('/tmp/flower-changes/runs', wake);
    other();
    expect(heard).toEqual(['a wake']);
  });

  it('a listener that throws is its own business', () => {
    const heard: string[] = [];
    const first = subscribeTaskChanges('/tmp/flower-changes/runs', () => {
      throw new Error('broken listener');
    });
    const second = subscribeTaskChanges('/tmp/flower-changes/runs', (change) => heard.push(change.kind));
    expect(() => emitTaskChange('/tmp/flower-changes/runs', wake)).not.toThrow();
    expect(heard).toEqual(['wake']);
    first();
    second();
  });
});
