import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import type { FlowerEvent } from '../../../src/runtime/events.js';
import { newContext } from '../../../src/workflow/context.js';
import { type Step, StepAbort } from '../../../src/workflow/step.js';
import { stepListProblems, Workflow } from '../../../src/workflow/workflow.js';
import { FakeRunner, fakeSpec } from './fake-runner.js';

const step = (name: string, extra: Partial<Step> = {}): Step => ({
  name,
  spec: fakeSpec(name),
  prompt: `do ${name}`,
  ...extra,
});

function readLineage(runner: FakeRunner) {
  return JSON.parse(readFileSync(join(runner.runDir!, 'lineage.json'), 'utf8')) as {
    woke: number;
    steps: Record<string, string>;
  };
}

describe('Workflow.run: order, prompts and outputs', () => {
  it('runs steps in order and hands outputs downstream (reduce or text)', async () => {
    const runner = new FakeRunner((call) => ({ text: `out of ${call.options.stepName}` }));
    const flow = new Workflow([
      step('a', { reduce: (result) => result.text.toUpperCase() }),
      step('b', { prompt: (ctx) => `use ${ctx.outputs.a}` }),
    ]);
    const ctx = await flow.run(runner);
    expect(runner.calls.map((call) => call.prompt)).toEqual(['do a', 'use OUT OF A']);
    expect(ctx.outputs).toEqual({ a: 'OUT OF A', b: 'out of b' });
    expect(ctx.failedAt).toBeUndefined();
    expect(ctx.results.b?.step).toBe('b');
    expect(ctx.sessions).toEqual({ a: 's1', b: 's2' });
  });

  it('skips a step whose `when` is false: no run, no result, no output, no step event', async () => {
    const runner = new FakeRunner();
    const events: FlowerEvent[] = [];
    const ctx = await new Workflow([step('a', { when: async () => false }), step('b')]).run(runner, {
      onEvent: (event) => events.push(event),
    });
    expect(runner.labels()).toEqual(['b']);
    expect(ctx.results.a).toBeUndefined();
    expect('a' in ctx.outputs).toBe(false);
    expect(events.filter((event) => event.kind === 'step').map((event) => event.payload)).toEqual([
      { name: 'b', index: 2, total: 2, resumed: false, woke: 1 },
    ]);
  });

  it('reuses the same context object on a second run', async () => {
    const context = newContext({ data: { user: 'x' } });
    const flow = new Workflow([step('a')], { context });
    const first = await flow.run(new FakeRunner());
    const second = await flow.run(new FakeRunner());
    expect(first).toBe(context);
    expect(second).toBe(context);
    expect(context.data.user).toBe('x');
  });

  it('calls onStep for passed and failed steps', async () => {
    const onStep = vi.fn();
    await new Workflow([step('a'), step('b', { gate: () => false, onFail: 'continue' })]).run(
      new FakeRunner(),
      {
        onStep,
      },
    );
    expect(onStep.mock.calls.map(([s, r]) => [s.name, r.step])).toEqual([
      ['a', 'a'],
      ['b', 'b'],
    ]);
  });
});

