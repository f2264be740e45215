import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HumanChannel } from '../../../src/agents/human/channel.js';
import { Brief } from '../../../src/workflow/brief.js';
import { CLARIFY_RESUME, clarifyStep } from '../../../src/workflow/clarify-step.js';
import { newContext } from '../../../src/workflow/context.js';
import { Goal } from '../../../src/workflow/goal.js';
import { goalStep } from '../../../src/workflow/goal-step.js';
import { renderPrompt, type Step, StepAbort } from '../../../src/workflow/step.js';
import { UNCLEAR_VERDICT_REASON } from '../../../src/workflow/verdict.js';
import { CANNOT_VERIFY_CHOICES, withGoal } from '../../../src/workflow/with-goal.js';
import { Workflow } from '../../../src/workflow/workflow.js';
import { answeringChannel } from './answering-channel.js';
import { FakeRunner, fakeSpec, type Reply } from './fake-runner.js';

const BRIEF_REPLY = [
  'Here is the brief.',
  '## Goal',
  'hello.py prints hello',
  '```python',
  'print("hello")',
  '```',
  '## Acceptance',
  '- running it prints hello',
  '## Boundaries',
  'nothing else',
  '## Unknowns & assumptions',
  'python3 is installed',
].join('\n');

const GOAL_REPLY =
  '## Statement\nhello.py prints hello\n## Checklist\n- hello.py exists\n- prints hello\n- exit code 0';

const tempDir = () => mkdtempSync(join(tmpdir(), 'flower-steps-'));

describe('clarifyStep', () => {
  it('freezes a complete brief (without the code), pours it into the context and hands on its block', async () => {
    const dir = tempDir();
    const briefPath = join(dir, 'notes', 'brief.md');
    const runner = new FakeRunner(() => ({ text: BRIEF_REPLY }));
    const step = clarifyStep({ channel: new HumanChannel(), briefPath, prompt: 'write hello.py' });
    const ctx = await new Workflow([step]).run(runner);
    expect(runner.calls[0]?.prompt).toBe('write hello.py');
    expect(runner.calls[0]?.spec.name).toBe('clarify');
    const onDisk = readFileSync(briefPath, 'utf8');
    expect(onDisk).not.toContain('print("hello")');
    expect(Brief.load(briefPath)?.complete).toBe(true);
    expect(ctx.brief?.goal).toBe('hello.py prints hello');
    expect(ctx.outputs.clarify).toBe(ctx.brief?.promptBlock());
    expect(ctx.briefMissing).toBeUndefined();
  });

  it('rejects a truncated brief, lists what is missing and writes nothing', async () => {
    const dir = tempDir();
    const briefPath = join(dir, 'brief.md');
    const truncated = '## Goal\ng\n## Acceptance\na\n```\n## Boundaries\nb';
    const ctx = await new Workflow([
      clarifyStep({ channel: new HumanChannel(), briefPath, prompt: 'x' }),
    ]).run(new FakeRunner(() => ({ text: truncated })));
    expect(ctx.briefMissing).toEqual(['Boundaries', 'Unknowns & assumptions']);
    expect(ctx.failedAt).toBe('clarify');
    // Recorded on the row as data, so status and report show `rejected` and what was missing.
    expect(ctx.results.clarify?.annotations).toEqual({
      rejected: 'the reply is not a complete brief',
      missing: ['Boundaries', 'Unknowns & assumptions'],
    });
    expect(existsSync(briefPath)).toBe(false);
  });

  it('skips when a complete brief is on disk but still fills the context; alwaysAsk asks anyway', async () => {
    const dir = tempDir();
    const briefPath = join(dir, 'brief.md');
    Brief.parse(BRIEF_REPLY).write(briefPath);
    const runner = new FakeRunner();
    const ctx = await new Workflow([
      clarifyStep({ channel: new HumanChannel(), briefPath, prompt: 'x' }),
    ]).run(runner);
    expect(runner.calls).toHaveLength(0);
    expect(ctx.outputs.clarify).toContain('hello.py prints hello');
    await new Workflow([
      clarifyStep({ channel: new HumanChannel(), briefPath, prompt: 'x', alwaysAsk: true }),
    ]).run(runner);
    expect(runner.calls).toHaveLength(1);
  });

  it('continues an interrupted clarification with the resume prompt, not the request', async () => {
    const runner = FakeRunner.continuous((_call, index) =>
      index === 0 ? { ok: false, error: 'killed' } : { text: BRIEF_REPLY },
    );
    const briefPath = join(tempDir(), 'brief.md');
    const make = () =>
      new Workflow([clarifyStep({ channel: new HumanChannel(), briefPath, prompt: 'write hello.py' })]);
    await make().run(runner);
    const ctx = await make().run(runner);
    expect(runner.calls[1]).toMatchObject({ prompt: CLARIFY_RESUME, options: { resume: 's1' } });
    expect(ctx.woke).toBe(2);
    expect(ctx.brief?.complete).toBe(true);
  });
});

