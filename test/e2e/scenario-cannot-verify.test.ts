/**
 * Scenario 3 (flower-guides §15): what cannot be verified here goes to a human. Before any work is
 * spent (triage when the goal is set: accept, change, drop, or nobody there), and after a round the
 * judge could not verify (accept, change the goal, or nobody answers). Real Runtime, SDK and binary;
 * only the model is scripted.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lastUserText } from '../../src/testing/index.js';
import { Goal } from '../../src/workflow/goal.js';
import { starterFlow } from '../../src/workflow/starter.js';
import { TRIAGE_CHOICES } from '../../src/workflow/triage.js';
import { CANNOT_VERIFY_CHOICES } from '../../src/workflow/with-goal.js';
import {
  ACHIEVED,
  answerQuestions,
  BEQUEST_REPLY,
  HELLO_GOAL,
  mainRouter,
  roleOf,
  roundsScript,
  type Scenario,
  startFrozen,
} from './scenario-harness.js';

let scenario: Scenario | undefined;
afterEach(async () => {
  await scenario?.close();
  scenario = undefined;
});

const CANNOT_VERIFY =
  '## Conclusion\ncannot verify here\n## Reason\nscreen capture is not permitted in this container\n## Not passed\n- the window shows hello';

describe('scenario 3: cannot verify here, after a round', () => {
  it('asks the human with three choices; "accept" passes the step', async () => {
    scenario = await startFrozen(roundsScript([CANNOT_VERIFY], ['Built it.']));
    const flow = starterFlow({ workspace: scenario.workspace, timeoutSeconds: 60 });
    const ctx = await flow.run(scenario.runtime(), {
      onEvent: answerQuestions(flow.channel!, scenario.events, () => '1'),
    });
    const [ask] = flow.channel!.asks;
    expect(ask?.question).toContain('screen capture is not permitted');
    expect(ask?.options).toEqual([...CANNOT_VERIFY_CHOICES]);
    expect(ask?.answer).toBe(CANNOT_VERIFY_CHOICES[0]);
    expect(ctx.failedAt).toBeUndefined();
    expect(ctx.verdict?.cannotVerify).toBe(true);
    const rows = scenario.manifest();
    expect(rows.map((row) => row.step)).toEqual(['work', 'work:verdict#1', 'bequest']);
    expect(rows[1]).toMatchObject({ verdict: 'cannot verify here', round: 1, rounds: 3 });
  });

  it('"change the goal" appends the new goal to the goal file and runs another round', async () => {
    scenario = await startFrozen(
      roundsScript([CANNOT_VERIFY, ACHIEVED], ['Built it.', 'Adjusted to the new goal.']),
    );
    const flow = starterFlow({ workspace: scenario.workspace, timeoutSeconds: 60 });
    const answers = ['2', 'Only check the printed text, not the window.'];
    const ctx = await flow.run(scenario.runtime(), {
      onEvent: answerQuestions(flow.channel!, scenario.events, () => answers.shift()),
    });
    expect(ctx.failedAt).toBeUndefined();
    const goal = Goal.load(join(scenario.workspace, '.flower/notes/goal.md'));
    expect(goal?.statement).toContain('hello.py exists and prints hello world.');
    expect(goal?.statement).toContain('(amended) Only check the printed text, not the window.');
    const rows = scenario.manifest();
    expect(rows.map((row) => row.step)).toEqual([
      'work',
      'work:verdict#1',
      'work#round2',
      'work:verdict#2',
      'bequest',
    ]);
    // The rejected round is marked as such on its own row.
    expect(rows[0]?.rejected).toContain('A human changed the goal');
    const judges = scenario.mock.mainRequests().filter((request) => roleOf(request) === 'verdict');
    expect(lastUserText(judges[1]!)).toContain('(amended) Only check the printed text');
  });

  it('nobody answering stops the step at once: no further rounds, the reason kept', async () => {
    scenario = await startFrozen(roundsScript([CANNOT_VERIFY, ACHIEVED], ['Built it.']));
    const flow = starterFlow({ workspace: scenario.workspace, timeoutSeconds: 0, rounds: 3 });
    const ctx = await flow.run(scenario.runtime(), { onEvent: scenario.sink });
    expect(ctx.failedAt).toBe('work');
    expect(ctx.aborted).toContain('nobody answered');
    expect(flow.channel!.asks[0]?.state).toBe('timeout');
    expect(scenario.manifest().map((row) => row.step)).toEqual(['work', 'work:verdict#1', 'bequest']);
    // Unattended: the question never showed up as waiting.
    expect(scenario.events.some((event) => event.kind === 'ask' && event.payload.state === 'asked')).toBe(
      false,
    );
  });
});

describe('scenario 3: triage when the goal is set, before any work', () => {
  const MAC = 'the app runs on macOS [cannot verify here: this machine is Linux]';
  const goalWithMac = `${HELLO_GOAL}\n- ${MAC}`;

  /** The judge sets a goal with one unverifiable item; the coordinator and judge then do one round. */
  async function triageScenario(): Promise<Scenario> {
    return startFrozen(
      {
        main: mainRouter({
          'set-goal': () => ({ text: goalWithMac }),
          coordinator: () => ({ text: 'Wrote hello.py.' }),
          verdict: () => ({ text: ACHIEVED }),
          bequest: () => ({ text: BEQUEST_REPLY }),
        }),
      },
      null,
    );
  }

  /** Answers in order, noting how many work requests the model had seen at each question. */
  function answering(
    current: Scenario,
    channelOf: () => ReturnType<typeof starterFlow>['channel'],
    answers: string[],
  ) {
    const workSeen: number[] = [];
    const sink = answerQuestions(channelOf()!, current.events, () => {
      workSeen.push(
        current.mock.mainRequests().filter((request) => roleOf(request) === 'coordinator').length,
      );
      return answers.shift();
    });
    return { sink, workSeen };
  }

  const goalPath = (current: Scenario) => join(current.workspace, '.flower/notes/goal.md');
  const workPrompt = (current: Scenario) =>
    lastUserText(current.mock.mainRequests().find((request) => roleOf(request) === 'coordinator')!);

  it('"accept" keeps the item as an assumption the judge is told not to hold against the round', async () => {
    scenario = await triageScenario();
    const flow = starterFlow({ workspace: scenario.workspace, timeoutSeconds: 60 });
    const { sink, workSeen } = answering(scenario, () => flow.channel, ['1']);
    const ctx = await flow.run(scenario.runtime(), { onEvent: sink });
    expect(ctx.failedAt).toBeUndefined();
    expect(flow.channel!.asks[0]?.options).toEqual([...TRIAGE_CHOICES]);
    expect(flow.channel!.asks[0]?.question).toContain(MAC);
    expect(workSeen).toEqual([0]);
    expect(Goal.load(goalPath(scenario))?.assumptions).toEqual([
      'the app runs on macOS [cannot verify here, accepted: this machine is Linux]',
    ]);
    expect(ctx.assumptions).toHaveLength(1);
    const judge = scenario.mock.mainRequests().find((request) => roleOf(request) === 'verdict')!;
    expect(lastUserText(judge)).toContain('# Accepted as unverifiable here');
  });

  it('"change" replaces the item with the human\'s lines before the work prompt is written', async () => {
    scenario = await triageScenario();
    const flow = starterFlow({ workspace: scenario.workspace, timeoutSeconds: 60 });
    const { sink, workSeen } = answering(scenario, () => flow.channel, [
      '2',
      'node -v prints a version — check: `node -v`',
    ]);
    const ctx = await flow.run(scenario.runtime(), { onEvent: sink });
    expect(ctx.failedAt).toBeUndefined();
    expect(workSeen).toEqual([0, 0]);
    const goal = Goal.load(goalPath(scenario))!;
    expect(goal.checks.at(-1)).toBe('node -v prints a version — check: `node -v`');
    expect(goal.unverifiable).toEqual([]);
    expect(workPrompt(scenario)).toContain('node -v prints a version');
    expect(workPrompt(scenario)).not.toContain('macOS');
    // The new item is a check: flower ran it and the verdict row says so.
    const verdictRow = scenario.manifest().find((row) => row.step === 'work:verdict#1');
    expect(verdictRow?.checks).toEqual([
      expect.objectContaining({ command: 'node -v', exit_code: 0, passed: true }),
    ]);
  });

  it('"drop" removes the item, so nobody works on it', async () => {
    scenario = await triageScenario();
    const flow = starterFlow({ workspace: scenario.workspace, timeoutSeconds: 60 });
    const { sink } = answering(scenario, () => flow.channel, ['3']);
    const ctx = await flow.run(scenario.runtime(), { onEvent: sink });
    expect(ctx.failedAt).toBeUndefined();
    expect(Goal.load(goalPath(scenario))?.checks).toHaveLength(3);
    expect(workPrompt(scenario)).not.toContain('macOS');
  });

  it('unattended, from the command line: recorded as an assumption and reported at the end', async () => {
    scenario = await triageScenario();
    const run = await scenario.flower(['--timeout', '0'], { input: '\n' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('- goal: 4 items — 3 for the judge, 1 cannot be verified here');
    expect(run.stdout).toContain('! nobody answered: 1 item recorded as assumed, not verified');
    expect(run.stdout).toContain(
      '! assumed, not verified on this machine: the app runs on macOS [cannot verify here, accepted: this machine is Linux]',
    );
    // Reported before the work, not after it.
    expect(run.stdout.indexOf('nobody answered')).toBeLessThan(run.stdout.indexOf('== work'));
  });
});
