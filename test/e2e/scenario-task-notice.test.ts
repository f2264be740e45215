/**
 * Say what happens to a task (issue 9 §3), observed from the command line: a new request in a
 * directory with a task was silently appended to its brief, and waking a task the judge had already
 * ruled achieved paid for another round. Now the first is announced (or asked on a terminal) and
 * the second shows what happened last time and spends nothing. Real CLI, SDK and binary; only the
 * model is scripted.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NOTHING_TO_DO } from '../../src/cli/interaction/task-notice.js';
import { mockedEnv, PtySession } from './cli-harness.js';
import {
  ACHIEVED,
  BEQUEST_REPLY,
  HELLO_BRIEF,
  HELLO_GOAL,
  mainRouter,
  type Scenario,
  startFrozen,
} from './scenario-harness.js';

let scenario: Scenario | undefined;
afterEach(async () => {
  await scenario?.close();
  scenario = undefined;
});

const TASK = 'hello.py exists and prints hello world.';
const brief = (current: Scenario) => readFileSync(join(current.workspace, '.flower/notes/brief.md'), 'utf8');

async function finishedTask(): Promise<Scenario> {
  return startFrozen({
    main: mainRouter({
      clarifier: () => ({ text: HELLO_BRIEF.replace('hello.py', 'goodbye.py') }),
      'set-goal': () => ({ text: HELLO_GOAL }),
      coordinator: () => ({ text: 'hello.py is written.' }),
      verdict: () => ({ text: ACHIEVED }),
      bequest: () => ({ text: BEQUEST_REPLY }),
    }),
  });
}

describe('a new request in a directory that has a task', () => {
  it("is added to that task's brief and says so, off a terminal", async () => {
    scenario = await finishedTask();
    const run = await scenario.flower(['--clarify-only', '--timeout', '0', 'also print the date']);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain(
      `! this directory has a task (${TASK}); your words were added to its brief — use --new for a separate task`,
    );
    expect(brief(scenario)).toContain('also print the date');
  });

  it('is asked about first on a terminal: /new makes it a separate task, the old one archived', async () => {
    scenario = await finishedTask();
    const pty = PtySession.flower(
      ['-w', scenario.workspace, '--clarify-only', '--timeout', '0', 'write goodbye.py'],
      mockedEnv(scenario.mock),
    );
    await pty.waitFor(
      `this directory has a task (${TASK}). Enter = add your words to its brief; /new = a separate task`,
    );
    pty.type('/new\r');
    await pty.waitFor('== clarify');
    expect(await pty.exited()).toBe(0);
    expect(brief(scenario)).toContain('goodbye.py');
    expect(brief(scenario)).not.toContain('write goodbye.py');
    const archive = join(scenario.workspace, '.flower/notes/archive');
    expect(readdirSync(archive)).toHaveLength(1);
  });
});

describe('waking a task the judge ruled achieved', () => {
  it('shows what happened last time and spends nothing unless asked', async () => {
    scenario = await finishedTask();
    const first = await scenario.flower(['--timeout', '0'], { input: '\n' });
    expect(first.status).toBe(0);
    const requests = scenario.mock.mainRequests().length;
    const rows = scenario.manifest().length;

    const again = await scenario.flower([]);
    expect(again.stderr).toBe('');
    expect(again.status).toBe(0);
    expect(again.stdout).toMatch(
      /last time: the judge ruled achieved \(round 1\/3\) at \d{4}-\d\d-\d\d \d\d:\d\d · spent \$\d+\.\d\d in 1 run/,
    );
    expect(again.stdout).toContain(`  goal: ${TASK}`);
    expect(again.stdout).toContain(NOTHING_TO_DO);
    expect(scenario.mock.mainRequests()).toHaveLength(requests);
    expect(scenario.manifest()).toHaveLength(rows);
    expect(existsSync(join(scenario.workspace, 'CLAUDE.md'))).toBe(true);

    // Asked for more, it works on: the words become the remark of another round.
    const more = await scenario.flower(['--timeout', '0', '--no-bequest'], {
      input: 'also print the date\n',
    });
    expect(more.stderr).toBe('');
    expect(more.status).toBe(0);
    expect(brief(scenario)).toContain('also print the date');
    expect(scenario.mock.mainRequests().length).toBeGreaterThan(requests);
  }, 150_000);
});
