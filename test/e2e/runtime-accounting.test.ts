/**
 * The step's books: the binary reports a session's cost as a running total that survives resumes
 * and grows over the several results one query gives with background subagents. A step must be
 * charged only what it added; turns add up; text is main-thread prose only.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentSpec } from '../../src/runtime/agent-spec.js';
import { mock } from '../../src/testing/index.js';
import { eventLog, type Harness, startHarness } from './runtime-harness.js';

const spec: AgentSpec = { name: 'work', instructions: '', allowedTools: ['Read'], permissionMode: 'default' };
const oneTurn = (text: string) => mock.text(text, { usage: { input_tokens: 1_000, output_tokens: 10 } });

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.cleanup();
  harness = undefined;
});

describe('Runtime accounting (real SDK and binary against the mock model)', () => {
  it('charges a step that resumes a session only for its own turns, in this runtime and in a later one', async () => {
    harness = await startHarness([oneTurn('one'), oneTurn('two'), oneTurn('three')]);
    const first = harness.runtime();
    const step1 = await first.run(spec, 'First.');
    const step2 = await first.run(spec, 'Second.', { resume: step1.sessionId! });
    expect(step1.costUsd).toBeGreaterThan(0);
    expect(step2.costUsd).toBeCloseTo(step1.costUsd, 6);
    first.close();
    // A new process knows the session's earlier total only from the stored transcript.
    const later = harness.runtime();
    const step3 = await later.run(spec, 'Third.', { resume: step1.sessionId! });
    expect(step3.costUsd).toBeCloseTo(step1.costUsd, 6);
  });

  it('adds up the several results of one query with a background subagent', async () => {
    harness = await startHarness(
      {
        main: [
          mock.toolUse('Agent', {
            subagent_type: 'coder',
            description: 'write hello',
            prompt: 'write hello.py',
          }),
          mock.text('Dispatched the coder.'),
          mock.text('The coder is done.'),
        ],
        agents: { coder: [mock.text('hello.py written')] },
      },
      {},
    );
    const runtime = harness.runtime();
    const log = eventLog();
    const result = await runtime.run(
      {
        ...spec,
        allowedTools: ['Agent', 'Read'],
        agents: { coder: { description: 'writes code', prompt: 'You write code.' } },
      },
      'Have the coder write hello.py.',
      { onEvent: log.sink },
    );
    const results = log.events.filter((event) => event.kind === 'result');
    expect(results.length).toBe(2);
    expect(result.ok).toBe(true);
    expect(result.numTurns).toBe(results.reduce((sum, event) => sum + event.payload.numTurns, 0));
    const last = results[results.length - 1]!;
    if (last.kind !== 'result') throw new Error('unreachable');
    // Charged once: the final running total, split over the two results.
    expect(result.costUsd).toBeCloseTo(last.payload.sessionCostUsd ?? Number.NaN, 6);
    expect(
      results.reduce((sum, event) => sum + (event.kind === 'result' ? event.payload.costUsd : 0), 0),
    ).toBeCloseTo(result.costUsd, 6);
    expect(result.text).toContain('The coder is done.');
    expect(result.text).not.toContain('hello.py written');
  });
});
