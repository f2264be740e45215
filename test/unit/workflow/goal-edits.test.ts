/**
 * A person's edits of goal.md survive the goal being derived again (issue 21, High 3): the pure
 * comparison with what the set-goal step wrote, the pure merge into the new goal, and the set-goal
 * step + guard with a scripted runner on a real workspace — a hand-added check is carried, not
 * frozen behind the human's back, asked about on a terminal and then run (and failing, it keeps the
 * round from being achieved); what cannot be carried is kept in a copy, and one line says so.
 */
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HumanChannel } from '../../../src/agents/human/channel.js';
import type { FlowerEvent } from '../../../src/runtime/events.js';
import { checksOf, freezeChecks, loadFrozenChecks } from '../../../src/workflow/frozen-checks.js';
import { Goal } from '../../../src/workflow/goal.js';
import {
  carryEdits,
  GOAL_AS_SET_FILE,
  GOAL_EDITS_EVENT,
  handEdits,
  hasEdits,
  loadGoalAsSet,
  NO_EDITS,
  recordGoalAsSet,
} from '../../../src/workflow/goal-edits.js';
import { goalStep } from '../../../src/workflow/goal-step.js';
import type { Step } from '../../../src/workflow/step.js';
import { CHANGED_CHECKS_CHOICES, withGoal } from '../../../src/workflow/with-goal.js';
import { Workflow } from '../../../src/workflow/workflow.js';
import { answeringChannel } from './answering-channel.js';
import { FakeRunner, fakeSpec } from './fake-runner.js';

const SET = new Goal({
  statement: 'hello.txt greets.',
  checks: ['hello.txt is there — check: `test -f hello.txt`', 'on a phone [cannot verify here: no device]'],
});

describe('handEdits', () => {
  it('no edit: the file as written, with an item accepted at triage', () => {
    const onDisk = SET.accept(['on a phone [cannot verify here: no device]']);
    expect(onDisk.checks[1]).toContain('accepted');
    expect(handEdits(onDisk, SET)).toEqual(NO_EDITS);
    expect(hasEdits(handEdits(onDisk, SET))).toBe(false);
  });

  it('added and removed items, text appended to the statement', () => {
    const onDisk = new Goal({
      statement: `${SET.statement}\n\n(amended) also in French`,
      checks: [SET.checks[0]!, 'missing.txt is there — check: `test -f missing.txt`', 'it reads well'],
    });
    expect(handEdits(onDisk, SET)).toEqual({
      added: ['missing.txt is there — check: `test -f missing.txt`', 'it reads well'],
      removed: [SET.checks[1]],
      statementAdded: '(amended) also in French',
      statementRewritten: false,
      unknown: false,
    });
  });

  it('a rewritten statement is not an append', () => {
    const edits = handEdits(new Goal({ statement: 'something else', checks: SET.checks }), SET);
    expect(edits.statementRewritten).toBe(true);
    expect(edits.statementAdded).toBe('');
  });

  it('without a record: the checks the frozen set lacks are added, and the rest is unknown', () => {
    const onDisk = new Goal({ statement: 's', checks: [...SET.checks, 'extra — check: `test -f x`'] });
    expect(handEdits(onDisk, undefined, checksOf(SET.checks))).toEqual({
      ...NO_EDITS,
      added: ['extra — check: `test -f x`'],
      unknown: true,
    });
    expect(handEdits(onDisk, undefined).added).toEqual([]);
  });
});

