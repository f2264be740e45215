/**
 * Issue 14, bad input at start: with a store URL that cannot be used (malformed, a password the
 * server refuses, a database that does not exist, a port nothing listens on) `flower once` and
 * `flower go` stop with one line naming what to fix and pointing at `flower doctor`, exit 1, and
 * write nothing: no run directory, no SQLite fallback, no request to the model. And the working
 * case: `--store` wins over FLOWER_STORE_URL, and a run's transcript and books reach PostgreSQL.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mock } from '../../src/testing/index.js';
import { NEEDS_REAL_SERVER, realServerUrl } from '../support/postgres.js';
import { cleanUp, startMock } from '../support/scratch.js';
import { mockedEnv, runFlower, tempDir } from './cli-harness.js';
import {
  deadPort,
  dropSchemas,
  passwordRefusingServer,
  postgres,
  sharedSchema,
} from './shared-store-harness.js';

afterEach(async () => {
  await dropSchemas();
  await cleanUp();
});

const ONE_LINE = /^flower: [^\n]+\n$/;

async function refused(url: string, command: 'once' | 'go') {
  const model = await startMock([mock.text('never asked')]);
  const workspace = tempDir('store-bad');
  const args =
    command === 'once' ? ['once', 'Say hi.', '-w', workspace] : ['-w', workspace, '--timeout', '0', 'say hi'];
  const run = await runFlower(args, { env: mockedEnv(model, { FLOWER_STORE_URL: url }) });
  expect(run.status, run.stderr).toBe(1);
  expect(run.stderr).toMatch(ONE_LINE);
  expect(run.stderr).toContain('flower doctor');
  expect(readdirSync(workspace)).toEqual([]);
  expect(existsSync(join(workspace, 'runs'))).toBe(false);
  expect(model.requests).toHaveLength(0);
  return run.stderr;
}

describe('a store URL that cannot be used stops the start with one line', () => {
  it.each(['once', 'go'] as const)('malformed URL (%s)', async (command) => {
    const line = await refused('postgres://flower:p@ss#word@127.0.0.1/test', command);
    expect(line).toContain('contains "#"');
    expect(line).toContain('postgres://flower:***@');
  });

  it('a password the server refuses', async () => {
    const server = await passwordRefusingServer();
    try {
      const line = await refused(
        `postgres://flower_probe:wrong-secret@127.0.0.1:${server.port}/test`,
        'once',
      );
      expect(line).toContain('rejected the password for user "flower_probe"');
      expect(line).not.toContain('wrong-secret');
    } finally {
      await server.close();
    }
  });

  // PGlite serves one database under every name: only a real server can lack one.
  it('a database that does not exist', async (context) => {
    context.skip(realServerUrl === undefined, NEEDS_REAL_SERVER);
    const url = new URL(postgres.baseUrl);
    url.pathname = '/flower_no_such_database';
    const line = await refused(url.toString(), 'once');
    expect(line).toContain('database "flower_no_such_database" does not exist');
  });

  it('a port nothing listens on', async () => {
    const port = await deadPort();
    const line = await refused(`postgres://postgres@127.0.0.1:${port}/test`, 'go');
    expect(line).toContain(`nothing accepts connections at 127.0.0.1:${port}`);
  });

  it('--store wins over FLOWER_STORE_URL', async () => {
    const schema = await sharedSchema('flag');
    const model = await startMock([mock.text('Stored in PostgreSQL.')]);
    const workspace = tempDir('store-flag');
    const port = await deadPort();
    const run = await runFlower(['once', 'Say it.', '-w', workspace, '--store', schema.url], {
      env: mockedEnv(model, { FLOWER_STORE_URL: `postgres://postgres@127.0.0.1:${port}/test` }),
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('Stored in PostgreSQL.');
    const rows = await schema.query<{ kind: string; key: string }>('SELECT kind, key FROM task_records');
    expect(rows.filter((row) => row.kind === 'manifest-run')).toHaveLength(1);
    const [{ entries }] = (await schema.query<{ entries: string }>(
      'SELECT count(*) AS entries FROM session_entries',
    )) as [{ entries: string }];
    expect(Number(entries)).toBeGreaterThan(0);
    // Nothing left to send, and the lease is given back.
    expect(existsSync(join(workspace, 'runs', 'shared-outbox.jsonl'))).toBe(false);
    expect(await schema.query('SELECT * FROM task_leases WHERE NOT released')).toHaveLength(0);
  });
});
