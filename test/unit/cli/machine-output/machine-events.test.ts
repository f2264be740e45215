import { describe, expect, it } from 'vitest';
import { InterruptedError, UsageError } from '../../../../src/cli/command-line/exit-errors.js';
import { MachineRecord } from '../../../../src/cli/machine-output/machine-events.js';
import { MachineOutput, withDocument } from '../../../../src/cli/machine-output/machine-output.js';
import { OUTPUT_VERSION } from '../../../../src/cli/machine-output/output-format.js';
import type { FlowerEvent } from '../../../../src/runtime/events.js';
import { newStepResult, type StepResult } from '../../../../src/runtime/step-result.js';
import type { StepRunner } from '../../../../src/workflow/runner.js';

const KEY = 'sk-ant-api03-flowerMachineOutputKey0123456789';
const location = { workspace: '/proj', runDir: '/proj/runs' };

function result(step: string, fields: Partial<StepResult> = {}): StepResult {
  return { ...newStepResult(step, 'run-1', 100), ok: true, costUsd: 0.25, numTurns: 3, ...fields };
}

/** A MachineOutput whose lines are collected instead of written. */
function collecting(format: 'text' | 'json' | 'stream-json') {
  const lines: string[] = [];
  const stream = { isTTY: false, write: () => true };
  const streams = { stdin: { isTTY: false }, stdout: stream, stderr: stream };
  const output = new MachineOutput(format, 'go', location, streams, (line) => lines.push(line));
  return { output, lines, parsed: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

describe('MachineRecord', () => {
  it('turns steps, workers, questions, checks and spend into typed, versioned events', () => {
    const record = new MachineRecord('go');
    const events = [
      record.stepStarted('work', 'coordinator', undefined),
      ...record.observe({
        kind: 'dispatch',
        text: '',
        tool: 'Agent',
        payload: {
          id: 'toolu_1',
          input: {},
          subagent: false,
          subagentType: 'coder',
          description: 'write it',
        },
      }),
      ...record.observe({
        kind: 'tool_result',
        text: 'done',
        payload: { toolUseId: 'toolu_1', isError: false, subagent: false },
      }),
      ...record.observe({
        kind: 'ask',
        text: 'Which language?',
        payload: {
          kind: 'question',
          id: 'q1',
          options: ['Go', 'Rust'],
          state: 'asked',
          answer: '',
          remaining: 2,
          askedBy: 'workflow',
        },
      }),
      ...record.observe({
        kind: 'system',
        text: '+ check passed',
        payload: {
          subtype: 'goal-guard',
          data: {
            check: { command: 'test -f a', exit_code: 0, passed: true, duration_s: 0.1, output_path: '/l' },
          },
          notice: 'ok',
        },
      }),
      ...record.observe({
        kind: 'result',
        text: '',
        payload: {
          sessionId: 's',
          costUsd: 0.5,
          numTurns: 2,
          isError: false,
          subtype: 'success',
          errors: [],
        },
      }),
      record.stepEnded(result('work', { sessionId: 'sess-1' }), 'coordinator'),
    ];
    expect(events.map((event) => event.type)).toEqual([
      'step_start',
      'worker_start',
      'worker_end',
      'question',
      'check',
      'spend',
      'step_end',
    ]);
    for (const event of events) expect(event.output_version).toBe(OUTPUT_VERSION);
    expect(events[1]).toMatchObject({ id: 'toolu_1', agent_type: 'coder', description: 'write it' });
    expect(events[2]).toMatchObject({ id: 'toolu_1', agent_type: 'coder', is_error: false });
    expect(events[3]).toMatchObject({
      id: 'q1',
      state: 'asked',
      options: ['Go', 'Rust'],
      remaining: 2,
      asked_by: 'workflow',
    });
    expect(events[4]).toMatchObject({ command: 'test -f a', passed: true, exit_code: 0 });
    expect(events[5]).toMatchObject({ cost_usd: 0.5, num_turns: 2, run_cost_usd: 0.5 });
    expect(events[6]).toMatchObject({
      step: 'work',
      outcome: 'ok',
      cost_usd: 0.25,
      num_turns: 3,
      session_id: 'sess-1',
    });
  });

  it('leaves prose, tool calls and subagent results to the screen', () => {
    const record = new MachineRecord('go');
    const quiet: FlowerEvent[] = [
      { kind: 'text', text: 'thinking aloud', payload: { subagent: false } },
      { kind: 'tool_call', text: 'ls', tool: 'Bash', payload: { id: 't', input: {}, subagent: false } },
      { kind: 'tool_result', text: 'x', payload: { toolUseId: 'unknown', isError: false, subagent: false } },
      { kind: 'system', text: 'init', payload: { subtype: 'init', data: {} } },
    ];
    for (const event of quiet) expect(record.observe(event)).toEqual([]);
  });

  it('records a ruling on the judge row and a rejection on the work row, as report names the outcomes', () => {
    const record = new MachineRecord('go');
    const work = result('work', { sessionId: 'sess-work' });
    const judge = result('work:verdict#1', { sessionId: 'sess-judge' });
    record.stepEnded(work, 'coordinator');
    record.stepEnded(judge, 'judge');
    const ruling = record.annotated(judge, {
      verdict: 'not yet',
      reason: 'the tests fail',
      not_passed: ['tests pass'],
      round: 1,
      rounds: 3,
      checks: [],
    });
    const rejection = record.annotated(work, { rejected: 'the tests fail', missing: ['tests pass'] });
    expect(ruling).toEqual([
      expect.objectContaining({
        type: 'verdict',
        step: 'work:verdict#1',
        verdict: 'not yet',
        reason: 'the tests fail',
        not_passed: ['tests pass'],
        round: 1,
        rounds: 3,
      }),
    ]);
    expect(rejection).toEqual([
      expect.objectContaining({ type: 'step_rejected', step: 'work', missing: ['tests pass'] }),
    ]);
    const document = record.document({
      outcome: 'stopped',
      reason: 'no rounds left',
      runCostUsd: 0.5,
      taskCostUsd: 1.25,
      ...location,
      manifest: '/proj/runs/manifest.json',
      sessionId: 'sess-work',
      sessions: { work: 'sess-work' },
    });
    expect(document).toMatchObject({
      type: 'result',
      output_version: OUTPUT_VERSION,
      command: 'go',
      outcome: 'stopped',
      reason: 'no rounds left',
      verdict: { verdict: 'not yet', not_passed: ['tests pass'] },
      spend: { run_cost_usd: 0.5, task_cost_usd: 1.25 },
      session_id: 'sess-work',
      sessions: { work: 'sess-work' },
      workspace: '/proj',
      run_dir: '/proj/runs',
    });
    const steps = document.steps as Array<Record<string, unknown>>;
    expect(steps.map((step) => [step.step, step.outcome])).toEqual([
      ['work', 'rejected'],
      ['work:verdict#1', 'verdict'],
    ]);
    expect(steps[0]).toMatchObject({ rejected: 'the tests fail', missing: ['tests pass'] });
  });

  it('falls back to the last agent run for the session id when the command knows none', () => {
    const record = new MachineRecord('run');
    record.stepEnded(result('greet', { sessionId: 'sess-greet' }), 'greeter');
    const document = record.document({
      outcome: 'ok',
      reason: null,
      runCostUsd: 0,
      taskCostUsd: null,
      ...location,
      manifest: null,
      sessionId: null,
      sessions: {},
    });
    expect(document.session_id).toBe('sess-greet');
  });

  it('calls a step that failed failed, with its error', () => {
    const record = new MachineRecord('once');
    const event = record.stepEnded(result('ad-hoc', { ok: false, error: 'API Error: 500' }), 'ad-hoc');
    expect(event).toMatchObject({ type: 'step_end', outcome: 'failed', ok: false, error: 'API Error: 500' });
  });
});

describe('MachineOutput', () => {
  it('puts the human screen on standard error beside JSON, and offers no dialog there', () => {
    const stdout = { isTTY: true, write: () => true };
    const stderr = { isTTY: true, write: () => true };
    const streams = { stdin: { isTTY: true }, stdout, stderr };
    const text = new MachineOutput('text', 'go', location, streams);
    expect(text.screen).toBe(stdout);
    expect(text.interactive).toBe(true);
    for (const format of ['json', 'stream-json'] as const) {
      const machine = new MachineOutput(format, 'go', location, streams);
      expect(machine.screen).toBe(stderr);
      expect(machine.dialogs).toBe(false);
      expect(machine.interactive).toBe(false);
    }
  });

  it('writes nothing at all in text mode', async () => {
    const { output, lines } = collecting('text');
    output.emit([new MachineRecord('go').stepStarted('work', 'coordinator', undefined)]);
    await withDocument(output, async () => undefined);
    expect(lines).toEqual([]);
  });

  it('json: only the document, once, with the outcome the command ended with', async () => {
    const { output, lines, parsed } = collecting('json');
    output.emit([new MachineRecord('go').stepStarted('work', 'coordinator', undefined)]);
    await withDocument(output, async () => undefined);
    output.finish(new Error('again'));
    expect(lines).toHaveLength(1);
    expect(lines[0]!.endsWith('\n')).toBe(true);
    expect(parsed()[0]).toMatchObject({ type: 'result', outcome: 'ok', reason: null });
  });

  it('stream-json: one line per event, the document last; a failure still gets its document', async () => {
    const { output, lines, parsed } = collecting('stream-json');
    output.emit([new MachineRecord('go').stepStarted('work', 'coordinator', undefined)]);
    await expect(
      withDocument(output, async () => {
        throw new Error('stopped at step work');
      }),
    ).rejects.toThrow('stopped at step work');
    expect(lines.every((line) => line.endsWith('\n') && !line.slice(0, -1).includes('\n'))).toBe(true);
    expect(parsed().map((event) => event.type)).toEqual(['step_start', 'result']);
    expect(parsed()[1]).toMatchObject({ outcome: 'failed', reason: 'stopped at step work' });
  });

  it('tells a deliberate stop, an interruption and a usage error from a failure', async () => {
    const stop = collecting('json');
    stop.output.note({ stopped: 'the budget is spent' });
    stop.output.finish(new Error('the budget is spent'));
    expect(stop.parsed()[0]).toMatchObject({ outcome: 'stopped' });
    const interrupted = collecting('json');
    interrupted.output.finish(new InterruptedError('interrupted'));
    expect(interrupted.parsed()[0]).toMatchObject({ outcome: 'interrupted' });
    const usage = collecting('json');
    usage.output.finish(new UsageError('FLOWER_NETWORK=bad: …'));
    expect(usage.parsed()[0]).toMatchObject({ outcome: 'usage' });
  });

  it('masks a secret anywhere in an event or the document, and escapes controls', () => {
    const { output, lines, parsed } = collecting('stream-json');
    output.emit(output.record.observe({ kind: 'error', text: `leaked ${KEY}\x1b]0;title\x07`, payload: {} }));
    output.finish(new Error(`failed with ${KEY}`));
    expect(lines.join('')).not.toContain(KEY);
    expect(lines.join('')).not.toContain('\x1b');
    expect(parsed()[0]!.text).toMatch(/^leaked sk-a\*\*\*/);
    // Escaped in the line, the control is still the model's character for a JSON reader.
    expect(parsed()[0]!.text).toContain('\x1b]0;title');
    expect(parsed()[1]!.reason).toMatch(/^failed with sk-a\*\*\*/);
  });

  it('streams each run of the wrapped runner and what its gate records, keeping the runner books', async () => {
    const { output, parsed } = collecting('stream-json');
    const annotated: unknown[] = [];
    const judge = result('work:verdict#1', { sessionId: 'sess-judge' });
    const inner: StepRunner = {
      run: async () => judge,
      runDir: '/proj/runs',
      annotate: (target, fields) => {
        annotated.push(fields);
        target.annotations = { ...target.annotations, ...fields };
      },
    };
    const runner = output.observingRunner(inner);
    expect(runner.runDir).toBe('/proj/runs');
    const ran = await runner.run({ name: 'judge', role: 'judge', instructions: '' } as never, 'rule', {
      stepName: 'work:verdict#1',
    });
    runner.annotate?.(ran, { verdict: 'achieved', reason: 'done', not_passed: [], round: 1, rounds: 3 });
    expect(annotated).toHaveLength(1);
    expect(parsed().map((event) => [event.type, event.step])).toEqual([
      ['step_start', 'work:verdict#1'],
      ['step_end', 'work:verdict#1'],
      ['verdict', 'work:verdict#1'],
    ]);
    expect(parsed()[0]).toMatchObject({ role: 'judge' });
  });
});