describe('Workflow.run: gates and retries', () => {
  it('calls the gate exactly once per ok attempt and never for a failed attempt', async () => {
    const gate = vi.fn(() => true);
    const runner = new FakeRunner((_call, index) => (index === 0 ? { ok: false, error: 'boom' } : {}));
    const ctx = await new Workflow([step('a', { gate, retries: 2 })]).run(runner);
    expect(runner.labels()).toEqual(['a', 'a#retry1']);
    expect(gate).toHaveBeenCalledTimes(1);
    expect(ctx.outputs.a).toBe('done');
  });

  it('retries from scratch with the original prompt without onReject (#retryN)', async () => {
    const runner = new FakeRunner();
    const ctx = await new Workflow([step('a', { gate: () => false, retries: 2 })]).run(runner);
    expect(runner.labels()).toEqual(['a', 'a#retry1', 'a#retry2']);
    expect(runner.calls.map((call) => [call.prompt, call.options.resume])).toEqual([
      ['do a', undefined],
      ['do a', undefined],
      ['do a', undefined],
    ]);
    expect(ctx.failedAt).toBe('a');
  });

  it('with onReject resumes the rejected session with its answer (#roundN), fork off', async () => {
    const runner = new FakeRunner();
    const rejections: string[] = [];
    let round = 0;
    const ctx = await new Workflow([
      step('a', {
        gate: () => ++round === 3,
        onReject: (result) => {
          rejections.push(result.step);
          return `fix round ${round}`;
        },
        retries: 2,
      }),
    ]).run(runner);
    expect(runner.labels()).toEqual(['a', 'a#round2', 'a#round3']);
    expect(runner.calls.map((call) => [call.prompt, call.options.resume, call.options.fork])).toEqual([
      ['do a', undefined, undefined],
      ['fix round 1', 's1', false],
      ['fix round 2', 's1', false],
    ]);
    expect(rejections).toEqual(['a', 'a#round2']);
    expect(ctx.outputs.a).toBe('done');
  });

  it('tells the sink every time the gate rejects, with the text that goes back to the session', async () => {
    const events: FlowerEvent[] = [];
    let round = 0;
    await new Workflow([
      step('a', { gate: () => ++round === 3, onReject: () => `fix round ${round}`, retries: 2 }),
      step('b', { gate: () => false, retries: 1 }),
    ]).run(new FakeRunner(), { onEvent: (event) => events.push(event) });
    const rejections = events.filter((event) => event.kind === 'system').map((event) => event.text);
    expect(rejections).toEqual([
      'gate rejected a (attempt 1/3): fix round 1',
      'gate rejected a (attempt 2/3): fix round 2',
      'gate rejected b (attempt 1/2): the step did not accept its result; the next attempt starts over',
      'gate rejected b (attempt 2/2): the step did not accept its result; no attempts left',
    ]);
    const first = events.find((event) => event.kind === 'system');
    expect(first?.payload).toMatchObject({
      subtype: 'gate_rejected',
      warning: true,
      data: { step: 'a', attempt: 1, attempts: 3, feedback: 'fix round 1' },
    });
  });

  it('records a rejection on the row, with what the gate found missing, and says it on the last attempt too (issue 21)', async () => {
    const events: FlowerEvent[] = [];
    const runner = new FakeRunner();
    const ctx = await new Workflow([
      step('a', { gate: () => false, onFail: 'continue' }),
      step('b', {
        gate: (result) => {
          result.annotations = {
            rejected: 'the reply is not a complete brief',
            missing: ['Goal', 'Acceptance criteria that are long enough to pass eighty columns'],
          };
          return false;
        },
        retries: 1,
      }),
    ]).run(runner, { onEvent: (event) => events.push(event) });
    expect(ctx.results.a?.ok).toBe(true);
    expect(ctx.results.a?.annotations).toEqual({ rejected: 'the step did not accept its result' });
    expect(ctx.results.b?.annotations?.missing).toHaveLength(2);
    const last = events.filter((event) => event.kind === 'system').at(-1);
    expect(last?.text).toBe(
      'gate rejected b (attempt 2/2): the reply is not a complete brief (missing: Goal; Acceptance criteria that are long enough to pass eighty columns); no attempts left',
    );
    expect(last?.payload).toMatchObject({
      data: {
        reason:
          'the reply is not a complete brief (missing: Goal; Acceptance criteria that are long enough to pass eighty columns)',
        missing: ['Goal', 'Acceptance criteria that are long enough to pass eighty columns'],
      },
    });
  });

  it('says nothing about a gate when an attempt failed before reaching it', async () => {
    const events: FlowerEvent[] = [];
    await new Workflow([step('a', { gate: () => true, retries: 1 })]).run(
      new FakeRunner(() => ({ ok: false, error: 'boom' })),
      { onEvent: (event) => events.push(event) },
    );
    expect(events.filter((event) => event.kind === 'system')).toEqual([]);
  });

  it('falls back to starting over when onReject answers empty or there is no session', async () => {
    const runner = new FakeRunner((_call, index) => (index === 1 ? { sessionId: null } : {}));
    const onReject = vi.fn(() => '');
    await new Workflow([step('a', { gate: () => false, onReject, retries: 2 })]).run(runner);
    expect(runner.calls.map((call) => [call.options.stepName, call.prompt, call.options.resume])).toEqual([
      ['a', 'do a', undefined],
      ['a#round2', 'do a', undefined],
      ['a#round3', 'do a', undefined],
    ]);
    expect(onReject).toHaveBeenCalledTimes(1);
  });

  it('stops at StepAbort without using the remaining retries, then applies onFail', async () => {
    const runner = new FakeRunner();
    const ctx = await new Workflow([
      step('a', {
        retries: 5,
        gate: () => {
          throw new StepAbort('nobody answered');
        },
        onFail: 'skip',
      }),
      step('b'),
    ]).run(runner);
    expect(runner.labels()).toEqual(['a', 'b']);
    expect(ctx.aborted).toBe('nobody answered');
    expect('a' in ctx.outputs).toBe(false);
    expect(ctx.failedAt).toBeUndefined();
  });

  it('stops at a StepAbort from `when` before the step runs, as a decision rather than a crash', async () => {
    const runner = new FakeRunner();
    const ctx = await new Workflow([
      step('a'),
      step('b', {
        when: () => {
          throw new StepAbort('no rounds left');
        },
      }),
      step('c'),
    ]).run(runner);
    expect(runner.labels()).toEqual(['a']);
    expect(ctx).toMatchObject({ aborted: 'no rounds left', failedAt: 'b' });
  });

  it('stops at a StepAbort from the runner (nothing ran) with a result that says why', async () => {
    const runner = new FakeRunner();
    const refusing = {
      run: () => Promise.reject(new StepAbort('budget spent: $1.00 of $1.00')),
    };
    const ctx = await new Workflow([step('a', { retries: 3 }), step('b')]).run(refusing);
    expect(ctx).toMatchObject({ aborted: 'budget spent: $1.00 of $1.00', failedAt: 'a' });
    expect(ctx.results.a).toMatchObject({ ok: false, error: 'budget spent: $1.00 of $1.00', step: 'a' });
    expect(runner.calls).toHaveLength(0);
  });

  it('runs onEnd after the steps, whether they passed or stopped', async () => {
    const ended: Array<string | undefined> = [];
    const onEnd = async (ctx: { failedAt?: string }) => {
      ended.push(ctx.failedAt);
    };
    await new Workflow([step('a')], { onEnd }).run(new FakeRunner());
    await new Workflow([step('a', { gate: () => false })], { onEnd }).run(new FakeRunner());
    expect(ended).toEqual([undefined, 'a']);
  });

  it('lets errors other than StepAbort out of a gate', async () => {
    const flow = new Workflow([
      step('a', {
        gate: () => {
          throw new TypeError('bug in gate');
        },
      }),
    ]);
    await expect(flow.run(new FakeRunner())).rejects.toThrow('bug in gate');
  });
});

