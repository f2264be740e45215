/**
 * The goal guard with host checks, the manifest's record of every ruling, rounds that count per
 * task, the no-progress brake and the budget — orchestration on a scripted runner, with the checks
 * run by real shells in a real workspace.
 */
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HumanChannel } from '../../../src/agents/human/channel.js';
import type { FlowerEvent } from '../../../src/runtime/events.js';
import { BUDGET_SPENT } from '../../../src/workflow/budget.js';
import { Goal } from '../../../src/workflow/goal.js';
import type { Step } from '../../../src/workflow/step.js';
import { outOfRoundsLine, STALL_CHOICES, withGoal } from '../../../src/workflow/with-goal.js';
import { Workflow } from '../../../src/workflow/workflow.js';
import { answeringChannel } from './answering-channel.js';
import { FakeRunner, fakeSpec, type Reply } from './fake-runner.js';

const work: Step = {
  name: 'work',
  spec: fakeSpec('coordinator'),
  prompt: 'build it',
  resumePrompt: 'carry on',
};
const ACHIEVED = '## Conclusion\nachieved\n## Reason\nlooks done\n## Not passed\n';
const notYet = (gap: string) => `## Conclusion\nnot yet\n## Reason\n${gap}\n## Not passed\n- ${gap}`;

interface Setup {
  verdicts: string[];
  checklist?: string[];
  /** Runs when a work round is answered (e.g. writes a file into the workspace). */
  onWork?: (round: number, workspace: string) => void;
}

function setup({
  verdicts,
  checklist = ['done.txt exists — check: `test -f done.txt && echo present`'],
  onWork,
}: Setup) {
  const root = mkdtempSync(join(tmpdir(), 'flower-guard-'));
  const runner = FakeRunner.continuous(undefined, root);
  mkdirSync(runner.workspace!, { recursive: true });
  const goalPath = join(runner.workspace!, '.flower', 'notes', 'goal.md');
  new Goal({ statement: 'done.txt is there', checks: checklist }).write(goalPath);
  const events: FlowerEvent[] = [];
  let judged = 0;
  let worked = 0;
  const eventsAtJudging: number[] = [];
  const scripted = new FakeRunner(
    (call): Reply => {
      if (call.options.stepName?.includes(':verdict#')) {
        eventsAtJudging.push(events.length);
        return { text: verdicts[judged++] ?? ACHIEVED };
      }
      onWork?.(++worked, runner.workspace!);
      return { text: `round ${worked} done` };
    },
    runner.workspace,
    runner.runDir,
  );
  return { runner: scripted, goalPath, events, eventsAtJudging, workspace: runner.workspace! };
}

