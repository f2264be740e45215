/**
 * Scenario 3 (flower-guides §15): the judge cannot verify the goal here, and a human decides —
 * accept, change the goal, or nobody answers — plus the early warning when the goal is set with
 * checks that cannot be verified. Real Runtime, SDK and binary; only the model is scripted.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HumanChannel } from '../../src/agents/human/channel.js';
import { lastUserText } from '../../src/testing/index.js';
import { Brief } from '../../src/workflow/brief.js';
import { Goal } from '../../src/workflow/goal.js';
import { goalStep, UNVERIFIABLE_CHECKS_EVENT } from '../../src/workflow/goal-step.js';
import { starterFlow } from '../../src/workflow/starter.js';
import { CANNOT_VERIFY_CHOICES } from '../../src/workflow/with-goal.js';
import { Workflow } from '../../src/workflow/workflow.js';
import {
  ACHIEVED,
  answerQuestions,
  HELLO_BRIEF,
  HELLO_GOAL,
  inOrder,
  mainRouter,
  roleOf,
  type Scenario,
  startScenario,
} from './scenario-harness.js';

let scenario: Scenario | undefined;
afterEach(async () => {
  await scenario?.close();
  scenario = undefined;
});

const CANNOT_VERIFY =
  '## Conclusion\ncannot verify here\n## Reason\nscreen capture is not permitted in this container\n## Not passed\n- the window shows hello';

async function frozenScenario(...verdicts: string[]): Promise<Scenario> {
  const started = await startScenario({
    main: mainRouter({
      coordinator: inOrder({ text: 'Built it.' }, { text: 'Adjusted to the new goal.' }),
      verdict: inOrder(...verdicts.map((text) => ({ text }))),
    }),
  });
  Brief.parse(HELLO_BRIEF).write(join(started.workspace, '.flower/notes/brief.md'));
  Goal.parse(HELLO_GOAL).write(join(started.workspace, '.flower/notes/goal.md'));
  return started;
}

describe('scenario 3: cannot verify here', () => {
  it('asks the human with three choices; "accept" passes the step', async () => {
    scenario = await frozenScenario(CANNOT_VERIFY);
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
    expect(scenario.manifest().map((row) => row.step)).toEqual(['work', 'work:verdict#1']);
  });

  it('"change the goal" appends the new goal to the goal file and runs another round', async () => {
    scenario = await frozenScenario(CANNOT_VERIFY, ACHIEVED);
    const flow = starterFlow({ workspace: scenario.workspace, timeoutSeconds: 60 });
    const answers = ['2', 'Only check the printed text, not the window.'];
    const ctx = await flow.run(scenario.runtime(), {
      onEvent: answerQuestions(flow.channel!, scenario.events, () => answers.shift()),
    });
    expect(ctx.failedAt).toBeUndefined();
    const goal = Goal.load(join(scenario.workspace, '.flower/notes/goal.md'));
    expect(goal?.statement).toContain('hello.py exists and prints hello world.');
    expect(goal?.statement).toContain('(amended) Only check the printed text, not the window.');
    expect(scenario.manifest().map((row) => row.step)).toEqual([
      'work',
      'work:verdict#1',
      'work#round2',
      'work:verdict#2',
    ]);
    const judges = scenario.mock.mainRequests().filter((request) => roleOf(request) === 'verdict');
    expect(lastUserText(judges[1]!)).toContain('(amended) Only check the printed text');
  });

  it('nobody answering stops the step at once: no further rounds, the reason kept', async () => {
    scenario = await frozenScenario(CANNOT_VERIFY, ACHIEVED);
    const flow = starterFlow({ workspace: scenario.workspace, timeoutSeconds: 0, rounds: 3 });
    const ctx = await flow.run(scenario.runtime(), { onEvent: scenario.sink });
    expect(ctx.failedAt).toBe('work');
    expect(ctx.aborted).toContain('nobody answered');
    expect(flow.channel!.asks[0]?.state).toBe('timeout');
    expect(scenario.manifest().map((row) => row.step)).toEqual(['work', 'work:verdict#1']);
    // Unattended: the question never showed up as waiting.
    expect(scenario.events.some((event) => event.kind === 'ask' && event.payload.state === 'asked')).toBe(
      false,
    );
  });

  it('warns when the goal is set with checks that cannot be verified here', async () => {
    scenario = await startScenario({
      main: mainRouter({
        'set-goal': () => ({
          text: `${HELLO_GOAL}\n- the window title reads hello [cannot verify here: no display in this container]`,
        }),
      }),
    });
    const goalPath = join(scenario.workspace, '.flower/notes/goal.md');
    const channel = new HumanChannel();
    const ctx = await new Workflow([goalStep({ channel, goalPath })], {
      context: {
        outputs: { clarify: Brief.parse(HELLO_BRIEF).promptBlock() },
        results: {},
        sessions: {},
        data: {},
      },
    }).run(scenario.runtime(), { onEvent: scenario.sink });
    expect(ctx.failedAt).toBeUndefined();
    const warning = scenario.events.find(
      (event) => event.kind === 'system' && event.payload.subtype === UNVERIFIABLE_CHECKS_EVENT,
    );
    expect(warning?.payload).toMatchObject({ data: { total: 4, path: goalPath } });
    expect(warning?.text).toContain('1/4 checks');
    expect(Goal.load(goalPath)?.unverifiable).toHaveLength(1);
  });
});
