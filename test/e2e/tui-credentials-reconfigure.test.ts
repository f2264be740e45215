/**
 * The credential gate's second half on a real terminal: the start-up probe is refused (the mock
 * endpoint answers 401 to the configured key), flower says so and opens the setup dialog, the new
 * key is saved and probed again, and the run starts with it. Abandoning that dialog ends the
 * command with one line and leaves the user .env unwritten.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RecordedRequest } from '../../src/testing/recording.js';
import { type MockModel, startMockModel } from '../../src/testing/server.js';
import { mockedEnv, PtySession, tempDir } from './cli-harness.js';

const BRIEF = '## Goal\nx\n\n## Acceptance\n- x\n\n## Boundaries\n- x\n\n## Unknowns & assumptions\n- none';
/** The only key the mock endpoint accepts; the child starts with mockedEnv's `test-key`. */
const ACCEPTED_KEY = 'sk-ant-the-key-that-works';
const REFUSED_KEY = 'test-key';
const REFUSAL = '! The credential was refused';

/** The probe is the one request asking for 16 tokens with the single message "hi". */
function isProbe(request: RecordedRequest): boolean {
  const messages = request.body?.messages ?? [];
  return request.body?.max_tokens === 16 && messages.length === 1 && messages[0]?.content === 'hi';
}

async function withMock(test: (model: MockModel) => Promise<void>): Promise<void> {
  const model = await startMockModel({ main: [{ text: BRIEF }] }, { requireApiKey: ACCEPTED_KEY });
  try {
    await test(model);
  } finally {
    await model.close();
  }
}

/** A terminal session whose key the endpoint refuses, with the probe switched on. */
function startRefused(model: MockModel): { pty: PtySession; envFile: string } {
  const env = mockedEnv(model);
  expect(env.ANTHROPIC_API_KEY).toBe(REFUSED_KEY);
  delete env.FLOWER_NO_PROBE;
  const pty = PtySession.flower(
    ['-w', tempDir('gate-refused'), '--clarify-only', '--timeout', '0', 'count the words'],
    env,
  );
  return { pty, envFile: join(env.XDG_CONFIG_HOME!, 'flower', '.env') };
}

describe('the credential gate when the probe is refused', () => {
  it('says so, reconfigures through the dialog, probes the new key and starts the run with it', async () => {
    await withMock(async (model) => {
      const { pty, envFile } = startRefused(model);

      let at = await pty.waitFor(REFUSAL);
      at = await pty.waitFor('HTTP 401', at);
      at = await pty.waitFor('fix it here, then the run starts', at);
      at = await pty.waitFor('1. Your API key or gateway token', at);
      pty.type(`${ACCEPTED_KEY}\r`);
      at = await pty.waitFor('2. Gateway URL', at);
      // Enter: the gateway from the environment stays in force; only the key changes.
      pty.type('\r');
      at = await pty.waitFor('3. Model name', at);
      pty.type('\r');
      at = await pty.waitFor('4. Context window', at);
      pty.type('\r');
      at = await pty.waitFor('+ Saved', at);
      await pty.waitFor('== clarify', at);
      expect(await pty.exited()).toBe(0);

      // Refused once only: the second probe passed, so the dialog did not open again.
      expect(pty.screen.split(REFUSAL)).toHaveLength(2);
      expect(pty.screen).not.toContain(ACCEPTED_KEY);

      const saved = readFileSync(envFile, 'utf8');
      expect(saved).toContain(`ANTHROPIC_API_KEY=${ACCEPTED_KEY}`);
      expect(saved).not.toContain(REFUSED_KEY);
      expect(statSync(envFile).mode & 0o777).toBe(0o600);

      const probes = model.requests.filter(isProbe);
      expect(probes.map((probe) => probe.headers['x-api-key'])).toEqual([REFUSED_KEY, ACCEPTED_KEY]);
      expect(probes.map((probe) => probe.outcome.kind)).toEqual(['error', 'reply']);

      expect(model.mainRequests()).toHaveLength(1);
      const afterSecondProbe = model.requests.slice(probes[1]!.index + 1);
      expect(afterSecondProbe.length).toBeGreaterThan(0);
      for (const request of afterSecondProbe) {
        expect(request.headers['x-api-key']).toBe(ACCEPTED_KEY);
        expect(request.outcome.kind).not.toBe('error');
      }
    });
  }, 90_000);

  it.each([
    ['Ctrl-C', '\u0003'],
    ['Ctrl-D', '\u0004'],
  ])(
    'ends with one line and writes nothing when the dialog is left with %s',
    async (_name, key) => {
      await withMock(async (model) => {
        const { pty, envFile } = startRefused(model);

        let at = await pty.waitFor(REFUSAL);
        at = await pty.waitFor('1. Your API key or gateway token', at);
        pty.type(key);
        // The CLI's ordinary failure code; Ctrl-C here is a "no" to the dialog, not an interrupted run.
        expect(await pty.exited()).toBe(1);

        // One line of its own that says what to do, and no stack trace.
        const after = pty.screen.slice(at);
        const reasons = after.split(/\r?\n/).filter((line) => line.startsWith('flower: '));
        expect(reasons).toHaveLength(1);
        expect(reasons[0]).toContain('did not pass the check');
        expect(reasons[0]).toContain('Run `flower setup`');
        expect(after).not.toMatch(/\n\s+at /);
        expect(pty.screen).not.toContain('== clarify');

        expect(existsSync(envFile)).toBe(false);
        expect(model.requests.filter(isProbe)).toHaveLength(1);
        expect(model.mainRequests()).toHaveLength(0);
      });
    },
    60_000,
  );
});
