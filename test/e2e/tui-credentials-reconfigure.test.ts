/**
 * The credential gate's second half on a real terminal: the start-up probe is refused (the mock
 * endpoint answers 401 to the configured key), flower says so and opens the setup dialog, the new
 * key is saved and probed again, and the run starts with it. Abandoning that dialog ends the
 * command with one line and leaves the user .env unwritten.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RecordedRequest } from '../../src/testing/recording.js';
import { type MockModel, startMockModel } from '../../src/testing/server.js';
import { mockedEnv, PtySession, runFlower, tempDir } from './cli-harness.js';

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

/**
 * A terminal session whose key (exported, as mockedEnv gives it) the endpoint refuses, with the
 * probe switched on; `saved`: the user .env `flower setup` wrote earlier.
 */
function startRefused(model: MockModel, saved?: string): { pty: PtySession; envFile: string } {
  const env = mockedEnv(model);
  expect(env.ANTHROPIC_API_KEY).toBe(REFUSED_KEY);
  delete env.FLOWER_NO_PROBE;
  if (saved !== undefined) {
    mkdirSync(join(env.XDG_CONFIG_HOME!, 'flower'), { recursive: true });
    writeFileSync(join(env.XDG_CONFIG_HOME!, 'flower', '.env'), saved, { mode: 0o600 });
  }
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

      // The refused key is exported: said before the first question, and again after saving, with
      // what keeps it from winning at the next start (issue 21: otherwise the dialog opens every run).
      expect(pty.screen).toContain(
        '! ANTHROPIC_API_KEY is exported in your shell (test***(8 chars)), which wins over this file: ' +
          'a key entered here is used for this run',
      );
      expect(pty.screen).toContain(
        '! This run uses the key saved here, but ANTHROPIC_API_KEY is exported in your shell ' +
          '(test***(8 chars)) and wins again at the next start: to use the saved one from then on, ' +
          'run `unset ANTHROPIC_API_KEY` and remove the export from your shell profile.',
      );

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
        // The refused key is exported, which `flower setup` cannot override: the fix is in the shell.
        expect(reasons[0]).toContain(
          'ANTHROPIC_API_KEY is exported in your shell (test***(8 chars)), which wins over what `flower setup` saves',
        );
        expect(reasons[0]).toContain('run `unset ANTHROPIC_API_KEY`');
        expect(after).not.toMatch(/\n\s+at /);
        expect(pty.screen).not.toContain('== clarify');

        expect(existsSync(envFile)).toBe(false);
        expect(model.requests.filter(isProbe)).toHaveLength(1);
        expect(model.mainRequests()).toHaveLength(0);
      });
    },
    60_000,
  );

  it('with the right key saved and a refused one exported, Enter runs with the saved key and says how to stop the loop', async () => {
    await withMock(async (model) => {
      const { pty, envFile } = startRefused(model, `ANTHROPIC_API_KEY=${ACCEPTED_KEY}\n`);

      let at = await pty.waitFor(REFUSAL);
      at = await pty.waitFor(
        'ANTHROPIC_API_KEY is exported in your shell (test***(8 chars)), which wins over this file',
        at,
      );
      // Enter at every question: the key the file holds is kept, and chosen for this run.
      at = await pty.answerSetup('', '', at);
      at = await pty.waitFor('+ Saved', at);
      at = await pty.waitFor('wins again at the next start', at);
      await pty.waitFor('== clarify', at);
      expect(await pty.exited()).toBe(0);
      expect(pty.screen.split(REFUSAL)).toHaveLength(2);
      // The hint does not claim the saved key is in force: Enter chooses it for this run.
      expect(pty.screen).toContain('(Enter = use sk-a***(25 chars) from the file for this run)');
      expect(readFileSync(envFile, 'utf8')).toContain(`ANTHROPIC_API_KEY=${ACCEPTED_KEY}`);

      const probes = model.requests.filter(isProbe);
      expect(probes.map((probe) => probe.headers['x-api-key'])).toEqual([REFUSED_KEY, ACCEPTED_KEY]);
      expect(model.mainRequests()).toHaveLength(1);
      expect(model.mainRequests()[0]!.headers['x-api-key']).toBe(ACCEPTED_KEY);
    });
  }, 90_000);

  it('off a terminal, a refused exported key is sent to the shell, not to `flower setup`', async () => {
    await withMock(async (model) => {
      const env = mockedEnv(model);
      delete env.FLOWER_NO_PROBE;
      const run = await runFlower(['-w', tempDir('gate-unattended'), '--clarify-only', 'count the words'], {
        env,
      });
      expect(run.status).toBe(1);
      expect(run.stderr).toContain(
        'The credential was refused (ANTHROPIC_API_KEY, set in the shell environment)',
      );
      expect(run.stderr).toContain(
        'ANTHROPIC_API_KEY is exported in your shell (test***(8 chars)), which wins over what `flower setup` saves: ' +
          'put the right key there, or run `unset ANTHROPIC_API_KEY` and remove the export from your shell profile; then run `flower setup`.',
      );
      expect(model.mainRequests()).toHaveLength(0);
    });
  }, 60_000);

  it('when the run itself is refused (no start-up probe), the dialog says the exported key wins and how to stop it', async () => {
    await withMock(async (model) => {
      const env = mockedEnv(model);
      expect(env.FLOWER_NO_PROBE).toBe('1');
      const pty = PtySession.flower(
        ['-w', tempDir('run-refused'), '--clarify-only', '--timeout', '0', 'count the words'],
        env,
      );
      let at = await pty.waitFor('this looks like a credential problem');
      at = await pty.waitFor(
        '! ANTHROPIC_API_KEY is exported in your shell (test***(8 chars)), which wins over this file: ' +
          'a key saved here is used only after you run `unset ANTHROPIC_API_KEY` and remove the export from your shell profile.',
        at,
      );
      at = await pty.answerSetup(ACCEPTED_KEY, '', at);
      at = await pty.waitFor('+ Saved', at);
      await pty.waitFor(
        '! ANTHROPIC_API_KEY is exported in your shell (test***(8 chars)), which is used instead of the key saved here',
        at,
      );
      expect(await pty.exited()).toBe(1);
      expect(pty.screen).not.toContain(ACCEPTED_KEY);
    });
  }, 90_000);
});