describe('carryEdits', () => {
  const next = new Goal({
    statement: 'hello.txt and date.txt.',
    checks: ['the greeting — check: `test -f hello.txt`', 'date.txt is there — check: `test -f date.txt`'],
  });

  it('carries added items after the new ones, unless it has them; appends added statement text', () => {
    const carried = carryEdits(next, {
      ...NO_EDITS,
      added: [
        'missing.txt is there — check: `test -f missing.txt`',
        'reworded, same command — check: `test -f date.txt`',
        'it reads well',
      ],
      statementAdded: '(amended) also in French',
    });
    expect(carried.items).toEqual(['missing.txt is there — check: `test -f missing.txt`', 'it reads well']);
    expect(carried.goal.checks).toEqual([...next.checks, ...carried.items]);
    expect(carried.goal.statement).toBe('hello.txt and date.txt.\n\n(amended) also in French');
    expect(carried.conflicts).toEqual([]);
  });

  it('what cannot be carried is a conflict: a rewritten statement, a removed item back, no record', () => {
    const conflicts = carryEdits(next, {
      ...NO_EDITS,
      removed: ['hello — check: `test -f hello.txt`', 'gone for good'],
      statementRewritten: true,
    }).conflicts;
    expect(conflicts).toEqual(['the statement was rewritten', '1 item you removed came back']);
    const previous = new Goal({ statement: 'by hand', checks: ['mine'] });
    expect(carryEdits(next, { ...NO_EDITS, unknown: true }, previous).conflicts).toEqual([
      'flower has no record of what it wrote there',
    ]);
    // Nothing to keep when the file already says what the new goal says.
    expect(carryEdits(next, { ...NO_EDITS, unknown: true }, next).conflicts).toEqual([]);
  });
});

describe('the record of what set-goal wrote', () => {
  it('is private, keyed by goal file, and keeps the text as the file shows it', () => {
    const runDir = join(mkdtempSync(join(tmpdir(), 'flower-goal-as-set-')), 'runs');
    const goalPath = join(runDir, '..', '.flower', 'notes', 'goal.md');
    expect(loadGoalAsSet(runDir, goalPath)).toBeUndefined();
    recordGoalAsSet(runDir, goalPath, SET);
    expect(loadGoalAsSet(runDir, goalPath)).toEqual(SET);
    expect(loadGoalAsSet(runDir, join(runDir, 'other.md'))).toBeUndefined();
    expect(statSync(join(runDir, GOAL_AS_SET_FILE)).mode & 0o777).toBe(0o600);
    writeFileSync(join(runDir, GOAL_AS_SET_FILE), '{ torn');
    expect(loadGoalAsSet(runDir, goalPath)).toBeUndefined();
  });
});

const FIRST =
  '## Statement\nhello.txt greets.\n## Checklist\n- hello.txt is there — check: `test -f hello.txt`\n';
const AGAIN =
  '## Statement\nhello.txt greets, and the date too.\n## Checklist\n- hello.txt is there — check: `test -f hello.txt`\n- date.txt is there — check: `test -f date.txt`\n';
const HAND_CHECK = 'missing.txt is there — check: `test -f missing.txt`';
const ACHIEVED = '## Conclusion\nachieved\n## Reason\nlooks done\n## Not passed\n';

function task() {
  const root = mkdtempSync(join(tmpdir(), 'flower-goal-edits-'));
  const workspace = join(root, 'ws');
  const runDir = join(root, 'runs');
  mkdirSync(workspace, { recursive: true });
  writeFileSync(join(workspace, 'hello.txt'), 'hello\n');
  writeFileSync(join(workspace, 'date.txt'), 'today\n');
  const goalPath = join(workspace, '.flower', 'notes', 'goal.md');
  const events: FlowerEvent[] = [];
  const runner = (reply: string) =>
    new FakeRunner(
      (call) => ({
        text: call.options.stepName?.includes(':verdict#')
          ? ACHIEVED
          : call.options.stepName === 'set-goal'
            ? reply
            : 'done',
      }),
      workspace,
      runDir,
    );
  return { workspace, runDir, goalPath, events, runner };
}

const work: Step = { name: 'work', spec: fakeSpec('coordinator'), prompt: 'build it', resumePrompt: 'go on' };
const said = (events: FlowerEvent[]) =>
  events.filter((event) => event.kind === 'system' && event.payload.subtype === GOAL_EDITS_EVENT);