describe('Workflow.run: round headers', () => {
  it('puts no second ruler for a round the runner refuses to start (a spent budget, issue 21)', async () => {
    let round = 1;
    const runner = new FakeRunner((call, index) => {
      if (index === 2) throw new StepAbort('budget spent: $1.20 of $1.00');
      call.options.onEvent?.({ kind: 'text', text: `round ${round}`, payload: { subagent: false } });
      // The second round is cut off by the binary at the cap: a failed result, not a rejection.
      return index === 1 ? { ok: false, error: 'budget spent: $1.20 of $1.00' } : {};
    });
    const events: FlowerEvent[] = [];
    const ctx = await new Workflow([
      step('work', {
        retries: 2,
        gate: () => {
          round++;
          return false;
        },
        roundOf: () => ({ round, rounds: 3 }),
      }),
    ]).run(runner, { onEvent: (event) => events.push(event) });
    expect(ctx.aborted).toBe('budget spent: $1.20 of $1.00');
    const shown = events
      .filter((event) => event.kind !== 'system')
      .map((event) => (event.kind === 'step' ? `== round ${String(event.payload.round)}` : event.text));
    expect(shown).toEqual(['== round 1', 'round 1', '== round 2', 'round 2']);
  });

  it('still heads a later round that ran without a single event', async () => {
    let round = 1;
    const runner = new FakeRunner();
    const events: FlowerEvent[] = [];
    await new Workflow([
      step('work', {
        retries: 1,
        gate: () => ++round > 2,
        roundOf: () => ({ round, rounds: 2 }),
      }),
    ]).run(runner, { onEvent: (event) => events.push(event) });
    expect(events.filter((event) => event.kind === 'step').map((event) => event.payload.round)).toEqual([
      1, 2,
    ]);
  });
});

