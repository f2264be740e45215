/**
 * A check a person adds to goal.md by hand survives a new request (issue 21, High 3). It used to
 * vanish: adding a request derived the goal again from the brief alone, rewrote goal.md without the
 * person's item, kept no copy, and the run ended "achieved" though that check would have failed.
 *
 * Through the real CLI twice: the first process sets the goal (one passing check) and the judge
 * rules achieved; the person appends `- missing.txt is there — check: \`test -f missing.txt\``; the
 * second process gets a new request. On a terminal, the new goal keeps the item, one line says so,
 * the guard asks before running a check nobody approved (frozen-checks.ts: flower cannot tell the
 * person's edit from an agent's), and approved, the check runs, fails, and the round is not
 * achieved whatever the judge says. Unattended, the item stays in the goal and is not run, and a
 * line and the judge say so. Real SDK, binary, sandbox, processes and files; only the model is scripted.
 */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lastUserText } from '../../src/testing/index.js';
import { mockedEnv, PtySession } from './cli-harness.js';
import {
  ACHIEVED,
  BEQUEST_REPLY,
  freeze,
  HELLO_BRIEF,
  HELLO_TXT_GOAL,
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

const SECOND_GOAL = [
  '## Statement',
  'hello.txt greets, with the date.',
  '## Checklist',
  '- hello.txt is there — check: `test -f hello.txt`',
  '- the greeting has a date — check: `grep -q 20 hello.txt`',
].join('\n');
const HAND_ITEM = 'missing.txt is there — check: `test -f missing.txt`';

/** A task the judge ruled achieved, to which the person then adds a failing check by hand. */
async function achievedTaskWithHandCheck(): Promise<{ scenario: Scenario; goalPath: string }> {
  const current = await startScenario({
    main: mainRouter({
      'set-goal': inOrder({ text: HELLO_TXT_GOAL }, { text: SECOND_GOAL }),
      coordinator: () => ({ text: 'Done: hello.txt greets with the date.' }),
      // The judge is fooled every time: only the check can keep the round from "achieved".
      verdict: () => ({ text: ACHIEVED }),
      bequest: () => ({ text: BEQUEST_REPLY }),
    }),
  });
  freeze(current.workspace, null, HELLO_BRIEF);
  writeFileSync(join(current.workspace, 'hello.txt'), 'hello 2026\n');
  const goalPath = join(current.workspace, '.flower', 'notes', 'goal.md');
  const first = await current.flower(['--timeout', '0', '--no-bequest'], { input: '\n' });
  expect(first.status, first.stderr).toBe(0);
  expect(current.manifest().find((row) => row.step === 'work:verdict#1')?.verdict).toBe('achieved');
  appendFileSync(goalPath, `- ${HAND_ITEM}\n`);
  return { scenario: current, goalPath };
}

describe('a check added to goal.md by hand, then a new request', () => {
  it('on a terminal: the new goal keeps it, it runs once approved, and failing it is not achieved', async () => {
    const task = await achievedTaskWithHandCheck();
    scenario = task.scenario;
    const pty = PtySession.flower(
      ['-w', scenario.workspace, '--no-bequest', '--rounds', '1', 'also print the date'],
      mockedEnv(scenario.mock),
    );
    let at = await pty.waitFor('Enter = add your words to its brief');
    pty.type('\r');
    at = await pty.waitFor('goal.md derived again; kept 1 item you added by hand', at);
    at = await pty.waitFor('Which checks should flower run?', at);
    at = await pty.waitFor('your answer', at);
    pty.type('2\r');
    const code = await pty.exited();
    expect(code, pty.screen).toBe(1);
    expect(pty.screen).toContain('the judge ruled not yet after 1/1 rounds');

    // The new goal: the derived items, then the person's.
    const goal = readFileSync(task.goalPath, 'utf8');
    expect(goal).toContain('hello.txt greets, with the date.');
    expect(goal).toContain('- the greeting has a date — check: `grep -q 20 hello.txt`');
    expect(goal).toContain(`- ${HAND_ITEM}`);
    // The judge deriving it was told the item is kept.
    const setGoal = scenario.mock.mainRequests().filter((request) => roleOf(request) === 'set-goal');
    expect(lastUserText(setGoal.at(-1)!)).toContain(`- ${HAND_ITEM}`);
    // The check ran and failed; the judge's "achieved" was overruled.
    const ruling = scenario
      .manifest()
      .filter((row) => row.step === 'work:verdict#1')
      .at(-1);
    expect(ruling?.verdict).toBe('not yet');
    const missing = ruling?.checks?.find((check) => check.command === 'test -f missing.txt');
    expect(missing?.passed).toBe(false);
  });

  it('unattended: the new goal keeps it, it is not run, and a line and the judge say so', async () => {
    const task = await achievedTaskWithHandCheck();
    scenario = task.scenario;
    const judgedBefore = scenario.mock
      .mainRequests()
      .filter((request) => roleOf(request) === 'verdict').length;
    const run = await scenario.flower([
      '--timeout',
      '0',
      '--no-bequest',
      '--rounds',
      '1',
      'also print the date',
    ]);
    expect(run.stderr).toBe('');
    expect(run.stdout).toContain('goal.md derived again; kept 1 item you added by hand');
    expect(run.stdout).toMatch(/! not run, added to goal\.md after the goal was set: "missing\.txt is there/);
    expect(readFileSync(task.goalPath, 'utf8')).toContain(`- ${HAND_ITEM}`);
    const judge = scenario.mock.mainRequests().filter((request) => roleOf(request) === 'verdict')[
      judgedBefore
    ]!;
    expect(lastUserText(judge)).toContain('# Checks flower did not run');
    expect(lastUserText(judge)).toContain(`- ${HAND_ITEM}`);
    const ruling = scenario
      .manifest()
      .filter((row) => row.step === 'work:verdict#1')
      .at(-1);
    expect(ruling?.checks?.map((check) => check.command)).toEqual([
      'test -f hello.txt',
      'grep -q 20 hello.txt',
    ]);
  });
});