describe('goalStep', () => {
  it('sends the brief to the judge, freezes the goal and hands on its block', async () => {
    const goalPath = join(tempDir(), 'goal.md');
    const runner = new FakeRunner(() => ({ text: GOAL_REPLY }));
    const context = newContext({ outputs: { clarify: '## Goal\nhello' } });
    const ctx = await new Workflow([goalStep({ channel: new HumanChannel(), goalPath })], { context }).run(
      runner,
    );
    expect(runner.calls[0]?.prompt).toContain('## Goal\nhello');
    expect(runner.calls[0]?.spec.name).toBe('set-goal');
    // It asks for a check wherever a command can prove an item.
    expect(runner.calls[0]?.prompt).toContain('end the item with check: `command`');
    expect(Goal.load(goalPath)?.checks).toEqual(['hello.py exists', 'prints hello', 'exit code 0']);
    expect(ctx.goal?.complete).toBe(true);
    expect(ctx.outputs['set-goal']).toBe(ctx.goal?.promptBlock());
  });

  it('says so when there is no brief, and fails on an incomplete goal', async () => {
    const goalPath = join(tempDir(), 'goal.md');
    const runner = new FakeRunner(() => ({ text: '## Statement\nonly this' }));
    const ctx = await new Workflow([goalStep({ channel: new HumanChannel(), goalPath })]).run(runner);
    expect(runner.calls[0]?.prompt).toContain('(there is no brief)');
    expect(ctx.failedAt).toBe('set-goal');
    expect(ctx.results['set-goal']?.annotations).toEqual({
      rejected: 'the reply is not a complete goal',
      missing: ['Checklist'],
    });
    expect(existsSync(goalPath)).toBe(false);
  });

  it('skips when a complete goal is on disk unless alwaysSet', async () => {
    const goalPath = join(tempDir(), 'goal.md');
    Goal.parse(GOAL_REPLY).write(goalPath);
    const runner = new FakeRunner(() => ({ text: GOAL_REPLY }));
    const ctx = await new Workflow([goalStep({ channel: new HumanChannel(), goalPath })]).run(runner);
    expect(runner.calls).toHaveLength(0);
    expect(ctx.goal?.checks).toHaveLength(3);
    await new Workflow([goalStep({ channel: new HumanChannel(), goalPath, alwaysSet: true })]).run(runner);
    expect(runner.calls).toHaveLength(1);
  });
});