describe('deriving the goal again keeps what a person added', () => {
  it('a hand-added check is carried, named to the judge, not frozen, asked about, run, and it fails the round', async () => {
    const { goalPath, runDir, events, runner } = task();
    const unattended = new HumanChannel({ timeoutSeconds: 0 });
    await new Workflow([goalStep({ channel: unattended, goalPath })]).run(runner(FIRST));
    appendFileSync(goalPath, `- ${HAND_CHECK}\n`);

    // A new request: the goal is derived again; on a terminal the human approves the carried check.
    const { channel, asked } = answeringChannel((_q, options) =>
      options.length > 0 ? CHANGED_CHECKS_CHOICES[1] : undefined,
    );
    const again = runner(AGAIN);
    const ctx = await new Workflow([
      goalStep({ channel, goalPath, alwaysSet: true }),
      withGoal(work, { channel, goalPath, rounds: 1 }),
    ]).run(again, { onEvent: (event) => events.push(event) });

    const goal = Goal.load(goalPath)!;
    expect(goal.statement).toBe('hello.txt greets, and the date too.');
    expect(goal.checks).toEqual([
      'hello.txt is there — check: `test -f hello.txt`',
      'date.txt is there — check: `test -f date.txt`',
      HAND_CHECK,
    ]);
    expect(again.calls[0]?.prompt).toContain(`added by hand. flower keeps them`);
    expect(again.calls[0]?.prompt).toContain(`- ${HAND_CHECK}`);
    const lines = said(events);
    expect(lines).toHaveLength(1);
    expect(lines[0]?.text).toBe(`goal.md derived again; kept 1 item you added by hand: "${HAND_CHECK}"`);
    // Asked before any work; approved, it ran, failed, and the round is not achieved.
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain(`Added (flower would run these commands):\n  - ${HAND_CHECK}`);
    expect(ctx.checkRuns?.map((run) => [run.command, run.passed])).toEqual([
      ['test -f hello.txt', true],
      ['test -f date.txt', true],
      ['test -f missing.txt', false],
    ]);
    expect(ctx.verdict?.achieved).toBe(false);
    expect(ctx.failedAt).toBe('work');
    expect(loadFrozenChecks(runDir, goalPath)?.map((check) => check.command)).toContain(
      'test -f missing.txt',
    );
    // Nothing conflicted: no copy.
    expect(existsSync(join(goalPath, '..', 'archive'))).toBe(false);
  });

  it('unattended: the carried check stays in the goal, unfrozen, not run, and the judge is told', async () => {
    const { goalPath, runDir, events, runner } = task();
    const channel = new HumanChannel({ timeoutSeconds: 0 });
    await new Workflow([goalStep({ channel, goalPath })]).run(runner(FIRST));
    appendFileSync(goalPath, `- ${HAND_CHECK}\n`);
    const again = runner(AGAIN);
    const ctx = await new Workflow([
      goalStep({ channel, goalPath, alwaysSet: true }),
      withGoal(work, { channel, goalPath, rounds: 1 }),
    ]).run(again, { onEvent: (event) => events.push(event) });
    expect(Goal.load(goalPath)?.checks).toContain(HAND_CHECK);
    expect(loadFrozenChecks(runDir, goalPath)?.map((check) => check.command)).toEqual([
      'test -f hello.txt',
      'test -f date.txt',
    ]);
    expect(ctx.checkRuns?.map((run) => run.command)).not.toContain('test -f missing.txt');
    expect(
      events.some((event) => /^not run, added to goal\.md after the goal was set/.test(event.text)),
    ).toBe(true);
    const judge = again.calls.find((call) => call.options.stepName === 'work:verdict#1')!;
    expect(judge.prompt).toContain(`# Checks flower did not run\n`);
    expect(judge.prompt).toContain(`- ${HAND_CHECK}`);
  });

  it('a carried check that was already approved stays frozen', async () => {
    const { goalPath, runDir, runner } = task();
    const channel = new HumanChannel({ timeoutSeconds: 0 });
    await new Workflow([goalStep({ channel, goalPath })]).run(runner(FIRST));
    appendFileSync(goalPath, `- ${HAND_CHECK}\n`);
    freezeChecks(runDir, goalPath, Goal.load(goalPath)!.checks);
    await new Workflow([goalStep({ channel, goalPath, alwaysSet: true })]).run(runner(AGAIN));
    expect(loadFrozenChecks(runDir, goalPath)?.map((check) => check.command)).toEqual([
      'test -f hello.txt',
      'test -f date.txt',
      'test -f missing.txt',
    ]);
  });

  it('what cannot be carried is kept in a copy, byte for byte, and one line says where', async () => {
    const { goalPath, events, runner } = task();
    const channel = new HumanChannel({ timeoutSeconds: 0 });
    await new Workflow([goalStep({ channel, goalPath })]).run(runner(FIRST));
    const edited = readFileSync(goalPath, 'utf8').replace('hello.txt greets.', 'My own words.');
    writeFileSync(goalPath, `${edited}- it reads well\n`);
    await new Workflow([goalStep({ channel, goalPath, alwaysSet: true })]).run(runner(AGAIN), {
      onEvent: (event) => events.push(event),
    });
    const archive = join(goalPath, '..', 'archive', 'goal');
    const copies = readdirSync(archive);
    expect(copies).toHaveLength(1);
    expect(copies[0]).toMatch(/^goal-\d{8}-\d{6}\.md$/);
    expect(readFileSync(join(archive, copies[0]!), 'utf8')).toBe(`${edited}- it reads well\n`);
    const lines = said(events);
    expect(lines).toHaveLength(1);
    expect(lines[0]?.text).toBe(
      `goal.md derived again; your previous goal.md is kept at .flower/notes/archive/goal/${copies[0]} (the statement was rewritten); kept 1 item you added by hand: "it reads well"`,
    );
    expect((lines[0]?.payload as { warning?: boolean } | undefined)?.warning).toBe(true);
    expect(Goal.load(goalPath)?.checks.at(-1)).toBe('it reads well');
  });

  it('a goal set for the first time says nothing and keeps no copy', async () => {
    const { goalPath, events, runner } = task();
    await new Workflow([goalStep({ channel: new HumanChannel({ timeoutSeconds: 0 }), goalPath })]).run(
      runner(FIRST),
      { onEvent: (event) => events.push(event) },
    );
    expect(said(events)).toEqual([]);
    expect(existsSync(join(goalPath, '..', 'archive'))).toBe(false);
  });

  it('"change the goal" at a cannot-verify ruling amends the file as it is, keeping a hand edit made meanwhile', async () => {
    const { goalPath, workspace, runDir } = task();
    await new Workflow([goalStep({ channel: new HumanChannel({ timeoutSeconds: 0 }), goalPath })]).run(
      new FakeRunner(() => ({ text: FIRST }), workspace, runDir),
    );
    const CANNOT = '## Conclusion\ncannot verify here\n## Reason\nno device\n## Not passed\n';
    let judged = 0;
    const runner = new FakeRunner(
      (call) => {
        if (call.options.stepName?.includes(':verdict#')) return { text: judged++ === 0 ? CANNOT : ACHIEVED };
        if (call.options.stepName === 'work') appendFileSync(goalPath, '- it reads well\n');
        return { text: 'done' };
      },
      workspace,
      runDir,
    );
    const { channel } = answeringChannel((_q, options) =>
      options.length > 0 ? 'Change the goal' : 'in French too',
    );
    const ctx = await new Workflow([
      goalStep({ channel, goalPath }),
      withGoal(work, { channel, goalPath, rounds: 2 }),
    ]).run(runner);
    expect(ctx.failedAt).toBeUndefined();
    const goal = Goal.load(goalPath)!;
    expect(goal.statement).toBe('hello.txt greets.\n\n(amended) in French too');
    expect(goal.checks).toContain('it reads well');
  });
});
