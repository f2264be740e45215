/**
 * The two brakes of issue 13 through the whole CLI: rounds that change nothing stop the task
 * (`--stall`), and `--budget` caps the task across runs; both stop cleanly with one line and exit 1,
 * and the next run continues the same sessions. Real SDK, binary and files; the model is scripted,
 * its usage too (each main turn of these scripts costs the same), so the budget is reached for real.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { lastUserText, type MockReply } from '../../src/testing/index.js';
import {
  ACHIEVED,
  BEQUEST_REPLY,
  HELLO_BRIEF,
  HELLO_GOAL,
  inOrder,
  mainRouter,
  notYet,
  roleOf,
  type Scenario,
  startFrozen,
} from './scenario-harness.js';

let scenario: Scenario | undefined;
afterEach(async () => {
  await scenario?.close();
  scenario = undefined;
});

describe('the no-progress brake', () => {
  it('(d) two rounds with no change stop the task with its line, exit 1, and the next run continues', async () => {
    scenario = await startFrozen({
      main: mainRouter({
        coordinator: () => ({ text: 'Still thinking about hello.py.' }),
        verdict: inOrder(
          { text: notYet('hello.py is missing') },
          { text: notYet('hello.py is missing') },
          { text: ACHIEVED },
        ),
        bequest: () => ({ text: BEQUEST_REPLY }),
      }),
    });
    const first = await scenario.flower(['--timeout', '0', '--rounds', '5'], { input: '\n' });
    expect(first.status).toBe(1);
    expect(first.stderr).toBe(
      'flower: no progress in 2 rounds in a row: no checks to tell, the same item open ("hello.py is missing"), and the workspace unchanged; flower continues from here (--stall 0 turns the brake off)\n',
    );
    expect(first.stdout).toMatch(/== work · round 1\/5 =+ 3\/3/);
    expect(first.stdout).toMatch(/== work · round 2\/5 =+ 3\/3/);
    expect(first.stdout).not.toContain('round 3/5');
    const rows = scenario.manifest();
    expect(rows.map((row) => row.step)).toEqual([
      'work',
      'work:verdict#1',
      'work#round2',
      'work:verdict#2',
      'bequest',
    ]);
    expect(
      rows.filter((row) => row.step.startsWith('work#') || row.step === 'work').map((row) => row.rejected),
    ).toEqual(['hello.py is missing', 'hello.py is missing']);

    // Resumable: the same work session continues, knows what the judge said, and rounds keep counting.
    const before = scenario.mock.mainRequests().length;
    const second = await scenario.flower(['--timeout', '0', '--rounds', '5'], { input: '\n' });
    expect(second.stderr).toBe('');
    expect(second.status).toBe(0);
    expect(second.stdout).toContain('last time: the judge ruled not yet (round 2/5)');
    expect(second.stdout).toMatch(/== work · round 3\/5 =+ 3\/3/);
    const resumed = scenario.mock
      .mainRequests()
      .slice(before)
      .find((request) => roleOf(request) === 'coordinator')!;
    expect(lastUserText(resumed)).toContain('hello.py is missing');
    expect(JSON.stringify(resumed.body?.messages)).toContain('Still thinking about hello.py.');
    const later = scenario.manifest().slice(rows.length);
    expect(later.find((row) => row.step === 'work')?.session_id).toBe(rows[0]?.session_id);
    expect(later.find((row) => row.step === 'work:verdict#3')).toMatchObject({
      verdict: 'achieved',
      round: 3,
    });
  }, 150_000);
});

describe('the task budget', () => {
  /** 100k input tokens: the same price for every main turn of the script. */
  const priced = (reply: MockReply): MockReply => ({
    ...reply,
    usage: { input_tokens: 100_000, output_tokens: 10 },
  });

  it('(e) reached mid-task: a clean stop with its line; raised, the same sessions continue', async () => {
    scenario = await startFrozen({
      main: mainRouter({
        coordinator: inOrder(
          priced({ text: 'Round one: wrote hello.py.' }),
          priced({ text: 'Round two: fixed it.' }),
          priced({ text: 'Round three.' }),
        ),
        verdict: inOrder(priced({ text: notYet('the exit code is 1') }), priced({ text: ACHIEVED })),
        bequest: () => priced({ text: BEQUEST_REPLY }),
      }),
    });
    // One turn costs p; the budget covers round 1 (work + judge, 2p) and a fraction of round 2.
    const first = await scenario.flower(['--timeout', '0', '--budget', '1'], { input: '\n' });
    expect(first.status).toBe(1);
    expect(first.stderr).toMatch(
      /^flower: budget spent: \$1\.\d\d of \$1\.00; run with --budget 2 to continue\n$/,
    );
    const rows = scenario.manifest();
    const turn = rows[0]!.cost_usd;
    expect(turn).toBeGreaterThan(0.34);
    expect(rows.map((row) => row.step)).toEqual(['work', 'work:verdict#1', 'work#round2']);
    expect(rows[2]).toMatchObject({ ok: false, error: expect.stringMatching(/^budget spent: /) });
    expect(rows[2]?.errors.join('\n')).toContain('Reached maximum budget');
    // Clean: nothing ran after the stop, not even the closing turn (a mechanical bequest instead).
    expect(scenario.mock.mainRequests().filter((request) => roleOf(request) === 'bequest')).toHaveLength(0);

    const before = scenario.mock.mainRequests().length;
    const second = await scenario.flower(['--timeout', '0', '--budget', '3'], { input: '\n' });
    expect(second.stderr).toBe('');
    expect(second.status).toBe(0);
    const resumed = scenario.mock
      .mainRequests()
      .slice(before)
      .find((request) => roleOf(request) === 'coordinator')!;
    expect(JSON.stringify(resumed.body?.messages)).toContain('Round two: fixed it.');
    const later = scenario.manifest().slice(rows.length);
    expect(later.find((row) => row.step === 'work')?.session_id).toBe(rows[0]?.session_id);
    expect(later.map((row) => row.step)).toEqual(['work', 'work:verdict#2', 'bequest']);
  }, 150_000);

  it('spent before anything runs: no model call at all', async () => {
    scenario = await startFrozen({
      main: mainRouter({
        coordinator: () => priced({ text: 'x' }),
        verdict: () => priced({ text: notYet('y') }),
      }),
    });
    const first = await scenario.flower(
      ['--timeout', '0', '--budget', '0.5', '--rounds', '1', '--no-bequest'],
      { input: '\n' },
    );
    expect(first.status).toBe(1);
    const requests = scenario.mock.mainRequests().length;
    const again = await scenario.flower(['--timeout', '0', '--budget', '0.5'], { input: '\n' });
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(
      /^flower: budget spent: \$0\.\d\d of \$0\.50; run with --budget 1 to continue\n$/,
    );
    expect(scenario.mock.mainRequests().length).toBe(requests);
  }, 150_000);

  it('--new starts the new task at zero: an archived task spent more than --budget, the new one runs', async () => {
    scenario = await startFrozen({
      main: mainRouter({
        clarifier: () => ({ text: HELLO_BRIEF.replace('hello.py', 'goodbye.py') }),
        'set-goal': () => ({ text: HELLO_GOAL }),
        coordinator: () => priced({ text: 'Wrote it.' }),
        verdict: () => priced({ text: ACHIEVED }),
        bequest: () => priced({ text: BEQUEST_REPLY }),
      }),
    });
    // The old task: work, judge and closing turn, three priced turns (over $1).
    const old = await scenario.flower(['--timeout', '0'], { input: '\n' });
    expect(old.stderr).toBe('');
    expect(old.status).toBe(0);
    const oldRows = scenario.manifest();
    const oldUsd = oldRows.reduce((sum, row) => sum + row.cost_usd, 0);
    const turn = oldRows[0]!.cost_usd;
    expect(oldUsd).toBeGreaterThan(1);

    // The new task's work and judge (two turns) fit in $1; the old task's spend does not count.
    const fresh = await scenario.flower(
      ['--new', '--timeout', '0', '--budget', '1', '--no-bequest', 'write goodbye.py'],
      {
        input: '\n',
      },
    );
    expect(fresh.stderr).toBe('');
    expect(fresh.status).toBe(0);
    const newRows = scenario.manifest().slice(oldRows.length);
    expect(newRows.map((row) => row.step)).toEqual(expect.arrayContaining(['work', 'work:verdict#1']));
    expect(newRows.every((row) => row.ok)).toBe(true);
    const newUsd = newRows.reduce((sum, row) => sum + row.cost_usd, 0);
    expect(newUsd).toBeGreaterThanOrEqual(2 * turn);
    expect(newUsd).toBeLessThan(1);
    const whole = /· \$(\d+\.\d{4}) for the whole task/.exec(fresh.stdout);
    expect(Number(whole?.[1])).toBeCloseTo(newUsd, 3);

    // The archived task's spend stays visible, apart from the task's own figure.
    const status = await scenario.flower(['status']);
    expect(status.stdout).toContain(`Spent: $${newUsd.toFixed(4)} on the whole task`);
    expect(status.stdout).toContain(`and $${oldUsd.toFixed(4)} on tasks archived by --new`);
  }, 150_000);
});
