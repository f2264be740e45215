/**
 * The goal frozen at set-goal is what runs: the pure comparison of the goal file's checks with the
 * frozen ones, the record in the run directory (private, damaged = empty), the set-goal step that
 * freezes, and the guard that runs the frozen checks unless a human approves the file's — with a
 * scripted runner, a real workspace and real (walled) shells.
 */
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HumanChannel } from '../../../src/agents/human/channel.js';
import type { FlowerEvent } from '../../../src/runtime/events.js';
import {
  addFrozenChecks,
  checksOf,
  compareChecks,
  freezeChecks,
  frozenChecksPath,
  hasChanged,
  loadFrozenChecks,
} from '../../../src/workflow/frozen-checks.js';
import { Goal } from '../../../src/workflow/goal.js';
import { goalStep } from '../../../src/workflow/goal-step.js';
import type { Step } from '../../../src/workflow/step.js';
import { CHANGED_CHECKS_CHOICES, withGoal } from '../../../src/workflow/with-goal.js';
import { Workflow } from '../../../src/workflow/workflow.js';
import { answeringChannel } from './answering-channel.js';
import { FakeRunner, fakeSpec } from './fake-runner.js';

describe('compareChecks', () => {
  const frozen = checksOf(['tests pass — check: `npm test`', 'lints — check (2m): `npm run lint`']);

  it('no change: the same commands and limits, whatever the wording and the other items', () => {
    const change = compareChecks(
      [
        'the tests really pass — check: `npm test`',
        'a judgement item',
        'lints — check (120s): `npm run lint`',
      ],
      frozen,
    );
    expect(hasChanged(change)).toBe(false);
    expect(change.frozenItems).toEqual([
      'the tests really pass — check: `npm test`',
      'a judgement item',
      'lints — check (120s): `npm run lint`',
    ]);
  });

  it('an appended check is added and left out of what runs', () => {
    const items = [
      'tests pass — check: `npm test`',
      'lints — check (2m): `npm run lint`',
      'extra — check: `touch /tmp/PWNED`',
    ];
    const change = compareChecks(items, frozen);
    expect(change.added).toEqual([
      { item: 'extra — check: `touch /tmp/PWNED`', command: 'touch /tmp/PWNED' },
    ]);
    expect(change.removed).toEqual([]);
    expect(change.frozenItems).toEqual(items.slice(0, 2));
  });

  it('a changed command or limit is one removed and one added; the frozen one runs, at the end', () => {
    const change = compareChecks(
      ['tests pass — check: `npm test; curl evil`', 'lints — check (24h): `npm run lint`'],
      frozen,
    );
    expect(change.added.map((check) => check.command)).toEqual(['npm test; curl evil', 'npm run lint']);
    expect(change.removed).toEqual(frozen);
    expect(change.frozenItems).toEqual(frozen.map((check) => check.item));
  });

  it('a removed frozen check still runs; an unreadable check passes through (it runs nothing, it fails)', () => {
    const change = compareChecks(['broken — check: `oops', 'lints — check (2m): `npm run lint`'], frozen);
    expect(change.added).toEqual([]);
    expect(change.removed.map((check) => check.command)).toEqual(['npm test']);
    expect(change.frozenItems).toEqual([
      'broken — check: `oops',
      'lints — check (2m): `npm run lint`',
      'tests pass — check: `npm test`',
    ]);
  });

  it('an added check named twice is named once', () => {
    const change = compareChecks(['a — check: `x`', 'b — check: `x`'], []);
    expect(change.added).toHaveLength(1);
  });
});

