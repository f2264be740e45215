import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HumanChannel } from '../../../src/agents/human/channel.js';
import type { FlowerEvent } from '../../../src/runtime/events.js';
import { newContext } from '../../../src/workflow/context.js';
import { Goal } from '../../../src/workflow/goal.js';
import { goalStep } from '../../../src/workflow/goal-step.js';
import {
  GOAL_TRIAGE_EVENT,
  TRIAGE_CHOICES,
  triageGoal,
  triageSummary,
} from '../../../src/workflow/triage.js';
import { Workflow } from '../../../src/workflow/workflow.js';
import { answeringChannel } from './answering-channel.js';
import { FakeRunner } from './fake-runner.js';

const GOAL = Goal.parse(
  [
    '## Statement',
    'ship the app',
    '## Checklist',
    '- tests pass — check: `npm test`',
    '- the README explains usage',
    '- runs on macOS [cannot verify here: this is Linux]',
  ].join('\n'),
);
const MAC = 'runs on macOS [cannot verify here: this is Linux]';

function setup() {
  const path = join(mkdtempSync(join(tmpdir(), 'flower-triage-')), 'goal.md');
  const events: FlowerEvent[] = [];
  const ctx = newContext({ onEvent: (event) => events.push(event) });
  return { path, events, ctx };
}

describe('triage when the goal is set', () => {
  it('classifies every item: check, judgement, cannot verify here', () => {
    expect(GOAL.items().map((item) => item.kind)).toEqual(['check', 'judgement', 'cannot verify here']);
    expect(triageSummary(GOAL)).toBe(
      'goal: 3 items — 1 checked by flower, 1 for the judge, 1 cannot be verified here',
    );
  });

  it('asks about cannot-verify items; "accept" marks them in goal.md as assumptions, never asked again', async () => {
    const { path, events, ctx } = setup();
    const { channel, asked } = answeringChannel(() => '1');
    const goal = await triageGoal(ctx, GOAL, path, channel);
    expect(asked[0]).toContain(`  - ${MAC}`);
    expect(asked[0]).toContain('before any work is paid for');
    expect(channel.asks[0]?.options).toEqual([...TRIAGE_CHOICES]);
    expect(goal.assumptions).toEqual(['runs on macOS [cannot verify here, accepted: this is Linux]']);
    expect(goal.undecided).toEqual([]);
    expect(Goal.load(path)?.assumptions).toEqual(goal.assumptions);
    expect(ctx.assumptions).toEqual(goal.assumptions);
    expect(events[0]).toMatchObject({
      kind: 'system',
      payload: { subtype: GOAL_TRIAGE_EVENT, notice: 'info' },
    });
    // Decided: a second triage asks nothing.
    const again = answeringChannel(() => '1');
    await triageGoal(ctx, goal, path, again.channel);
    expect(again.asked).toEqual([]);
  });

  it('"drop" removes them from the checklist', async () => {
    const { path, ctx } = setup();
    const goal = await triageGoal(ctx, GOAL, path, answeringChannel(() => '3').channel);
    expect(goal.checks).toEqual(['tests pass — check: `npm test`', 'the README explains usage']);
    expect(Goal.load(path)?.checks).toHaveLength(2);
  });

  it('"change" replaces them by the answer\'s lines, which are triaged again', async () => {
    const { path, ctx } = setup();
    const answers = ['2', '- builds for darwin — check: `GOOS=darwin go build ./...`'];
    const { channel } = answeringChannel(() => answers.shift());
    const goal = await triageGoal(ctx, GOAL, path, channel);
    expect(goal.checks).toEqual([
      'tests pass — check: `npm test`',
      'the README explains usage',
      'builds for darwin — check: `GOOS=darwin go build ./...`',
    ]);
    expect(goal.items().at(-1)?.kind).toBe('check');
  });

  it('unattended: nobody is asked, the items are recorded as assumptions and said to be', async () => {
    const { path, events, ctx } = setup();
    const channel = new HumanChannel({ timeoutSeconds: 0 });
    const goal = await triageGoal(ctx, GOAL, path, channel);
    expect(goal.assumptions).toHaveLength(1);
    const warning = events.find((event) => event.kind === 'system' && event.payload.warning);
    expect(warning?.text).toBe('nobody answered: 1 item recorded as assumed, not verified');
  });

  it('names only the kinds a goal has', () => {
    expect(triageSummary(new Goal({ statement: 's', checks: ['tests pass — check: `npm test`'] }))).toBe(
      'goal: 1 item — 1 checked by flower',
    );
  });

  it('"change" with nothing written keeps the items and asks again', async () => {
    const { path, ctx } = setup();
    const answers = ['2', '', '1'];
    const { channel } = answeringChannel(() => answers.shift());
    const goal = await triageGoal(ctx, GOAL, path, channel);
    expect(goal.assumptions).toEqual(['runs on macOS [cannot verify here, accepted: this is Linux]']);
    expect(channel.asks).toHaveLength(3);
  });

  it('stops asking after three rounds of changes into more unverifiable items, and accepts them', async () => {
    const { path, ctx } = setup();
    let round = 0;
    const { channel } = answeringChannel((question) =>
      question.startsWith('Write what should replace them')
        ? `- runs on BSD ${++round} [cannot verify here: no BSD]`
        : '2',
    );
    const goal = await triageGoal(ctx, GOAL, path, channel);
    expect(round).toBe(2);
    expect(goal.undecided).toEqual([]);
    expect(goal.assumptions).toEqual(['runs on BSD 2 [cannot verify here, accepted: no BSD]']);
  });

  it('offers no "drop" when every item is unverifiable (an empty checklist is no goal)', async () => {
    const { path, ctx } = setup();
    const onlyMac = new Goal({ statement: 's', checks: [MAC] });
    const { channel } = answeringChannel(() => 'drop');
    const goal = await triageGoal(ctx, onlyMac, path, channel);
    expect(channel.asks[0]?.options).toHaveLength(2);
    expect(goal.checks).toHaveLength(1);
  });

  it('warns at once about a check it cannot read', async () => {
    const { path, events, ctx } = setup();
    await triageGoal(
      ctx,
      new Goal({ statement: 's', checks: ['tests — check: `npm test'] }),
      path,
      new HumanChannel(),
    );
    const warning = events.find((event) => event.kind === 'system' && event.payload.warning);
    expect(warning?.text).toContain("this item's check cannot be read");
    expect(warning?.text).toContain('not closed');
  });

  it('runs in the set-goal step before any work, and again for a goal on disk with undecided items', async () => {
    const { path } = setup();
    const reply = `${GOAL.promptBlock()}`;
    const first = answeringChannel(() => '1');
    const runner = new FakeRunner(() => ({ text: reply }));
    await new Workflow([goalStep({ channel: first.channel, goalPath: path })]).run(runner);
    expect(first.asked).toHaveLength(1);
    expect(readFileSync(path, 'utf8')).toContain('[cannot verify here, accepted: this is Linux]');
    // Someone adds an unverifiable item by hand: the next start asks about it, without a model call.
    const edited = new Goal({
      statement: 'ship',
      checks: ['works on Windows [cannot verify here: no Windows]'],
    });
    edited.write(path);
    const second = answeringChannel(() => '1');
    await new Workflow([goalStep({ channel: second.channel, goalPath: path })]).run(runner);
    expect(runner.calls).toHaveLength(1);
    expect(second.asked[0]).toContain('works on Windows');
  });
});
