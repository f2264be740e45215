/**
 * Issue 21, High 1: a FLOWER_STORE_URL that is a mistyped URL (`postgres//127.0.0.1/x`, the ":"
 * lost; `postgresql:/host/x`, a "/" lost) was read as a SQLite path: a whole paid task ran on a
 * file `postgres/127.0.0.1/x` with exit 0, and doctor said "Warnings: none". Through the built
 * CLI: every command that opens the store refuses it with one line naming the value (password
 * masked) and the URL to write, exit 1, no run directory, no SQLite file, no request to the model;
 * doctor reports it as its store error, exit 1. A genuine SQLite path is still accepted.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mock } from '../../src/testing/index.js';
import { cleanUp, startMock, tempDir } from '../support/scratch.js';
import { mockedEnv, runFlower } from './cli-harness.js';

afterEach(cleanUp);

const SECRET = 'hunter2-issue21';
const ONE_LINE = /^flower: [^\n]+\n$/;

/** A mistyped URL, how it is shown (password masked) and the URL the message says to write. */
const CASES = [
  {
    url: `postgres//flower:${SECRET}@127.0.0.1/x`,
    shown: 'postgres//flower:***@127.0.0.1/x',
    fix: 'write postgres://flower:***@127.0.0.1/x',
  },
  { url: 'postgresql:/host/x', shown: 'postgresql:/host/x', fix: 'write postgresql://host/x' },
] as const;

/** Nothing was created: not the run directory, not a SQLite file named after the URL. */
function expectUntouched(workspace: string, cwd: string): void {
  expect(readdirSync(workspace)).toEqual([]);
  expect(readdirSync(cwd)).toEqual([]);
  expect(existsSync(join(workspace, 'runs'))).toBe(false);
}

describe('a mistyped store URL is refused, never read as a SQLite path', () => {
  const commands: Record<string, (workspace: string) => string[]> = {
    once: (workspace) => ['once', 'Say hi.', '-w', workspace],
    'go (-v)': (workspace) => ['-v', '-w', workspace, '--timeout', '0', 'say hi'],
    run: (workspace) => ['-w', workspace, 'run', join(workspace, 'flow.ts:main')],
    status: (workspace) => ['-w', workspace, 'status'],
    gc: (workspace) => ['-w', workspace, 'gc'],
  };

  for (const { url, shown, fix } of CASES) {
    for (const [name, args] of Object.entries(commands))
      it(`${name}: ${shown}`, async () => {
        const model = await startMock([mock.text('never asked')]);
        const workspace = tempDir('flower-store-mistyped-');
        const cwd = tempDir('flower-store-mistyped-cwd-');
        const run = await runFlower(args(workspace), {
          cwd,
          env: mockedEnv(model, { FLOWER_STORE_URL: url }),
        });
        expect(run.status, run.stderr).toBe(1);
        // `-v` prints the settings first; the refusal itself is the last line, and the only one.
        const refusal = run.stderr.split('\n').filter((line) => line.startsWith('flower: '));
        expect(refusal, run.stderr).toHaveLength(1);
        if (!args(workspace).includes('-v')) expect(run.stderr).toMatch(ONE_LINE);
        const line = refusal[0] as string;
        expect(line).toContain(`Store URL ${shown} `);
        expect(line).toContain(fix);
        expect(`${run.stdout}${run.stderr}`).not.toContain(SECRET);
        expectUntouched(workspace, cwd);
        expect(model.requests).toHaveLength(0);
      });
  }
});

describe('flower doctor: a mistyped store URL is its store error', () => {
  it.each(CASES)('$shown', async ({ url, shown, fix }) => {
    const model = await startMock([]);
    const cwd = tempDir('flower-store-mistyped-doctor-');
    const run = await runFlower(['doctor'], { cwd, env: mockedEnv(model, { FLOWER_STORE_URL: url }) });
    expect(run.status, run.stdout + run.stderr).toBe(1);
    const store = run.stdout.split('\n').filter((line) => line.startsWith('Store:'));
    expect(store).toHaveLength(1);
    expect(store[0]).toContain(`Store URL ${shown} is not a URL flower can use`);
    expect(store[0]).toContain(fix);
    expect(run.stdout).not.toContain('Store: SQLite');
    expect(run.stderr).toBe('flower: the task store is not usable (see above)\n');
    expect(`${run.stdout}${run.stderr}`).not.toContain(SECRET);
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('a genuine SQLite path is still a SQLite file, exit 0', async () => {
    const model = await startMock([]);
    const cwd = tempDir('flower-store-sqlite-doctor-');
    const run = await runFlower(['doctor'], {
      cwd,
      env: mockedEnv(model, { FLOWER_STORE_URL: 'state/sessions.db' }),
    });
    expect(run.status, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain(`Store: SQLite file ${join(cwd, 'state', 'sessions.db')}`);
  });
});
