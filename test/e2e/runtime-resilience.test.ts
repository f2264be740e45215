/**
 * Acceptance 1 and 2 of the runtime: outages are waited out and the same session resumed;
 * credential errors stop at once; overload and server errors are retried with backoff. Issue 9:
 * an outage shows a live status while it is waited out, but only an endpoint that has answered
 * this task (recorded in the run directory) is waited for at all.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentSpec } from '../../src/runtime/agent-spec.js';
import { defaultResiliencePolicy } from '../../src/runtime/resilience.js';
import { contentText, lastUserText, mock, type RecordedRequest } from '../../src/testing/index.js';
import { eventLog, fastResilience, type Harness, startHarness } from './runtime-harness.js';

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

function historyText(request: RecordedRequest): string {
  return (request.body?.messages ?? []).map((message) => contentText(message.content)).join('\n');
}

describe('Runtime resilience (real SDK and binary against the mock model)', () => {
  it('waits out a dropped stream and refused connections, then resumes the same session', async () => {
    harness = await startHarness([
      mock.toolUse('Read', { file_path: 'notes.txt' }),
      // Cut this reply mid-stream and refuse connections for a while, like a network outage.
      mock.drop({ afterEvents: 3, thenRefuseForMs: 2_500 }),
      mock.text('Finished after the outage.'),
    ]);
    const runtime = harness.runtime();
    const log = eventLog();
    const sessions: string[] = [];
    const result = await runtime.run(spec, 'Read notes.txt and summarise it.', {
      onEvent: log.sink,
      onSession: (id) => sessions.push(id),
    });

    expect(result.ok).toBe(true);
    expect(result.attempts).toBe(2);
    expect(result.resumed).toBe(true);
    expect(result.text).toBe('Finished after the outage.');
    expect(result.text).not.toContain('API Error');
    expect(result.errors.some((error) => error.includes('API Error'))).toBe(true);
    // One session throughout: the failed attempt's session is the one that finished.
    expect(new Set(sessions).size).toBe(1);
    expect(result.sessionId).toBe(sessions[0]);

    const retries = log.texts('retry');
    expect(retries.some((line) => /unreachable; waiting/.test(line))).toBe(true);
    expect(retries.some((line) => /reachable again/.test(line))).toBe(true);
    // The failure notice names its cause, and the wait has a live status after every probe.
    expect(
      retries.some((line) => /^Attempt 1 failed: API Error: Connection refused.*; retrying in/.test(line)),
    ).toBe(true);
    const live = log.events.filter((event) => event.kind === 'retry' && event.payload.offline !== undefined);
    expect(live.length).toBeGreaterThan(0);
    expect(live[0]?.text).toMatch(
      /^endpoint 127\.0\.0\.1:\d+ down since \d\d:\d\d, next probe in \d+ s, gives up at \d\d:\d\d$/,
    );

    const main = harness.model.mainRequests();
    const resumed = main[main.length - 1]!;
    expect(lastUserText(resumed)).toContain(defaultResiliencePolicy.resumePrompt);
    expect(lastUserText(resumed)).not.toMatch(/ECONNRESET|API Error/);
    // The earlier turns are carried over, the synthetic error is not.
    expect(historyText(resumed)).toContain('notes.txt');
    expect(historyText(resumed)).not.toContain('API Error');

    const rows = JSON.parse(readFileSync(join(runtime.runDir, 'manifest.json'), 'utf8')) as Array<
      Record<string, unknown>
    >;
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      step: 'work',
      ok: true,
      attempts: 2,
      resumed: true,
      session_id: result.sessionId,
      run: runtime.runId,
    });
  });

  it('waits out an outage of an endpoint that answered this task in an earlier process', async () => {
    harness = await startHarness([
      mock.text('First run answered.'),
      mock.refuse(2_000),
      mock.text('Answered after the outage.'),
    ]);
    const first = await harness.runtime().run(spec, 'Say something.');
    expect(first.ok).toBe(true);
    const recorded = JSON.parse(readFileSync(join(harness.workspace, 'runs', 'endpoints.json'), 'utf8'));
    expect(Object.keys(recorded)).toEqual([new URL(harness.model.url).host]);

    // A new Runtime knows only what the run directory says.
    const log = eventLog();
    const second = await harness.runtime().run(spec, 'Say more.', { onEvent: log.sink });
    expect(second.ok, second.error ?? '').toBe(true);
    expect(second.attempts).toBe(2);
    expect(second.text).toBe('Answered after the outage.');
    expect(log.texts('retry').some((line) => /reachable again/.test(line))).toBe(true);
  });

  it("a side question's runtime knows what the task knows about the endpoint", async () => {
    harness = await startHarness([mock.text('The task answered.'), mock.refuse(2_000)]);
    expect((await harness.runtime().run(spec, 'Say something.')).ok).toBe(true);
    const aside = harness.runtime({ runDir: 'runs/aside', endpointHistoryDir: 'runs', resilience: false });
    const result = await aside.run(spec, 'A side question.');
    expect(result.ok).toBe(false);
    // An outage of an endpoint that answered: the binary's own words, not "check ANTHROPIC_BASE_URL".
    expect(result.error).toMatch(/ECONNRE(SET|FUSED)|Connection/);
    expect(result.error).not.toContain('nothing listens');
  });

  it('stops at once when an endpoint that never answered this task refuses connections', async () => {
    // Had it waited, the endpoint would have come back after 3 s and the step succeeded.
    harness = await startHarness([mock.refuse(3_000), mock.text('never reached')]);
    const result = await harness.runtime().run(spec, 'Say something.');
    expect(result.ok).toBe(false);
    expect(result.attempts).toBe(1);
    expect(result.error).toBe(
      `nothing listens at ${new URL(harness.model.url).host}; check ANTHROPIC_BASE_URL — flower doctor`,
    );
    expect(harness.model.mainRequests()).toHaveLength(1);
  });

  it('stops at once on a rejected key, with the hint to run flower setup', async () => {
    harness = await startHarness([mock.error(401), mock.text('never reached')]);
    const runtime = harness.runtime();
    const started = Date.now();
    const result = await runtime.run(spec, 'Do something.');
    expect(result.ok).toBe(false);
    expect(result.attempts).toBe(1);
    expect(result.error).toContain('flower setup');
    expect(result.error).toMatch(/invalid api key|401|authentication/i);
    expect(harness.model.mainRequests()).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(30_000);
  });

  it.each([
    [529, 'overloaded'],
    [500, 'internal server error'],
  ])('retries HTTP %i with backoff and resumes', async (status) => {
    harness = await startHarness([mock.error(status), mock.text('Done on the second attempt.')]);
    const runtime = harness.runtime();
    const log = eventLog();
    const result = await runtime.run(spec, 'Do something.', { onEvent: log.sink });
    expect(result.ok).toBe(true);
    expect(result.attempts).toBe(2);
    expect(result.text).toBe('Done on the second attempt.');
    expect(log.events).toContainEqual(
      expect.objectContaining({
        kind: 'retry',
        payload: expect.objectContaining({ source: 'runtime', attempt: 1, reason: 'failure' }),
      }),
    );
    expect(harness.model.mainRequests()).toHaveLength(2);
  });

  it('gives up after the attempt budget and says why', async () => {
    harness = await startHarness([mock.error(529), mock.error(529), mock.error(529)]);
    const runtime = harness.runtime({ resilience: { ...fastResilience, maxAttempts: 3 } });
    const result = await runtime.run(spec, 'Do something.');
    expect(result.ok).toBe(false);
    expect(result.attempts).toBe(3);
    expect(result.error).toMatch(/529|overloaded/i);
  });
});
