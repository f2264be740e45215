/**
 * The credential gate on a real terminal: `flower "do X"` with no credentials anywhere opens the
 * setup dialog, saves what is typed to the user .env, and the run then starts with it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockModel, startMockModel } from '../../src/testing/server.js';
import { mockedEnv, PtySession, tempDir } from './cli-harness.js';

const BRIEF = '## Goal\nx\n\n## Acceptance\n- x\n\n## Boundaries\n- x\n\n## Unknowns & assumptions\n- none';

let model: MockModel;
beforeAll(async () => {
  model = await startMockModel({ main: [{ text: BRIEF }] });
});
afterAll(async () => {
  await model.close();
});

describe('the credential gate', () => {
  it('asks for credentials on a terminal when there are none, saves them, and starts the run', async () => {
    const env = mockedEnv(model);
    // Nothing configured: the token and the endpoint come from the dialog.
    delete env.ANTHROPIC_API_KEY;
    delete env.ANTHROPIC_BASE_URL;
    const workspace = tempDir('gate');
    const pty = PtySession.flower(
      ['-w', workspace, '--clarify-only', '--timeout', '0', 'count the words'],
      env,
    );

    const at = await pty.answerSetup('sk-ant-typed-in-the-dialog', model.url);
    await pty.waitFor('== clarify', at);
    expect(await pty.exited()).toBe(0);

    const saved = readFileSync(join(env.XDG_CONFIG_HOME!, 'flower', '.env'), 'utf8');
    expect(saved).toContain('ANTHROPIC_API_KEY=sk-ant-typed-in-the-dialog');
    expect(saved).toContain(`ANTHROPIC_BASE_URL=${model.url}`);
    expect(model.mainRequests()).toHaveLength(1);
    expect(model.mainRequests()[0]!.headers['x-api-key']).toBe('sk-ant-typed-in-the-dialog');
  }, 90_000);
});