describe('withGoal with host checks', () => {
  it('runs the checks before the judge; a failing one overrides "achieved" and its output goes back to the worker', async () => {
    const { runner, goalPath, events, eventsAtJudging, workspace } = setup({
      verdicts: [ACHIEVED, ACHIEVED],
      onWork: (round, ws) => {
        if (round === 2) writeFileSync(join(ws, 'done.txt'), 'ok');
      },
    });
    const ctx = await new Workflow([withGoal(work, { channel: new HumanChannel(), goalPath })]).run(runner, {
      onEvent: (event) => events.push(event),
    });
    expect(ctx.failedAt).toBeUndefined();
    expect(runner.labels()).toEqual(['work', 'work:verdict#1', 'work#round2', 'work:verdict#2']);
    // Round 1: the check failed before the judge was asked, and the judge was shown it.
    const firstCheck = events.findIndex(
      (event) => event.kind === 'system' && event.payload.notice === 'fail',
    );
    expect(firstCheck).toBeGreaterThanOrEqual(0);
    expect(firstCheck).toBeLessThan(eventsAtJudging[0]!);
    expect(events[firstCheck]?.text).toMatch(
      /^x check failed · exit 1 in [\d.]+ s · test -f done\.txt && echo present/,
    );
    const judge1 = runner.calls[1]!.prompt;
    expect(judge1).toContain('# Checks flower ran on this machine after the round');
    expect(judge1).toContain('[FAILED] `test -f done.txt && echo present` — exit 1');
    // The worker is sent back with the failing check, although the judge said achieved.
    const round2 = runner.calls[2]!;
    expect(round2.options.resume).toBe(runner.results[0]?.sessionId);
    expect(round2.prompt).toContain('1 of 1 check flower ran failed');
    expect(round2.prompt).toContain('What the failing checks printed');
    expect(round2.prompt).toContain(join(workspace, '.flower', 'artifacts', 'checks', '1', 'item-1.log'));
    // Round 2: the file exists, the check passes, the judge's "achieved" stands.
    expect(runner.calls[3]!.prompt).toContain('[passed] `test -f done.txt && echo present` — exit 0');
    expect(runner.calls[3]!.prompt).toContain('      present');
    expect(existsSync(join(workspace, '.flower', 'artifacts', 'checks', '2', 'item-1.log'))).toBe(true);
  });

  it('writes every ruling on its judge row and every rejection on the work row it sent back', async () => {
    const { runner, goalPath } = setup({
      verdicts: [ACHIEVED, ACHIEVED],
      onWork: (round, ws) => round === 2 && writeFileSync(join(ws, 'done.txt'), ''),
    });
    await new Workflow([withGoal(work, { channel: new HumanChannel(), goalPath, rounds: 3 })]).run(runner);
    const [work1, judge1, work2, judge2] = runner.results;
    expect(judge1?.annotations).toMatchObject({
      verdict: 'not yet',
      reason: expect.stringContaining('1 of 1 check flower ran failed'),
      round: 1,
      rounds: 3,
      checks: [
        {
          command: 'test -f done.txt && echo present',
          exit_code: 1,
          passed: false,
          duration_s: expect.any(Number),
          output_path: expect.stringContaining('item-1.log'),
        },
      ],
    });
    expect(work1?.annotations?.rejected).toContain('check flower ran failed');
    expect(judge2?.annotations).toMatchObject({
      verdict: 'achieved',
      round: 2,
      checks: [{ passed: true, exit_code: 0 }],
    });
    expect(work2?.annotations?.rejected).toBeUndefined();
  });

  it('judges every round in a fresh session of its own, never resuming an earlier ruling', async () => {
    const { runner, goalPath } = setup({
      verdicts: [notYet('a'), notYet('b'), ACHIEVED],
      checklist: ['judged by eye'],
    });
    await new Workflow([withGoal(work, { channel: new HumanChannel(), goalPath, rounds: 3 })]).run(runner);
    const judges = runner.calls.filter((call) => call.options.stepName?.includes(':verdict#'));
    expect(judges).toHaveLength(3);
    for (const judge of judges) {
      expect(judge.options.resume).toBeUndefined();
      expect(judge.options.fork).toBeUndefined();
      expect(judge.options.onSession).toBeUndefined();
    }
    const sessions = runner.results
      .filter((result) => result.step.includes(':verdict#'))
      .map((result) => result.sessionId);
    expect(new Set(sessions).size).toBe(3);
  });

  it("gives each round a header with its number and the task's cap", async () => {
    const { runner, goalPath, events } = setup({ verdicts: [notYet('a'), ACHIEVED], checklist: ['by eye'] });
    await new Workflow([withGoal(work, { channel: new HumanChannel(), goalPath, rounds: 3 })]).run(runner, {
      onEvent: (event) => events.push(event),
    });
    const headers = events.filter((event) => event.kind === 'step').map((event) => event.payload);
    expect(headers).toEqual([
      expect.objectContaining({ name: 'work', round: 1, rounds: 3 }),
      expect.objectContaining({ name: 'work', round: 2, rounds: 3, resumed: false }),
    ]);
  });
});

describe('rounds count per task, and every stop says why', () => {
  function manifest(runDir: string, rows: object[]) {
    mkdirSync(runDir, { recursive: true });
    writeFileSync(join(runDir, 'manifest.json'), JSON.stringify(rows));
  }
  const judgedRow = (round: number, reason: string) => ({
    step: `work:verdict#${round}`,
    ok: true,
    run: 'earlier',
    started_at: 100 + round,
    ended_at: 101 + round,
    cost_usd: 0.2,
    text: '',
    verdict: 'not yet',
    reason,
    not_passed: [reason],
    round,
    rounds: 2,
  });

  it('a wake with no rounds left spends nothing and says what continues it', async () => {
    const { runner, goalPath } = setup({ verdicts: [], checklist: ['by eye'] });
    manifest(runner.runDir!, [judgedRow(1, 'no README'), judgedRow(2, 'still no README')]);
    const ctx = await new Workflow([
      withGoal(work, { channel: new HumanChannel(), goalPath, rounds: 2 }),
    ]).run(runner);
    expect(runner.calls).toHaveLength(0);
    expect(ctx.failedAt).toBe('work');
    expect(ctx.aborted).toBe(
      'the judge ruled not yet after 2/2 rounds: still no README; flower --rounds 4 continues',
    );
  });

  it("with more rounds allowed, the next one is numbered on and resumes with the judge's last word", async () => {
    const { runner, goalPath } = setup({ verdicts: [ACHIEVED], checklist: ['by eye'] });
    manifest(runner.runDir!, [judgedRow(1, 'no README'), judgedRow(2, 'still no README')]);
    const ctx = await new Workflow([withGoal(work, { channel: new HumanChannel(), goalPath, rounds: 4 })], {
      context: { outputs: {}, results: {}, sessions: { work: 's-earlier' }, data: {} },
    }).run(runner);
    expect(ctx.failedAt).toBeUndefined();
    expect(runner.labels()).toEqual(['work', 'work:verdict#3']);
    expect(runner.calls[0]?.prompt).toContain('carry on');
    expect(runner.calls[0]?.prompt).toContain('still no README');
    expect(runner.results[1]?.annotations).toMatchObject({ round: 3, rounds: 4 });
  });

  it('running out of rounds in this process stops with the same line', async () => {
    const { runner, goalPath, workspace } = setup({
      verdicts: [notYet('tests fail'), notYet('tests still fail')],
      checklist: ['by eye'],
      onWork: (round, ws) => writeFileSync(join(ws, `progress-${round}.txt`), 'x'),
    });
    const ctx = await new Workflow([
      withGoal(work, { channel: new HumanChannel(), goalPath, rounds: 2 }),
    ]).run(runner);
    expect(existsSync(join(workspace, 'progress-2.txt'))).toBe(true);
    expect(ctx.aborted).toBe(
      'the judge ruled not yet after 2/2 rounds: tests still fail; flower --rounds 4 continues',
    );
    expect(runner.results[2]?.annotations?.rejected).toBe('tests still fail');
  });
});

