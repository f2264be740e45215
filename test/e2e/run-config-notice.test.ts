/**
 * A run mentions the configuration mistakes `flower doctor` shows (issue 21): one line before it
 * starts, naming how many and where the first is, and pointing at `flower doctor`; never a value.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockModel, startMockModel } from '../../src/testing/server.js';
import { mockedEnv, runFlower, tempDir } from './cli-harness.js';

const BRIEF = '## Goal\nx\n\n## Acceptance\n- x\n\n## Boundaries\n- x\n\n## Unknowns & assumptions\n- none';

let model: MockModel;
beforeAll(async () => {
  model = await startMockModel({ main: [{ text: BRIEF }, { text: BRIEF }, { text: 'Done.' }] });
});
afterAll(async () => {
  await model.close();
});

describe('a run with mistakes in its .env', () => {
  it('says how many and where the first is, in one line pointing at flower doctor, then runs', async () => {
    const cwd = tempDir('notice-cwd');
    writeFileSync(join(cwd, '.env'), 'anthropic_auth_token=tok-secret-value-123\nFLOWER_WINDOW=200k\n');
    const run = await runFlower(
      ['-w', tempDir('notice-ws'), '--clarify-only', '--timeout', '0', 'count the words'],
      { cwd, env: mockedEnv(model) },
    );
    expect(run.status).toBe(0);
    const lines = `${run.stdout}${run.stderr}`.split('\n').filter((line) => line.includes('flower doctor'));
    expect(lines).toEqual([
      `! the configuration has 2 likely mistakes (first at ${join(cwd, '.env')}:1); \`flower doctor\` shows what and how to fix it`,
    ]);
    expect(run.stdout + run.stderr).not.toContain('tok-secret-value-123');
    expect(model.mainRequests().length).toBeGreaterThan(0);
  }, 90_000);

  it('says nothing when the configuration has no mistakes', async () => {
    const cwd = tempDir('notice-clean');
    writeFileSync(join(cwd, '.env'), 'FLOWER_WINDOW=200000\n');
    const run = await runFlower(
      ['-w', tempDir('notice-ws'), '--clarify-only', '--timeout', '0', 'count the words'],
      { cwd, env: mockedEnv(model) },
    );
    expect(run.status).toBe(0);
    expect(run.stdout + run.stderr).not.toContain('flower doctor');
  }, 90_000);

  it('once says the same before its agent starts', async () => {
    const cwd = tempDir('notice-once');
    writeFileSync(join(cwd, '.env'), 'FLOWER_WINDOW=200k\n');
    const run = await runFlower(['-w', tempDir('notice-ws'), 'once', 'list the TODOs'], {
      cwd,
      env: mockedEnv(model),
    });
    expect(run.status).toBe(0);
    const lines = `${run.stdout}${run.stderr}`.split('\n').filter((line) => line.includes('flower doctor'));
    expect(lines).toEqual([
      `! the configuration has a likely mistake (at ${join(cwd, '.env')}:1); \`flower doctor\` shows what and how to fix it`,
    ]);
  }, 90_000);
});
