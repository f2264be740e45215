import { describe, expect, it } from 'vitest';
import {
  checkLine,
  checksEvidence,
  describeRun,
  manifestChecks,
  outcomeOf,
  rulingWithChecks,
  sendBackText,
} from '../../../src/workflow/evidence.js';
import { Verdict } from '../../../src/workflow/verdict.js';
import { checkRun } from './check-run.js';

const failing = checkRun({ exitCode: 1, passed: false, tail: 'FAIL test/a.test.ts\n1 failed' });

describe('rulingWithChecks', () => {
  it('makes a round not yet when a check failed, whatever the judge concluded', () => {
    for (const state of ['achieved', 'cannot verify here', undefined] as const) {
      const ruling = rulingWithChecks(new Verdict({ state, reason: 'looks fine' }), [checkRun(), failing]);
      expect(ruling.state).toBe('not yet');
      expect(ruling.reason).toContain('1 of 2 checks flower ran failed');
      expect(ruling.reason).toContain('`npm test` (exit 1 in 1.5 s)');
      expect(ruling.failed).toContain(failing.item);
    }
  });

  it('never upgrades a ruling: passing checks leave it as the judge gave it', () => {
    const unclear = new Verdict({ reason: 'hm' });
    expect(rulingWithChecks(unclear, [checkRun()])).toBe(unclear);
    const notYet = new Verdict({ state: 'not yet', reason: 'README missing', failed: ['README'] });
    expect(rulingWithChecks(notYet, [checkRun()])).toBe(notYet);
  });

  it("keeps the judge's own gaps beside the failing checks' items", () => {
    const ruling = rulingWithChecks(new Verdict({ state: 'not yet', reason: 'r', failed: ['README'] }), [
      failing,
    ]);
    expect(ruling.failed).toEqual([failing.item, 'README']);
  });
});

describe('what the judge and the worker are shown', () => {
  it("gives the judge command, outcome, duration, the tail and the whole output's path", () => {
    const text = checksEvidence([checkRun(), failing]);
    expect(text).toContain('1. [passed] `npm test` — exit 0 in 1.5 s');
    expect(text).toContain('2. [FAILED] `npm test` — exit 1 in 1.5 s');
    expect(text).toContain('whole output: /ws/.flower/artifacts/checks/1/item-1.log (12 bytes)');
    expect(text).toContain('      1 failed');
    expect(checksEvidence([])).toBe('');
  });

  it('says when a log holds only the start and the end of what a check printed', () => {
    const capped = checkRun({ outputBytes: 104_857_600, cutBytes: 104_726_528 });
    expect(checksEvidence([capped])).toContain(
      'output: /ws/.flower/artifacts/checks/1/item-1.log (104857600 bytes printed; the log keeps the start and the end, 104726528 bytes cut between)',
    );
    expect(checksEvidence([capped])).not.toContain('whole output');
  });

  it("sends the worker the judge's gaps and what the failing checks printed", () => {
    const ruling = rulingWithChecks(new Verdict({ state: 'achieved' }), [failing]);
    const text = sendBackText(ruling, [failing]);
    expect(text).toContain('Do not start over');
    expect(text).toContain('What the failing checks printed');
    expect(text).toContain('FAIL test/a.test.ts');
  });

  it('records each check for the manifest and as one screen line', () => {
    expect(manifestChecks([failing, checkRun({ timedOut: true, passed: false, exitCode: null })])).toEqual([
      {
        item: failing.item,
        command: 'npm test',
        exit_code: 1,
        passed: false,
        duration_s: 1.5,
        output_path: failing.outputPath,
      },
      expect.objectContaining({ exit_code: null, timed_out: true }),
    ]);
    expect(checkLine(checkRun())).toBe('+ check passed · exit 0 in 1.5 s · npm test');
    expect(checkLine(failing)).toBe(`x check failed · exit 1 in 1.5 s · npm test · ${failing.outputPath}`);
  });

  it('says how a check ended: did not run (and why, without a tail), killed at its limit, ended by a signal', () => {
    const unread = checkRun({
      passed: false,
      exitCode: null,
      problem: 'the command is empty',
      tail: 'stale',
    });
    const text = describeRun(unread, 0);
    expect(text).toContain('— did not run');
    expect(text).toContain('why: the command is empty');
    expect(text).not.toContain('its last lines');
    const slow = checkRun({ passed: false, exitCode: null, timedOut: true, durationS: 600 });
    expect(outcomeOf(slow)).toBe('killed at its time limit after 600 s');
    expect(outcomeOf(slow, false)).toBe('killed at its time limit');
    const ended = checkRun({ passed: false, exitCode: null, signal: 'SIGKILL', durationS: 2 });
    expect(outcomeOf(ended)).toBe('ended by SIGKILL after 2 s');
    expect(outcomeOf(ended, false)).toBe('ended by SIGKILL');
  });
});
