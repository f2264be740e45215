/**
 * What a run prints, through the whole CLI (issue 21, polish): who speaks (the bequest as itself),
 * no empty "Not passed" heading, messages wrapped rather than cut, one ruler per round, stop lines
 * that say which check and which question, and --new / --clarify-only saying where things are and
 * what to run next. Real SDK, binary and files; only the model is scripted.
 */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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
  roundsScript,
  type Scenario,
  startFrozen,
  startScenario,
} from './scenario-harness.js';

let scenario: Scenario | undefined;
afterEach(async () => {
  await scenario?.close();
  scenario = undefined;
});

const GREETING = 'hello from flower, the friendly greeter of the whole wide world';
/** One item flower checks, whose check line is wider than the 80 columns of a captured run. */
const LONG_CHECK_GOAL = [
  '## Statement',
  'hello.txt greets.',
  '## Checklist',
  `- hello.txt holds the greeting — check: \`grep -qx '${GREETING}' hello.txt\``,
].join('\n');

/** The screen's lines joined, so a wrapped message reads as one. */
const unwrapped = (stdout: string) => stdout.replace(/\n {2,}/g, ' ').replace(/ +/g, ' ');

describe('what a run prints (issue 21, polish)', () => {
  it('labels the bequest as the bequest, drops the empty Not passed heading, wraps the check line, counts goal items', async () => {
    scenario = await startFrozen(roundsScript([ACHIEVED]), LONG_CHECK_GOAL);
    writeFileSync(join(scenario.workspace, 'hello.txt'), `${GREETING}\n`);
    const run = await scenario.flower(['--timeout', '0'], { input: '\n' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^ {2}bequest: ## What this is$/m);
    expect(run.stdout).not.toMatch(/^ {2}aside:/m);
    // The achieved ruling ends with an empty "## Not passed": not shown.
    expect(run.stdout).toMatch(/^ {9}## Reason$/m);
    expect(run.stdout).not.toContain('Not passed');
    // The check line is wider than the screen: wrapped whole, not cut.
    expect(unwrapped(run.stdout)).toMatch(
      new RegExp(`\\+ check passed · exit 0 in [\\d.]+ s · grep -qx '${GREETING}' hello\\.txt judge:`),
    );
    expect(run.stdout).not.toMatch(/check passed .*\.\.\.$/m);
    expect(run.stdout).toContain('bequest written to CLAUDE.md and AGENTS.md for the next tool');
    // One goal item, which flower checks: an item, not "1 check" of a goal that may have none.
    expect(run.stdout).toContain('brief confirmed · goal: 1 item (1 checked by flower) · wake 1');
  }, 150_000);

  it('a budget stop puts one ruler per round on screen', async () => {
    const priced = (reply: MockReply): MockReply => ({
      ...reply,
      usage: { input_tokens: 100_000, output_tokens: 10 },
    });
    scenario = await startFrozen({
      main: mainRouter({
        coordinator: inOrder(priced({ text: 'Round one.' }), priced({ text: 'Round two.' })),
        verdict: inOrder(priced({ text: notYet('the exit code is 1') }), priced({ text: ACHIEVED })),
        bequest: () => priced({ text: BEQUEST_REPLY }),
      }),
    });
    const run = await scenario.flower(['--timeout', '0', '--budget', '1'], { input: '\n' });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/^flower: budget spent: /);
    expect(run.stdout.match(/== work · round 1\/3 =/g)).toHaveLength(1);
    // Round 2 ran until the cap; the round refused after it has no ruler of its own.
    expect(run.stdout.match(/== work · round 2\/3 =/g)).toHaveLength(1);
    expect(run.stdout).not.toContain('round 3/3');
  }, 150_000);

  it('the stall stop says which check and which item; nobody answering says what was asked', async () => {
    scenario = await startFrozen(
      {
        main: mainRouter({
          coordinator: () => ({ text: 'Still thinking.' }),
          verdict: () => ({ text: notYet('hello.txt should say hi') }),
          bequest: () => ({ text: BEQUEST_REPLY }),
        }),
      },
      LONG_CHECK_GOAL,
    );
    writeFileSync(join(scenario.workspace, 'hello.txt'), `${GREETING}\n`);
    const run = await scenario.flower(['--timeout', '0', '--rounds', '5'], { input: '\n' });
    expect(run.status).toBe(1);
    // The check passes: not "the same 0 of 1 check failing".
    expect(run.stderr).toBe(
      'flower: no progress in 2 rounds in a row: its check passing, the same item open ("hello.txt should say hi"), and the workspace unchanged; flower continues from here (--stall 0 turns the brake off)\n',
    );
    // Unattended, the brake's question was never on screen: its line quotes it.
    expect(unwrapped(run.stdout)).toContain('! nobody answered "no progress in 2 rounds in a row: its check');
  }, 150_000);

  it('--clarify-only says where the brief is and what to run next; words it adds to an achieved task reach the next run; --new says where it archived', async () => {
    const question = 'What exactly should the greeting say, and should it end with a newline or not?';
    scenario = await startScenario({
      main: mainRouter({
        clarifier: (_request, turn) =>
          turn === 0
            ? { toolUses: [{ name: 'mcp__human__ask', input: { question } }] }
            : { text: HELLO_BRIEF },
        'set-goal': () => ({ text: HELLO_GOAL }),
        coordinator: () => ({ text: 'Wrote it.' }),
        verdict: () => ({ text: ACHIEVED }),
        bequest: () => ({ text: BEQUEST_REPLY }),
      }),
    });
    const { workspace } = scenario;
    const brief = join(workspace, '.flower/notes/brief.md');

    const clarified = await scenario.flower(['--timeout', '0', '--clarify-only', 'write hello.py'], {
      input: '\n',
    });
    expect(clarified.stderr).toBe('');
    expect(clarified.status).toBe(0);
    // Unattended, the question was never shown as waiting: the "nobody answered" line quotes it.
    expect(unwrapped(clarified.stdout)).toContain(
      `! nobody answered "${question}": the agent decides itself`,
    );
    expect(clarified.stdout.trimEnd().split('\n').slice(-2)).toEqual([
      `brief: ${brief}`,
      `next: read it (edit it where it is wrong), then run flower in ${workspace} to set the goal and start the work`,
    ]);

    const done = await scenario.flower(['--timeout', '0'], { input: '\n' });
    expect(done.status).toBe(0);
    expect(scenario.manifest().at(-2)).toMatchObject({ step: 'work:verdict#1', verdict: 'achieved' });

    // Words added to the achieved task with --clarify-only: the next run works on them.
    const added = await scenario.flower(['--timeout', '0', '--clarify-only', 'also print the date'], {
      input: '\n',
    });
    expect(added.status).toBe(0);
    expect(added.stdout.trimEnd().split('\n').slice(-2)).toEqual([
      `brief: ${brief} (your words are at its end)`,
      `next: run flower in ${workspace}: it sets the goal again with your words, then works on them`,
    ]);
    const before = scenario.mock.mainRequests().length;
    const rows = scenario.manifest().length;
    const next = await scenario.flower(['--timeout', '0'], { input: '\n' });
    expect(next.stderr).toBe('');
    expect(next.status).toBe(0);
    expect(next.stdout).not.toContain('nothing done');
    expect(next.stdout).toContain(
      'the words added with --clarify-only go to work now: "also print the date" (the goal is set again with them)',
    );
    expect(
      scenario
        .manifest()
        .slice(rows)
        .map((row) => row.step),
    ).toEqual(['set-goal', 'work', 'work:verdict#1', 'bequest']);
    const work = scenario.mock
      .mainRequests()
      .slice(before)
      .find((request) => roleOf(request) === 'coordinator')!;
    expect(lastUserText(work)).toContain('also print the date');
    // Worked on once: the run after that has nothing left to do.
    const again = await scenario.flower(['--timeout', '0'], { input: '\n' });
    expect(again.stdout).toContain('nothing done: the judge already ruled this task achieved.');

    const fresh = await scenario.flower(['--timeout', '0', '--new', '--clarify-only', 'write bye.py'], {
      input: '\n',
    });
    expect(fresh.status).toBe(0);
    const archive = join(workspace, '.flower/notes/archive');
    const [stamp] = readdirSync(archive);
    expect(existsSync(join(archive, stamp!, 'brief.md'))).toBe(true);
    expect(fresh.stdout).toContain(
      `- the previous task is archived in ${join(archive, stamp!)} (its brief, goal and lineage); its transcripts and spend stay in ${join(workspace, 'runs')}`,
    );
  }, 400_000);
});
