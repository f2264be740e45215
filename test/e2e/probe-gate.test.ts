/**
 * Issue 9: the start-up credential probe runs off a terminal too (CI learns of a rotated key in
 * seconds, before any work), asks with the run's own model, and `FLOWER_NO_PROBE` still skips it.
 * The built `flower go` with piped stdio against the mock model.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mock, type RecordedRequest } from '../../src/testing/index.js';
import { cleanUp, startMock } from '../support/scratch.js';
import { mockedEnv, runFlower, tempDir } from './cli-harness.js';

afterEach(cleanUp);

const GO = ['--clarify-only', '--timeout', '0', 'count the words'];

/** mockedEnv with the probe switched back on, as a user's CI would have it. */
function probingEnv(model: { url: string }, extra: Record<string, string> = {}): Record<string, string> {
  const env = mockedEnv(model, extra);
  delete env.FLOWER_NO_PROBE;
  return env;
}

describe('the start-up probe off a terminal', () => {
  it('ends the command on a refused key before any work, with one line naming the key', async () => {
    const model = await startMock({ main: [mock.text('never reached')] }, { requireApiKey: 'the-right-key' });
    const started = Date.now();
    const run = await runFlower(['-w', tempDir('gate-401'), ...GO], {
      env: probingEnv(model, { ANTHROPIC_API_KEY: 'a-rotated-key' }),
    });
    expect(run.status).toBe(1);
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(run.stderr).toMatch(
      // The key is exported, so `flower setup` alone could not fix it (issue 21, Medium 10): the line
      // says the shell wins and how to undo that before it sends the user to setup.
      /^flower: The credential was refused \(ANTHROPIC_API_KEY, set in the shell environment\): HTTP 401 .*which wins over what `flower setup` saves: .*unset ANTHROPIC_API_KEY.*then run `flower setup`/,
    );
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(model.mainRequests()).toHaveLength(0);
    expect(model.requests).toHaveLength(1);
  });

  it('names the model and its .env line when the endpoint does not serve the run’s model', async () => {
    const model = await startMock({
      main: [mock.text('never reached')],
      side: [(request: RecordedRequest) => mock.error(404, { message: `model: ${request.body?.model}` })],
    });
    const cwd = tempDir('gate-model');
    writeFileSync(join(cwd, '.env'), 'ANTHROPIC_MODEL=claude-nope\n');
    const run = await runFlower(['-w', 'ws', ...GO], { cwd, env: probingEnv(model) });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(
      `flower: The endpoint does not serve the model claude-nope (ANTHROPIC_MODEL, set in ${join(cwd, '.env')}:1)`,
    );
    expect(model.mainRequests()).toHaveLength(0);
  });

  it('is still skipped with FLOWER_NO_PROBE (the run itself then stops at the first refusal)', async () => {
    const model = await startMock({ main: [mock.text('never reached')] }, { requireApiKey: 'the-right-key' });
    const run = await runFlower(['-w', tempDir('gate-skip'), ...GO], {
      env: mockedEnv(model, { ANTHROPIC_API_KEY: 'a-rotated-key' }),
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('flower setup');
    expect(model.sideRequests()).toHaveLength(0);
    expect(model.mainRequests().length).toBeGreaterThan(0);
  });
});
