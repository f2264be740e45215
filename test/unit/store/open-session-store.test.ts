/**
 * openSessionStore: a postgres:// URL opens the PostgreSQL backend (schema ready), anything else a
 * SQLite file. Bad input at the door fails with one line naming what to fix (the password masked)
 * and leaves nothing behind: no SQLite file named after a mistyped URL.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreUrlError } from '../../../src/config/store-url.js';
import { openSessionStore } from '../../../src/store/open-session-store.js';
import { PostgresStoreError } from '../../../src/store/postgres/errors.js';
import { PostgresSessionStore } from '../../../src/store/postgres/session-store.js';
import { SqliteSessionStore } from '../../../src/store/sqlite-session-store.js';
import { closedPort } from '../../support/closed-port.js';
import { NEEDS_REAL_SERVER, realServerUrl, usePostgres } from '../../support/postgres.js';
import {
  MISSING_DATABASE,
  type Refusal,
  startRefuser,
  WRONG_PASSWORD,
} from '../../support/postgres-refuser.js';

const SECRET = 'hunter2-secret';
const postgres = usePostgres();
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

async function refuser(refusal: Refusal): Promise<number> {
  const server = await startRefuser(refusal);
  stops.push(server.close);
  return server.port;
}

/** The one line openSessionStore rejects with. */
async function failure(url: string): Promise<Error> {
  const error = await openSessionStore(url).then(
    () => {
      throw new Error(`${url} opened`);
    },
    (reason: unknown) => reason as Error,
  );
  expect(error.message).not.toContain('\n');
  expect(error.message).not.toContain(SECRET);
  expect(error.message).not.toMatch(/\bat \S+ \(/); // no stack frames folded into the text
  return error;
}

describe('openSessionStore: which backend', () => {
  const key = { projectKey: '-p', sessionId: 's' };
  const entries = [{ type: 'user', uuid: 'u-1', message: { role: 'user', content: 'hi' } }];

  it('a postgres:// URL gives the PostgreSQL backend, its schema already created', async () => {
    const schema = await postgres.freshSchema('open');
    const store = await openSessionStore(schema.url);
    try {
      expect(store).toBeInstanceOf(PostgresSessionStore);
      const tables = await postgres.admin('SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = $1', [
        schema.schema,
      ]);
      // schema_versions, the sessions family's two tables, the task-records family's six (tasks,
      // records, the lease's two, the fenced-out work's two), the tombstones family's one.
      expect(tables.rows[0].n).toBe(10);
      await store.append(key, entries);
      expect(await store.load(key)).toEqual(entries);
    } finally {
      await store.close();
      await schema.drop();
    }
  });

  it('a path gives a SQLite file there', async () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'flower-open-'));
    const file = path.join(directory, 'nested', 'sessions.db');
    const store = await openSessionStore(file);
    try {
      expect(store).toBeInstanceOf(SqliteSessionStore);
      await store.append(key, entries);
      expect(await store.load(key)).toEqual(entries);
      expect(existsSync(file)).toBe(true);
    } finally {
      await store.close();
      rmSync(directory, { recursive: true, force: true });
    }
  });
});

describe('openSessionStore: what to fix, in one line', () => {
  it('a mistyped scheme is refused and no SQLite file is created for it', async () => {
    const error = await failure(`postgress://flower:${SECRET}@127.0.0.1/test`);
    expect(error).toBeInstanceOf(StoreUrlError);
    expect(error.message).toContain('the scheme "postgress:"');
    expect(existsSync(path.join(process.cwd(), 'postgress:'))).toBe(false);
  });

  it('a malformed URL names the encoding to use', async () => {
    const error = await failure(`postgres://flower:${SECRET}/x@127.0.0.1/test`);
    expect(error).toBeInstanceOf(StoreUrlError);
    expect(error.message).toContain('percent-encode');
  });

  it('a server that is down: start it, or fix host and port', async () => {
    const port = await closedPort();
    const error = await failure(`postgres://flower:${SECRET}@127.0.0.1:${port}/test`);
    expect(error).toBeInstanceOf(PostgresStoreError);
    expect(error.message).toBe(
      `PostgreSQL store postgres://flower:***@127.0.0.1:${port}/test: could not open schema "flower": nothing accepts connections at 127.0.0.1:${port}: start PostgreSQL there, or fix the host and port in the URL.`,
    );
  });

  it('a wrong password: fix the password', async () => {
    const port = await refuser(WRONG_PASSWORD('flower'));
    const error = await failure(`postgres://flower:${SECRET}@127.0.0.1:${port}/test`);
    expect((error as PostgresStoreError).code).toBe('28P01');
    expect(error.message).toContain(
      'PostgreSQL rejected the password for user "flower": fix the password in the URL',
    );
  });

  it.each([['cleartext' as const], ['scram' as const]])(
    'no password where the server asks for one (%s): add it',
    async (askPassword) => {
      const port = await refuser({ ...WRONG_PASSWORD('flower'), askPassword });
      const saved = process.env.PGPASSWORD;
      delete process.env.PGPASSWORD;
      try {
        const error = await failure(`postgres://flower@127.0.0.1:${port}/test`);
        expect(error.message).toContain(
          `127.0.0.1:${port} asks user "flower" for a password and the URL has none: add it`,
        );
      } finally {
        if (saved !== undefined) process.env.PGPASSWORD = saved;
      }
    },
  );

  it('a missing database: create it, or fix the name', async () => {
    const port = await refuser(MISSING_DATABASE('tasks'));
    const error = await failure(`postgres://flower:${SECRET}@127.0.0.1:${port}/tasks`);
    expect((error as PostgresStoreError).code).toBe('3D000');
    expect(error.message).toContain(
      `database "tasks" does not exist on 127.0.0.1:${port}: create it (createdb -h 127.0.0.1 -p ${port} tasks)`,
    );
  });

  it('a missing database on the real server says the same', async (context) => {
    context.skip(realServerUrl === undefined, NEEDS_REAL_SERVER);
    const url = new URL(realServerUrl as string);
    url.pathname = '/flower_no_such_database';
    const error = await failure(url.toString());
    expect((error as PostgresStoreError).code).toBe('3D000');
    expect(error.message).toContain('database "flower_no_such_database" does not exist');
  });
});