describe('the frozen record', () => {
  it('is private, keyed by goal file, and a damaged one is an empty frozen set', () => {
    const runDir = join(mkdtempSync(join(tmpdir(), 'flower-frozen-')), 'runs');
    const goalA = join(runDir, '..', '.flower', 'notes', 'goal.md');
    const goalB = join(runDir, '..', 'other-goal.md');
    expect(loadFrozenChecks(runDir, goalA)).toBeUndefined();
    freezeChecks(runDir, goalA, ['a — check: `true`', 'prose']);
    freezeChecks(runDir, goalB, ['b — check (5s): `false`']);
    expect(loadFrozenChecks(runDir, goalA)).toEqual([{ item: 'a — check: `true`', command: 'true' }]);
    expect(loadFrozenChecks(runDir, goalB)).toEqual([
      { item: 'b — check (5s): `false`', command: 'false', timeoutMs: 5000 },
    ]);
    addFrozenChecks(runDir, goalA, ['c — check: `echo c`', 'a again — check: `true`']);
    expect(loadFrozenChecks(runDir, goalA)?.map((check) => check.command)).toEqual(['true', 'echo c']);
    expect(statSync(frozenChecksPath(runDir)).mode & 0o777).toBe(0o600);
    expect(statSync(runDir).mode & 0o777).toBe(0o700);
    writeFileSync(frozenChecksPath(runDir), '{ torn');
    expect(loadFrozenChecks(runDir, goalA)).toEqual([]);
  });
});

const work: Step = { name: 'work', spec: fakeSpec('coordinator'), prompt: 'build it', resumePrompt: 'go on' };
const ACHIEVED = '## Conclusion\nachieved\n## Reason\nlooks done\n## Not passed\n';
const NOT_YET = '## Conclusion\nnot yet\n## Reason\nmore\n## Not passed\n- more';

/** A task with a frozen goal whose work rounds may edit goal.md, as a worker could. */
function task(options: { verdicts?: string[]; onWork?: (round: number, goalPath: string) => void } = {}) {
  const root = mkdtempSync(join(tmpdir(), 'flower-frozen-guard-'));
  const workspace = join(root, 'ws');
  const runDir = join(root, 'runs');
  mkdirSync(workspace, { recursive: true });
  const goalPath = join(workspace, '.flower', 'notes', 'goal.md');
  const marker = join(workspace, 'PWNED');
  const kept = join(workspace, 'kept-check-ran');
  new Goal({ statement: 'it works', checks: [`the frozen one — check: \`touch ${kept}\``] }).write(goalPath);
  freezeChecks(runDir, goalPath, Goal.load(goalPath)!.checks);
  const events: FlowerEvent[] = [];
  let judged = 0;
  let worked = 0;
  const runner = new FakeRunner(
    (call) => {
      if (call.options.stepName?.includes(':verdict#'))
        return { text: options.verdicts?.[judged++] ?? ACHIEVED };
      options.onWork?.(++worked, goalPath);
      return { text: 'done' };
    },
    workspace,
    runDir,
  );
  const appendCheck = (path: string) => appendFileSync(path, `- extra — check: \`touch ${marker}\`\n`);
  return { runner, goalPath, runDir, marker, kept, events, appendCheck };
}

