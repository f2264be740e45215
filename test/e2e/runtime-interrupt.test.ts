/**
 * A human interrupt: the step stops at the next message boundary and continues in the same
 * session with the human's words and the note that interrupted tool calls are normal; it does not
 * count as an attempt. Also the once-per-runtime warning when the endpoint serves another model.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentSpec } from '../../src/runtime/agent-spec.js';
import { INTERRUPT_NOTE } from '../../src/runtime/runtime.js';
import { lastUserText, mock } from '../../src/testing/index.js';
import { eventLog, type Harness, startHarness } from './runtime-harness.js';

const spec: AgentSpec = {
  name: 'work',
  instructions: '',
  allowedTools: ['Read', 'Glob', 'Grep'],
  permissionMode: 'default',
};

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.cleanup();
  harness = undefined;
});

describe('Runtime interrupt and model warning (real SDK and binary against the mock model)', () => {
  it('resumes the same session with the human words after an interrupt, without spending an attempt', async () => {
    harness = await startHarness({
      main: [],
      // Keep working slowly until the human's words arrive, then follow them.
      fallback: (request) =>
        lastUserText(request).includes('interrupted you')
          ? mock.text('Switched to tabs as asked.')
          : mock.toolUse('Read', { file_path: 'style.md' }, { delayMs: 300 }),
    });
    const runtime = harness.runtime();
    const log = eventLog();
    const sessions: string[] = [];
    void harness.model
      .waitForRequest(() => true, 60_000)
      .then(() => runtime.interrupt('Use tabs, not spaces.'));
    const result = await runtime.run(spec, 'Reformat the code.', {
      onEvent: log.sink,
      onSession: (id) => sessions.push(id),
    });

    expect(result.ok).toBe(true);
    expect(result.attempts).toBe(1);
    expect(result.resumed).toBe(true);
    expect(result.text).toBe('Switched to tabs as asked.');
    expect(new Set(sessions).size).toBe(1);
    expect(log.texts('retry')).toContain('Interrupted; continuing with your words');
    const main = harness.model.mainRequests();
    const resumed = main[main.length - 1]!;
    expect(lastUserText(resumed)).toContain('Use tabs, not spaces.');
    expect(lastUserText(resumed)).toContain(INTERRUPT_NOTE);
    expect(JSON.stringify(resumed.body?.messages)).toContain('Reformat the code.');
  });

  it('does not wait for a slow reply to finish before acting on an interrupt', async () => {
    harness = await startHarness({
      main: [],
      fallback: (request) =>
        lastUserText(request).includes('interrupted you')
          ? mock.text('Stopped and switched.')
          : mock.text('A very slow answer.', { delayMs: 45_000 }),
    });
    const runtime = harness.runtime();
    void harness.model
      .waitForRequest(() => true, 60_000)
      .then(() => runtime.interrupt('Stop; do the other thing.'));
    const started = Date.now();
    const result = await runtime.run(spec, 'Answer slowly.');
    expect(result.ok).toBe(true);
    expect(result.attempts).toBe(1);
    expect(result.text).toBe('Stopped and switched.');
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it('warns once per runtime when the endpoint serves a different model than configured', async () => {
    harness = await startHarness(
      [mock.text('one', { model: 'claude-haiku-9' }), mock.text('two', { model: 'claude-haiku-9' })],
      {
        ANTHROPIC_MODEL: 'claude-opus-9[1m]',
      },
    );
    const runtime = harness.runtime();
    const log = eventLog();
    await runtime.run(spec, 'First.', { onEvent: log.sink });
    await runtime.run(spec, 'Second.', { onEvent: log.sink });
    const warnings = log.events.filter((event) => event.kind === 'error' && event.payload.modelMismatch);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.payload).toMatchObject({ want: 'claude-opus-9[1m]', served: 'claude-haiku-9' });
    expect(warnings[0]?.text).toMatch(/FLOWER_WINDOW|--window/);
    expect(runtime.results.every((result) => result.errors.length === 0)).toBe(true);
  });
});