describe('Workflow.run: onFail', () => {
  const failing = (onFail: Step['onFail']) =>
    step('a', { gate: () => false, onFail, reduce: () => 'reduced' });

  it('stop: records failedAt and runs nothing after', async () => {
    const runner = new FakeRunner();
    const ctx = await new Workflow([failing('stop'), step('b')]).run(runner);
    expect(runner.labels()).toEqual(['a']);
    expect(ctx.failedAt).toBe('a');
    expect(ctx.results.a?.ok).toBe(true);
    expect('a' in ctx.outputs).toBe(false);
  });

  it('skip: moves on without an output', async () => {
    const runner = new FakeRunner();
    const ctx = await new Workflow([failing('skip'), step('b')]).run(runner);
    expect(runner.labels()).toEqual(['a', 'b']);
    expect('a' in ctx.outputs).toBe(false);
  });

  it('continue: moves on with the raw text, not reduced', async () => {
    const ctx = await new Workflow([failing('continue'), step('b')]).run(new FakeRunner());
    expect(ctx.outputs.a).toBe('done');
    expect(ctx.failedAt).toBeUndefined();
  });
});

describe('Workflow.run: sessions', () => {
  it('resumeFrom continues the named step session; fork branches off it', async () => {
    const runner = new FakeRunner();
    await new Workflow([
      step('a'),
      step('b', { resumeFrom: 'a' }),
      step('c', { resumeFrom: 'a', fork: true }),
    ]).run(runner);
    expect(runner.calls.map((call) => [call.options.resume, call.options.fork])).toEqual([
      [undefined, undefined],
      ['s1', false],
      ['s1', true],
    ]);
  });

  it('fork without resumeFrom does nothing', async () => {
    const runner = new FakeRunner();
    await new Workflow([step('a', { fork: true })]).run(runner);
    expect(runner.calls[0]?.options.resume).toBeUndefined();
  });

  it('resumeFrom a step without a session is an error that says what to do', async () => {
    // "a" is skipped, so it has no session when "b" starts.
    const flow = new Workflow([step('a', { when: async () => false }), step('b', { resumeFrom: 'a' })]);
    await expect(flow.run(new FakeRunner())).rejects.toThrow(/"a" runs first, or remove resumeFrom/);
  });
});

describe('Workflow: a step list that cannot run is refused when it is built (issue 21)', () => {
  it('refuses two steps with one name, saying which', () => {
    expect(() => new Workflow([step('a'), step('b'), step('a')], { name: 'mine' })).toThrow(
      'Workflow "mine" cannot run: Two steps are named "a": each step needs its own name',
    );
  });

  it('refuses a resumeFrom that names no step, listing the steps there are', () => {
    expect(() => new Workflow([step('write'), step('usage', { resumeFrom: 'wirte' })])).toThrow(
      'This workflow cannot run: Step "usage" resumes from "wirte", but there is no step "wirte" ' +
        '(the steps are: "write", "usage"). resumeFrom must name an earlier step of the same workflow.',
    );
  });

  it('refuses a resumeFrom that names the step itself or a step that runs after it', () => {
    expect(() => new Workflow([step('a', { resumeFrom: 'a' })])).toThrow(/that is the step itself/);
    expect(() => new Workflow([step('a', { resumeFrom: 'b' }), step('b')])).toThrow(/"b" runs after it/);
  });

  it('runs the list it checked: changing the array afterwards changes nothing', async () => {
    const steps = [step('a')];
    const flow = new Workflow(steps);
    steps.push(step('a'));
    const runner = new FakeRunner();
    await flow.run(runner);
    expect(runner.labels()).toEqual(['a']);
  });

  it('stepListProblems: nothing to say about distinct names and earlier resumeFrom', () => {
    expect(stepListProblems([step('a'), step('b', { resumeFrom: 'a', fork: true }), step('c')])).toEqual([]);
  });
});

