import { describe, expect, it } from 'vitest';
import type { StoredManifestRow } from '../../../src/runtime/manifest.js';
import { historyOf } from '../../../src/workflow/goal-history.js';

const row = (step: string, startedAt: number, fields: Record<string, unknown> = {}): StoredManifestRow => ({
  step,
  ok: true,
  started_at: startedAt,
  ended_at: startedAt + 1,
  cost_usd: 0.1,
  text: '',
  ...fields,
});

describe('historyOf', () => {
  it('counts judged rounds since the goal was last set, across runs, and keeps the last ruling', () => {
    const rows = [
      row('set-goal', 10, { run: 'a' }),
      row('work:verdict#1', 20, { run: 'a', verdict: 'not yet', reason: 'old goal' }),
      row('set-goal', 30, { run: 'b' }),
      row('work:verdict#1', 40, {
        run: 'b',
        verdict: 'not yet',
        reason: 'tests fail',
        not_passed: ['tests'],
        round: 1,
        rounds: 2,
      }),
      row('work:verdict#2', 50, { run: 'c', verdict: 'achieved', reason: 'all good', round: 2, rounds: 2 }),
      row('work', 45, { run: 'c' }),
    ];
    const history = historyOf(rows, 'work:verdict', 'set-goal');
    expect(history.rounds).toBe(2);
    expect(history.last).toMatchObject({
      verdict: 'achieved',
      reason: 'all good',
      round: 2,
      rounds: 2,
      at: 51,
    });
  });

  it('does not count a judge that never ruled (killed, or stopped by the budget), and reads older rows by their text', () => {
    const rows = [
      row('work:verdict#1', 1, {
        text: '## Conclusion\nnot yet\n## Reason\nno tests\n## Not passed\n- tests',
      }),
      row('work:verdict#2', 2, { ok: false, error: 'killed-by-signal' }),
      row('work:verdict#2', 3, {
        ok: false,
        error: 'budget spent: $5.01 of $5.00; run with --budget 10 to continue',
      }),
    ];
    const history = historyOf(rows, 'work:verdict', 'set-goal');
    expect(history.rounds).toBe(1);
    expect(history.last).toMatchObject({
      verdict: 'not yet',
      reason: 'no tests',
      notPassed: ['tests'],
      round: 1,
    });
  });

  it('ignores other labels that merely start the same way, and a goal step that failed', () => {
    const rows = [
      row('work:verdict#1', 4, { verdict: 'not yet' }),
      row('set-goal', 5, { ok: false }), // a failed derivation: the goal is still the old one
      row('work:verdict#1', 6, { verdict: 'not yet' }),
      row('work:verdict#1-extra', 7, { verdict: 'achieved' }),
      row('other:verdict#1', 8, { verdict: 'achieved' }),
    ];
    expect(historyOf(rows, 'work:verdict', 'set-goal')).toMatchObject({
      rounds: 2,
      last: { verdict: 'not yet' },
    });
    expect(historyOf([], 'work:verdict', 'set-goal')).toEqual({ rounds: 0 });
  });

  it('takes the latest ruling by time, whatever the order of the rows, and a round as recorded', () => {
    const rows = [
      row('work:verdict#3', 30, { run: 'later', verdict: 'achieved', round: 7 }),
      row('work:verdict#1', 10, { run: 'earlier', verdict: 'not yet' }),
    ];
    expect(historyOf(rows, 'work:verdict', 'set-goal')).toMatchObject({
      rounds: 2,
      last: { verdict: 'achieved', round: 7 },
    });
  });
});
