import { describe, expect, it } from 'vitest';
import { roundState, StallWatch } from '../../../src/workflow/stall.js';
import { Verdict } from '../../../src/workflow/verdict.js';
import { checkRun } from './check-run.js';

const tree = (hash: string) => ({ method: 'git' as const, hash });
const judged = (...failed: string[]) => new Verdict({ state: 'not yet', failed });

describe('StallWatch', () => {
  it('trips when the last N rounds ended in the same state, never on the first round', () => {
    const watch = new StallWatch(2);
    const same = roundState([checkRun({ passed: false })], judged('README'), tree('a'));
    expect(watch.record(same)).toBe(false);
    expect(watch.record(same)).toBe(true);
    expect(watch.stopLine()).toBe(
      'no progress in 2 rounds in a row: the same check failing ("tests pass — check: `npm test`"), the same item open ("readme"), and the workspace unchanged; flower continues from here (--stall 0 turns the brake off)',
    );
  });

  it('names which checks keep failing, never "0 of 1 failing" when they pass (issue 21)', () => {
    const stop = (...state: Parameters<typeof roundState>) => {
      const watch = new StallWatch(2);
      watch.record(roundState(...state));
      watch.record(roundState(...state));
      return watch.stopLine();
    };
    expect(stop([checkRun({ passed: true })], judged('hello.txt should say hi'), tree('a'))).toContain(
      ': its check passing, the same item open ("hello.txt should say hi"),',
    );
    expect(stop([checkRun(), checkRun({ item: 'b' })], judged(), tree('a'))).toContain(
      ': all 2 checks passing, no open items named,',
    );
    const long = `the build ${'really '.repeat(20)}succeeds`;
    const line = stop(
      [
        checkRun({ item: 'a', passed: false }),
        checkRun({ item: long, passed: false }),
        checkRun({ item: 'c', passed: false }),
        checkRun(),
      ],
      judged('x', 'y', 'z'),
      tree('a'),
    );
    expect(line).toContain(': the same 3 of 4 checks failing ("a"; "the build really really');
    expect(line).toContain('..." and 1 more), the same 3 items open ("x"; "y" and 1 more),');
    expect(line).not.toContain('succeeds');
  });

  it('counts any change as progress: a file, a check that flipped, an item closed', () => {
    const base = roundState([checkRun({ passed: false })], judged('README'), tree('a'));
    const variants = [
      roundState([checkRun({ passed: false })], judged('README'), tree('b')),
      roundState([checkRun({ passed: true })], judged('README'), tree('a')),
      roundState([checkRun({ passed: false })], judged(), tree('a')),
    ];
    for (const variant of variants) {
      const watch = new StallWatch(2);
      watch.record(base);
      expect(watch.record(variant)).toBe(false);
    }
    // Wording and order of the judge's open items do not count as a change.
    const watch = new StallWatch(2);
    watch.record(roundState([], judged('README exists', 'Tests  pass'), tree('a')));
    expect(watch.record(roundState([], judged('tests pass', 'readme exists'), tree('a')))).toBe(true);
  });

  it('waits for more rounds with a higher limit, restarts when a human waves it on, and is off at 0', () => {
    const same = roundState([], judged('x'), tree('a'));
    const three = new StallWatch(3);
    expect([three.record(same), three.record(same), three.record(same)]).toEqual([false, false, true]);
    three.restart();
    expect(three.record(same)).toBe(false);
    const off = new StallWatch(0);
    expect([off.record(same), off.record(same), off.record(same)]).toEqual([false, false, false]);
  });

  it('a limit of 1 is off too: one round always equals itself, so it would stop every task at once', () => {
    const same = roundState([], judged('x'), tree('a'));
    const one = new StallWatch(1);
    expect([one.record(same), one.record(same), one.record(same)]).toEqual([false, false, false]);
  });
});