describe('the no-progress brake', () => {
  it('stops when two rounds in a row end in the same state; unattended it does not wait', async () => {
    const { runner, goalPath } = setup({ verdicts: [notYet('tests'), notYet('tests'), ACHIEVED] });
    const channel = new HumanChannel({ timeoutSeconds: 0 });
    const ctx = await new Workflow([withGoal(work, { channel, goalPath, rounds: 5 })]).run(runner);
    expect(runner.labels()).toEqual(['work', 'work:verdict#1', 'work#round2', 'work:verdict#2']);
    expect(ctx.failedAt).toBe('work');
    expect(ctx.aborted).toBe(
      'no progress in 2 rounds in a row: the same check failing ("done.txt exists — check: `test -f done.txt && echo present`"), the same 2 items open ("done.txt exists — check: `test -f done.txt && echo present`"; "tests"), and the workspace unchanged; flower continues from here (--stall 0 turns the brake off)',
    );
  });

  it('a human can wave it on, and a round that changed a file is progress', async () => {
    const { runner, goalPath } = setup({
      verdicts: [notYet('tests'), notYet('tests'), notYet('tests'), ACHIEVED],
      checklist: ['by eye'],
      onWork: (round, ws) => round === 3 && writeFileSync(join(ws, 'new.txt'), 'x'),
    });
    const { channel, asked } = answeringChannel(() => '2');
    const ctx = await new Workflow([withGoal(work, { channel, goalPath, rounds: 5 })]).run(runner);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('no progress in 2 rounds in a row');
    expect(channel.asks[0]?.options).toEqual([...STALL_CHOICES]);
    expect(runner.labels().filter((label) => label.includes('verdict'))).toHaveLength(4);
    expect(ctx.failedAt).toBeUndefined();
  });

  it('is off with stall 0', async () => {
    const { runner, goalPath } = setup({
      verdicts: [notYet('tests'), notYet('tests'), ACHIEVED],
      checklist: ['by eye'],
    });
    const ctx = await new Workflow([
      withGoal(work, { channel: new HumanChannel({ timeoutSeconds: 0 }), goalPath, rounds: 5, stall: 0 }),
    ]).run(runner);
    expect(ctx.failedAt).toBeUndefined();
    expect(runner.labels()).toHaveLength(6);
  });
});

describe('a spent budget while judging', () => {
  it('stops with the budget line and rules nothing (no round is spent)', async () => {
    const line = `${BUDGET_SPENT} $5.10 of $5.00; run with --budget 10 to continue`;
    const { runner, goalPath } = setup({ verdicts: [], checklist: ['by eye'] });
    const cut = new FakeRunner(
      (call): Reply =>
        call.options.stepName?.includes(':verdict#') ? { ok: false, error: line } : { text: 'worked' },
      runner.workspace,
      runner.runDir,
    );
    const ctx = await new Workflow([withGoal(work, { channel: new HumanChannel(), goalPath })]).run(cut);
    expect(ctx.aborted).toBe(line);
    expect(cut.results[1]?.annotations).toBeUndefined();
    expect(cut.results[0]?.annotations).toBeUndefined();
  });
});

describe('outOfRoundsLine (issue 21)', () => {
  it('names what is left to do, without a stray `.;` after the reason', () => {
    expect(outOfRoundsLine(2, 2, 'Two checks still fail.', ['npm test passes', 'README exists'])).toBe(
      'the judge ruled not yet after 2/2 rounds: Two checks still fail; not passed: npm test passes; README exists; flower --rounds 4 continues',
    );
    expect(outOfRoundsLine(1, 1, 'tests fail', ['tests fail'])).toBe(
      'the judge ruled not yet after 1/1 rounds: tests fail; flower --rounds 2 continues',
    );
  });
});