describe('withGoal', () => {
  const work: Step = {
    name: 'work',
    spec: fakeSpec('coordinator'),
    prompt: 'build it',
    resumePrompt: 'carry on',
  };

  function setup(verdicts: string[], channel = new HumanChannel()) {
    const goalPath = join(tempDir(), 'goal.md');
    Goal.parse(GOAL_REPLY).write(goalPath);
    let judged = 0;
    const runner = FakeRunner.continuous((call): Reply => {
      if (call.options.stepName?.includes(':verdict#')) return { text: verdicts[judged++] ?? '' };
      return { text: 'I built it' };
    });
    return { runner, goalPath, channel };
  }

  it('copies the step with its other fields, total rounds and a new gate', () => {
    const guarded = withGoal(
      { ...work, gate: () => true },
      { channel: new HumanChannel(), goalPath: 'g.md', rounds: 3 },
    );
    // The resume prompt is kept (the guard only adds the judge's last word after a wake).
    expect(renderPrompt(guarded, newContext(), true)).toBe('carry on');
    expect(guarded.retries).toBe(2);
    expect(withGoal(work, { channel: new HumanChannel(), goalPath: 'g.md', rounds: 0 }).retries).toBe(0);
    expect(withGoal(work, { channel: new HumanChannel(), goalPath: 'g.md', rounds: 1 }).retries).toBe(0);
  });

  it('passes when the judge, in a fresh session outside lineage, rules achieved', async () => {
    const { runner, goalPath, channel } = setup(['## Conclusion\nachieved\n## Reason\nall good']);
    const ctx = await new Workflow([withGoal(work, { channel, goalPath })]).run(runner);
    expect(runner.labels()).toEqual(['work', 'work:verdict#1']);
    const judgeCall = runner.calls[1]!;
    expect(judgeCall.options.resume).toBeUndefined();
    expect(judgeCall.spec.name).toBe('work:verdict');
    expect(judgeCall.prompt).toContain('- prints hello');
    expect(judgeCall.prompt).toContain('I built it');
    expect(ctx.outputs.work).toBe('I built it');
    expect(ctx.goalRounds).toBe(1);
    expect(JSON.parse(readFileSync(join(runner.runDir!, 'lineage.json'), 'utf8')).steps).toEqual({
      work: 's1',
    });
  });

  it('sends "not yet" back into the same work session as round 2', async () => {
    const { runner, goalPath, channel } = setup(['not yet: item 2 missing', '1']);
    const ctx = await new Workflow([withGoal(work, { channel, goalPath })]).run(runner);
    expect(runner.labels()).toEqual(['work', 'work:verdict#1', 'work#round2', 'work:verdict#2']);
    const round2 = runner.calls[2]!;
    expect(round2.options).toMatchObject({ resume: 's1', fork: false });
    expect(round2.prompt).toContain('not yet: item 2 missing');
    expect(round2.prompt).toContain('Do not start over');
    expect(ctx.failedAt).toBeUndefined();
  });

  it('treats an unclear ruling as not yet, with a reason that says so', async () => {
    const { runner, goalPath, channel } = setup(['Looks reasonable to me overall.', 'achieved']);
    await new Workflow([withGoal(work, { channel, goalPath })]).run(runner);
    expect(runner.calls[2]?.prompt).toContain(UNCLEAR_VERDICT_REASON);
  });

  it('never passes on a judge run that failed, whatever text it left', async () => {
    const goalPath = join(tempDir(), 'goal.md');
    Goal.parse(GOAL_REPLY).write(goalPath);
    const runner = new FakeRunner(
      (call): Reply =>
        call.options.stepName?.includes(':verdict#')
          ? { ok: false, text: 'achieved', error: 'API Error: 500' }
          : {},
    );
    const ctx = await new Workflow([
      withGoal(work, { channel: new HumanChannel(), goalPath, rounds: 1 }),
    ]).run(runner);
    expect(ctx.failedAt).toBe('work');
    expect(ctx.verdict?.parsed).toBe(false);
    expect(ctx.verdict?.reason).toContain("The judge's own run failed: API Error: 500");
  });

  it('fails the step when the rounds run out', async () => {
    const { runner, goalPath, channel } = setup(['not yet']);
    const ctx = await new Workflow([withGoal(work, { channel, goalPath, rounds: 1 })]).run(runner);
    expect(runner.labels()).toEqual(['work', 'work:verdict#1']);
    expect(ctx.failedAt).toBe('work');
    expect(ctx.verdict?.state).toBe('not yet');
  });

  const cannotVerify = '## Conclusion\ncannot verify here\n## Reason\nscreen capture is not permitted';

  it('cannot verify + the human accepts: the step passes', async () => {
    const { channel, asked } = answeringChannel((_q, options) => options[0]);
    const { runner, goalPath } = setup([cannotVerify]);
    const ctx = await new Workflow([withGoal(work, { channel, goalPath })]).run(runner);
    expect(asked[0]).toContain('screen capture is not permitted');
    expect(channel.asks[0]?.options).toEqual([...CANNOT_VERIFY_CHOICES]);
    expect(ctx.failedAt).toBeUndefined();
    expect(runner.labels()).toEqual(['work', 'work:verdict#1']);
  });

  it('cannot verify + the human changes the goal: the goal file is amended and another round runs', async () => {
    const answers = ['2', 'only check that hello.py exists'];
    const { channel } = answeringChannel(() => answers.shift());
    const { runner, goalPath } = setup([cannotVerify, 'achieved']);
    const ctx = await new Workflow([withGoal(work, { channel, goalPath })]).run(runner);
    expect(Goal.load(goalPath)?.statement).toContain('(amended) only check that hello.py exists');
    expect(ctx.goal?.statement).toContain('(amended)');
    expect(runner.labels()).toEqual(['work', 'work:verdict#1', 'work#round2', 'work:verdict#2']);
    expect(runner.calls[2]?.prompt).toContain('A human changed the goal');
    expect(runner.calls[3]?.prompt).toContain('(amended) only check that hello.py exists');
  });

  it('cannot verify + "you judged wrong" in free text: the words go back with another round', async () => {
    const { channel } = answeringChannel(() => 'it can be checked with xvfb');
    const { runner, goalPath } = setup([cannotVerify, 'achieved']);
    await new Workflow([withGoal(work, { channel, goalPath })]).run(runner);
    expect(runner.calls[2]?.prompt).toContain('judge was wrong');
    expect(runner.calls[2]?.prompt).toContain('it can be checked with xvfb');
  });

  it('cannot verify + nobody answers: the step stops without using more rounds', async () => {
    const { runner, goalPath } = setup([cannotVerify]);
    const channel = new HumanChannel({ timeoutSeconds: 0 });
    const ctx = await new Workflow([withGoal(work, { channel, goalPath, rounds: 3 })]).run(runner);
    expect(runner.labels()).toEqual(['work', 'work:verdict#1']);
    expect(ctx.aborted).toContain('nobody answered');
    // The question was never shown: the stop line says what it was about (issue 21).
    expect(ctx.aborted).toContain(
      'could not verify the goal in this environment (screen capture is not permitted) and nobody answered whether to accept it',
    );
    expect(ctx.aborted).toContain(goalPath);
    expect(ctx.failedAt).toBe('work');
  });

  it('aborts rather than pass when there is no runtime to run the judge', async () => {
    const guarded = withGoal(work, { channel: new HumanChannel(), goalPath: 'g.md' });
    const result = await new FakeRunner().run(fakeSpec('x'), 'p');
    await expect(Promise.resolve(guarded.gate?.(result, newContext()))).rejects.toBeInstanceOf(StepAbort);
  });

  it('uses the goal on disk when the context has none', async () => {
    const { runner, goalPath, channel } = setup(['achieved']);
    writeFileSync(goalPath, '# Statement\nfrom disk\n# Checklist\n- a disk check\n');
    await new Workflow([withGoal(work, { channel, goalPath })]).run(runner);
    expect(runner.calls[1]?.prompt).toContain('a disk check');
  });
});