describe('Workflow.run: continuity through lineage', () => {
  it('records sessions as soon as they are known, counts wakes, and resumes with the resume prompt', async () => {
    const runner = FakeRunner.continuous();
    const steps = [step('a', { resumePrompt: 'carry on with a' }), step('b')];
    const first = await new Workflow(steps).run(runner);
    expect(first.woke).toBe(1);
    expect(readLineage(runner)).toMatchObject({ woke: 1, steps: { a: 's1', b: 's2' } });

    const events: FlowerEvent[] = [];
    const second = await new Workflow(steps).run(runner, { onEvent: (event) => events.push(event) });
    expect(second.woke).toBe(2);
    expect(runner.calls.slice(2).map((call) => [call.prompt, call.options.resume])).toEqual([
      ['carry on with a', 's1'],
      ['do b', 's2'],
    ]);
    expect(events.filter((event) => event.kind === 'step').map((event) => event.payload)).toEqual([
      { name: 'a', index: 1, total: 2, resumed: true, woke: 2 },
      { name: 'b', index: 2, total: 2, resumed: true, woke: 2 },
    ]);
  });

  it('writes lineage through onSession during the run, before the step ends', async () => {
    let seenDuringRun: Record<string, string> | undefined;
    const runner = FakeRunner.continuous();
    const original = runner.run.bind(runner);
    runner.run = async (spec, prompt, options) => {
      const result = await original(spec, prompt, options);
      seenDuringRun = readLineage(runner).steps;
      return result;
    };
    await new Workflow([step('a')]).run(runner);
    expect(seenDuringRun).toEqual({ a: 's1' });
  });

  it('never records suffixed attempt labels or a judge run inside the gate', async () => {
    const runner = FakeRunner.continuous();
    let rounds = 0;
    await new Workflow([
      step('work', {
        retries: 1,
        onReject: () => 'again',
        gate: async (_result, ctx) => {
          const verdict = await ctx.runtime!.run(fakeSpec('judge'), 'judge it', {
            stepName: `work:verdict#${++rounds}`,
          });
          return verdict.ok && rounds === 2;
        },
      }),
    ]).run(runner);
    expect(runner.labels()).toEqual(['work', 'work:verdict#1', 'work#round2', 'work:verdict#2']);
    expect(readLineage(runner).steps).toEqual({ work: 's1' });
    const workCalls = runner.calls.filter(
      (call) => call.options.stepName?.startsWith('work') && !call.options.stepName.includes(':'),
    );
    expect(workCalls.every((call) => call.options.onSession !== undefined)).toBe(true);
    expect(runner.calls[1]?.options.onSession).toBeUndefined();
  });

  it('ignores lineage records whose session the store no longer has', async () => {
    const runner = FakeRunner.continuous();
    await new Workflow([step('a')]).run(runner);
    runner.knownSessions.clear();
    await new Workflow([step('a')]).run(runner);
    expect(runner.calls[1]?.options.resume).toBeUndefined();
  });

  it('continuous: false neither reads nor writes lineage', async () => {
    const runner = FakeRunner.continuous();
    await new Workflow([step('a')]).run(runner);
    const ctx = await new Workflow([step('a')], { continuous: false }).run(runner);
    expect(runner.calls[1]?.options.resume).toBeUndefined();
    expect(ctx.lineage).toBeUndefined();
    expect(readLineage(runner).woke).toBe(1);
  });
});
