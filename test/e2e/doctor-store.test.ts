/**
 * `flower doctor` and FLOWER_STORE_URL, as a real process (the built CLI): the URL is shown with
 * its password masked, the store is checked read-only, and a store that cannot work is one line
 * naming what to fix, with exit code 1.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PostgresSessionStore } from '../../src/store/postgres/session-store.js';
import { type MockModel, startMockModel } from '../../src/testing/server.js';
import { closedPort } from '../support/closed-port.js';
import { usePostgres } from '../support/postgres.js';
import { startRefuser, WRONG_PASSWORD } from '../support/postgres-refuser.js';
import { runNode } from './runtime-harness.js';

const bin = join(import.meta.dirname, '..', '..', 'dist', 'cli', 'bin.js');
const SECRET = 'doctor-s3cret';
const postgres = usePostgres();

let root: string;
let project: string;
/** An endpoint that answers on loopback: doctor fails for one that does not (issue 21). */
let endpoint: MockModel;
beforeAll(async () => {
  endpoint = await startMockModel({ side: [] });
});
afterAll(async () => {
  await endpoint.close();
});
const cleanups: Array<() => Promise<void>> = [];

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'flower-doctor-store-'));
  project = join(root, 'project');
  mkdirSync(join(root, 'home'), { recursive: true });
  mkdirSync(project, { recursive: true });
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  rmSync(root, { recursive: true, force: true });
});

async function doctor(env: Record<string, string> = {}, args: string[] = []) {
  const run = await runNode(
    [bin, 'doctor', ...args],
    {
      PATH: process.env.PATH ?? '',
      HOME: join(root, 'home'),
      FLOWER_NO_UPDATE: '1',
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: endpoint.url,
      ...env,
    },
    { cwd: project },
  );
  return { status: run.code, stdout: run.stdout, stderr: run.stderr };
}

/** The URL of a fresh schema with a password added (the test servers ignore it). */
async function storeUrl(): Promise<{ url: string; schema: string }> {
  const fresh = await postgres.freshSchema('doctor');
  cleanups.push(fresh.drop);
  const url = new URL(fresh.url);
  url.password = SECRET;
  return { url: url.toString(), schema: fresh.schema };
}

const storeLine = (stdout: string) => stdout.split('\n').find((line) => line.startsWith('Store:'));

describe('flower doctor: FLOWER_STORE_URL', () => {
  it('unset: task state stays in SQLite under runs/', async () => {
    const run = await doctor();
    expect(storeLine(run.stdout)).toBe(
      "Store: SQLite in each workspace's runs/ (FLOWER_STORE_URL is not set)",
    );
    expect(run.status).toBe(0);
  });

  it('a server that answers: masked everywhere, checked without creating anything', async () => {
    const { url, schema } = await storeUrl();
    const run = await doctor({ FLOWER_STORE_URL: url });
    expect(run.status).toBe(0);
    expect(`${run.stdout}${run.stderr}`).not.toContain(SECRET);
    expect(run.stdout).toMatch(
      /FLOWER_STORE_URL +postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/\w+\?schema=\w+ +from process environment/,
    );
    expect(storeLine(run.stdout)).toMatch(
      new RegExp(
        `^Store: PostgreSQL \\S+.* at 127\\.0\\.0\\.1:\\d+/\\w+; schema "${schema}" will be created on first use$`,
      ),
    );
    const created = await postgres.admin('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    expect(created.rowCount).toBe(0);
  });

  it('--store is what is checked, over FLOWER_STORE_URL, its password masked', async () => {
    const { url, schema } = await storeUrl();
    const run = await doctor({ FLOWER_STORE_URL: 'postgres://nobody@127.0.0.1:9/none' }, ['--store', url]);
    expect(run.status).toBe(0);
    expect(`${run.stdout}${run.stderr}`).not.toContain(SECRET);
    expect(storeLine(run.stdout)).toMatch(
      new RegExp(
        `^Store: --store postgres://postgres:\\*\\*\\*@127\\.0\\.0\\.1:\\d+/\\w+\\?schema=${schema}: PostgreSQL \\S+.* schema "${schema}" will be created on first use$`,
      ),
    );
  });

  it('a schema in use: shows its version', async () => {
    const { url, schema } = await storeUrl();
    const store = new PostgresSessionStore(url);
    await store.open();
    await store.close();
    const run = await doctor({ FLOWER_STORE_URL: url });
    expect(storeLine(run.stdout)).toMatch(
      new RegExp(`, schema "${schema}" \\(sessions v2, task_records v3, tombstones v1\\)$`),
    );
    expect(run.status).toBe(0);
  });

  it('a schema from a newer flower: upgrade, exit 1', async () => {
    const { url, schema } = await storeUrl();
    const store = new PostgresSessionStore(url);
    await store.open();
    await store.close();
    await postgres.admin(`UPDATE "${schema}".schema_versions SET version = 9 WHERE family = 'sessions'`);
    const run = await doctor({ FLOWER_STORE_URL: url });
    expect(storeLine(run.stdout)).toContain(
      'sessions v9 is newer than this flower (v2), task_records v3, tombstones v1: upgrade flower on this machine',
    );
    expect(run.status).toBe(1);
  });

  it('a server that is down: what to fix, exit 1, no stack trace', async () => {
    const port = await closedPort();
    const run = await doctor({ FLOWER_STORE_URL: `postgres://flower:${SECRET}@127.0.0.1:${port}/tasks` });
    expect(storeLine(run.stdout)).toBe(
      `Store: postgres://flower:***@127.0.0.1:${port}/tasks: nothing accepts connections at 127.0.0.1:${port}: start PostgreSQL there, or fix the host and port in the URL`,
    );
    expect(run.status).toBe(1);
    expect(run.stderr).toBe('flower: the task store is not usable (see above)\n');
    expect(`${run.stdout}${run.stderr}`).not.toContain(SECRET);
  });

  it('a wrong password: fix the password, exit 1', async () => {
    const refuser = await startRefuser(WRONG_PASSWORD('flower'));
    cleanups.push(refuser.close);
    const run = await doctor({
      FLOWER_STORE_URL: `postgres://flower:${SECRET}@127.0.0.1:${refuser.port}/tasks`,
    });
    expect(storeLine(run.stdout)).toContain(
      'PostgreSQL rejected the password for user "flower": fix the password in the URL',
    );
    expect(run.status).toBe(1);
    expect(`${run.stdout}${run.stderr}`).not.toContain(SECRET);
  });

  it('a malformed URL in a .env file: what is wrong with it, exit 1', async () => {
    writeFileSync(join(project, '.env'), `FLOWER_STORE_URL=postgres://flower:${SECRET}#x@db/tasks\n`);
    const run = await doctor();
    expect(run.stdout).toMatch(
      new RegExp(`FLOWER_STORE_URL +postgres://flower:\\*\\*\\*@db/tasks +from ${join(project, '.env')}:1`),
    );
    expect(storeLine(run.stdout)).toBe(
      'Store: Store URL postgres://flower:***@db/tasks contains "#", which ends a URL: percent-encode special characters in the user name and password (@ as %40, : as %3A, / as %2F, # as %23).',
    );
    expect(run.status).toBe(1);
    expect(`${run.stdout}${run.stderr}`).not.toContain(SECRET);
  });
});