describe('the guard runs the goal as frozen', () => {
  it('unattended: a check a worker appended is not run, is said in one line, and the judge is told', async () => {
    const { runner, goalPath, marker, kept, events, appendCheck } = task({
      onWork: (_r, path) => appendCheck(path),
    });
    const ctx = await new Workflow([
      withGoal(work, { channel: new HumanChannel({ timeoutSeconds: 0 }), goalPath, rounds: 1 }),
    ]).run(runner, { onEvent: (event) => events.push(event) });
    expect(ctx.failedAt).toBeUndefined();
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(kept)).toBe(true);
    expect(ctx.checkRuns?.map((run) => run.command)).toEqual([`touch ${kept}`]);
    const lines = events.filter(
      (event) => event.kind === 'system' && /after the goal was set/.test(event.text),
    );
    expect(lines).toHaveLength(1);
    expect(lines[0]?.text).toMatch(
      /^not run, added to goal.md after the goal was set: "extra — check: `touch .*PWNED`"/,
    );
    const judge = runner.calls.find((call) => call.options.stepName === 'work:verdict#1')!;
    expect(judge.prompt).toContain('# Checks flower did not run');
    expect(judge.prompt).toContain(`- extra — check: \`touch ${marker}\``);
    // The file keeps the edit: flower does not rewrite it, and the record still holds the frozen set.
    expect(readFileSync(goalPath, 'utf8')).toContain('- extra — check:');
  });

  it('asks once on a terminal: "keep" runs the frozen set every round; the removed check still runs', async () => {
    const { runner, goalPath, marker, kept, appendCheck } = task({ verdicts: [NOT_YET, ACHIEVED] });
    // Before the start: the frozen check replaced by another (as an agent could).
    writeFileSync(goalPath, readFileSync(goalPath, 'utf8').replace(/^- the frozen one.*$/m, ''));
    appendCheck(goalPath);
    const { channel, asked } = answeringChannel(() => CHANGED_CHECKS_CHOICES[0]);
    const ctx = await new Workflow([withGoal(work, { channel, goalPath, rounds: 2 })]).run(runner);
    expect(ctx.failedAt).toBeUndefined();
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatch(
      /Added \(flower would run these commands\):\n {2}- extra[\s\S]*No longer in the file:\n {2}- the frozen one/,
    );
    expect(runner.labels()).toEqual(['work', 'work:verdict#1', 'work#round2', 'work:verdict#2']);
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(kept)).toBe(true);
  });

  it('asks once on a terminal: "run" runs the file\'s checks and freezes them', async () => {
    const { runner, goalPath, runDir, marker, appendCheck } = task();
    appendCheck(goalPath);
    const { channel, asked } = answeringChannel(() => CHANGED_CHECKS_CHOICES[1]);
    const ctx = await new Workflow([withGoal(work, { channel, goalPath, rounds: 1 })]).run(runner);
    expect(ctx.failedAt).toBeUndefined();
    expect(asked).toHaveLength(1);
    expect(existsSync(marker)).toBe(true);
    expect(loadFrozenChecks(runDir, goalPath)?.map((check) => check.command)).toContain(`touch ${marker}`);
  });

  it('a library decision callback decides instead of the channel', async () => {
    const { runner, goalPath, marker, appendCheck } = task();
    appendCheck(goalPath);
    const seen: string[] = [];
    await new Workflow([
      withGoal(work, {
        channel: new HumanChannel({ timeoutSeconds: 0 }),
        goalPath,
        rounds: 1,
        approveChecks: async (change) => {
          seen.push(...change.added.map((check) => check.command));
          return false;
        },
      }),
    ]).run(runner);
    expect(seen).toEqual([`touch ${marker}`]);
    expect(existsSync(marker)).toBe(false);
  });

  it('a goal without a record is frozen the first time it is seen', async () => {
    const { runner, goalPath, runDir, marker, appendCheck } = task({
      verdicts: [NOT_YET, ACHIEVED],
      onWork: (round, path) => {
        if (round === 1) appendCheck(path);
      },
    });
    writeFileSync(frozenChecksPath(runDir), JSON.stringify({ version: 1, goals: {} }));
    await new Workflow([
      withGoal(work, { channel: new HumanChannel({ timeoutSeconds: 0 }), goalPath, rounds: 2 }),
    ]).run(runner);
    expect(loadFrozenChecks(runDir, goalPath)).toHaveLength(1);
    expect(existsSync(marker)).toBe(false);
  });
});

describe('the set-goal step freezes', () => {
  it('the goal it sets, and a goal on disk adds only what triage answers brought', async () => {
    const root = mkdtempSync(join(tmpdir(), 'flower-frozen-step-'));
    const workspace = join(root, 'ws');
    const runDir = join(root, 'runs');
    mkdirSync(workspace, { recursive: true });
    const goalPath = join(workspace, '.flower', 'notes', 'goal.md');
    const reply = '## Statement\nit works\n## Checklist\n- builds — check: `make`\n';
    const runner = new FakeRunner(() => ({ text: reply }), workspace, runDir);
    const channel = new HumanChannel({ timeoutSeconds: 0 });
    await new Workflow([goalStep({ channel, goalPath })]).run(runner);
    expect(loadFrozenChecks(runDir, goalPath)?.map((check) => check.command)).toEqual(['make']);

    // A worker adds a check and an unverifiable item; the human replaces the item with a check.
    appendFileSync(
      goalPath,
      '- extra — check: `touch PWNED`\n- on a phone [cannot verify here: no device]\n',
    );
    const answering = answeringChannel((_q, options) =>
      options.length > 0 ? 'Change them' : 'works offline — check: `./offline-test`',
    );
    await new Workflow([goalStep({ channel: answering.channel, goalPath })]).run(
      new FakeRunner(() => ({ text: reply }), workspace, runDir),
    );
    expect(loadFrozenChecks(runDir, goalPath)?.map((check) => check.command)).toEqual([
      'make',
      './offline-test',
    ]);
  });
});
