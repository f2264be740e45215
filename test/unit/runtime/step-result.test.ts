import { describe, expect, it } from 'vitest';
import {
  finishStepResult,
  KILLED_BY_SIGNAL,
  markKilledBySignal,
  newStepResult,
  toManifestRow,
} from '../../../src/runtime/step-result.js';

describe('StepResult', () => {
  it('starts as a failed, unfinished first attempt with empty books', () => {
    const result = newStepResult('work', 'run-1', 1000);
    expect(result).toEqual({
      step: 'work',
      sessionId: null,
      ok: false,
      costUsd: 0,
      numTurns: 0,
      text: '',
      error: null,
      startedAt: 1000,
      endedAt: 0,
      attempts: 1,
      errors: [],
      resumed: false,
      retired: [],
      context: 0,
      durationS: 0,
      run: 'run-1',
    });
  });

  it('derives the duration, rounded to hundredths of a second, when it finishes', () => {
    const result = newStepResult('work', 'run-1', 1000.001);
    finishStepResult(result, 1012.3456);
    expect(result.endedAt).toBe(1012.3456);
    expect(result.durationS).toBe(12.34);
  });

  it('marks a step killed by a signal without hiding an earlier, more specific error', () => {
    const plain = newStepResult('work', 'run-1', 10);
    markKilledBySignal(plain, 15);
    expect(plain).toMatchObject({ ok: false, error: KILLED_BY_SIGNAL, endedAt: 15, durationS: 5 });

    const failed = newStepResult('work', 'run-1', 10);
    failed.error = 'API Error: 529 overloaded';
    markKilledBySignal(failed, 15);
    expect(failed.error).toBe('API Error: 529 overloaded');
  });

  it('serialises to the documented manifest row: snake_case keys in order, then duration_s and run', () => {
    const result = newStepResult('work#retry2', 'run-1', 100);
    Object.assign(result, {
      sessionId: 's-2',
      ok: true,
      costUsd: 0.25,
      numTurns: 7,
      text: 'done',
      attempts: 2,
      errors: ['API Error: overloaded'],
      resumed: true,
      retired: ['s-1'],
      context: 42_000,
    });
    finishStepResult(result, 160.5);
    const row = toManifestRow(result);
    expect(Object.keys(row)).toEqual([
      'step',
      'session_id',
      'ok',
      'cost_usd',
      'num_turns',
      'text',
      'error',
      'started_at',
      'ended_at',
      'attempts',
      'errors',
      'resumed',
      'retired',
      'context',
      'duration_s',
      'run',
    ]);
    expect(row).toMatchObject({ session_id: 's-2', duration_s: 60.5, retired: ['s-1'], run: 'run-1' });
    row.errors.push('changed');
    expect(result.errors).toEqual(['API Error: overloaded']);
  });

  it('writes what a gate added after the fixed keys, as a copy, and nothing when it added nothing', () => {
    const result = newStepResult('work:verdict#1', 'run-1', 100);
    expect(Object.keys(toManifestRow(result))).not.toContain('verdict');
    result.annotations = {
      verdict: 'not yet',
      reason: 'tests fail',
      round: 1,
      rounds: 3,
      checks: [
        { item: 'i', command: 'npm test', exit_code: 1, passed: false, duration_s: 2, output_path: '/x.log' },
      ],
    };
    const row = toManifestRow(result);
    expect(Object.keys(row).slice(-5)).toEqual(['verdict', 'reason', 'round', 'rounds', 'checks']);
    const [copied] = row.checks ?? [];
    if (copied) copied.passed = true;
    expect(result.annotations.checks?.[0]?.passed).toBe(false);
  });
});
