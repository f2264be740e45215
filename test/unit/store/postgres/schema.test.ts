/**
 * The schema: created on first use, safe when several processes create or migrate it at once,
 * versioned per table family, and refused when a newer flower wrote it.
 */
import type pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { type PostgresTarget, parseStoreTarget } from '../../../../src/config/store-url.js';
import { createPool } from '../../../../src/store/postgres/connection.js';
import {
  ensureSchema,
  SESSIONS,
  TASK_RECORDS_FAMILY,
  type TableFamily,
} from '../../../../src/store/postgres/schema.js';
import { PostgresSessionStore } from '../../../../src/store/postgres/session-store.js';
import { type TestSchema, usePostgres } from '../../../support/postgres.js';

const postgres = usePostgres();
const pools: pg.Pool[] = [];
const stores: PostgresSessionStore[] = [];
let schema: TestSchema | undefined;

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const pool of pools.splice(0)) await pool.end();
  await schema?.drop();
  schema = undefined;
});

async function target(): Promise<PostgresTarget> {
  schema ??= await postgres.freshSchema('schema');
  return parseStoreTarget(schema.url) as PostgresTarget;
}

/** A pool of its own, as another process would have. */
async function pool(): Promise<pg.Pool> {
  const created = createPool(await target());
  pools.push(created);
  return created;
}

const versions = async () =>
  (await postgres.admin(`SELECT family, version FROM "${schema?.schema}".schema_versions ORDER BY family`))
    .rows;

describe('schema creation', () => {
  it('happens on first use, once, when six processes open the same fresh schema at once', async () => {
    const where = await target();
    const opening = Array.from({ length: 6 }, () => {
      const store = new PostgresSessionStore(where);
      stores.push(store);
      return store.open();
    });
    await expect(Promise.all(opening)).resolves.toHaveLength(6);
    expect(await versions()).toEqual([
      { family: 'sessions', version: SESSIONS.migrations.length },
      { family: 'task_records', version: TASK_RECORDS_FAMILY.migrations.length },
    ]);
    await stores[3]?.append({ projectKey: 'p', sessionId: 's' }, [{ type: 'user', uuid: 'u-1' }]);
    expect(await stores[5]?.load({ projectKey: 'p', sessionId: 's' })).toEqual([
      { type: 'user', uuid: 'u-1' },
    ]);
  });

  it('uses a schema that an administrator created beforehand', async () => {
    const where = await target();
    await postgres.admin(`CREATE SCHEMA "${where.schema}"`);
    const store = new PostgresSessionStore(where);
    stores.push(store);
    await store.open();
    expect(await versions()).toEqual([
      { family: 'sessions', version: 2 },
      { family: 'task_records', version: 1 },
    ]);
  });

  it('refuses tables written by a newer flower, saying to upgrade', async () => {
    const where = await target();
    await ensureSchema(await pool(), where.schema, where.display);
    await postgres.admin(
      `UPDATE "${where.schema}".schema_versions SET version = 7 WHERE family = 'sessions'`,
    );
    const store = new PostgresSessionStore(where);
    stores.push(store);
    await expect(store.open()).rejects.toThrow(
      `PostgreSQL store ${where.display}: the "sessions" tables in schema "${where.schema}" are at version 7, newer than this flower knows (2): upgrade flower (npm i -g flower-agent) on this machine.`,
    );
  });
});

describe('migrations', () => {
  // A family with a second version whose step would fail if it ran twice (no IF NOT EXISTS).
  const notes = (steps: number): TableFamily => ({
    name: 'notes',
    migrations: [
      (s: string) => `CREATE TABLE ${s}.notes (id integer PRIMARY KEY)`,
      (s: string) => `ALTER TABLE ${s}.notes ADD COLUMN body text NOT NULL DEFAULT ''`,
    ].slice(0, steps),
  });

  it('bring an older family forward once, however many processes start at the same moment', async () => {
    const where = await target();
    await ensureSchema(await pool(), where.schema, where.display, [SESSIONS, notes(1)]);
    const upgraders = await Promise.all(Array.from({ length: 5 }, () => pool()));
    await Promise.all(
      upgraders.map((each) => ensureSchema(each, where.schema, where.display, [SESSIONS, notes(2)])),
    );
    expect(await versions()).toEqual([
      { family: 'notes', version: 2 },
      { family: 'sessions', version: 2 },
    ]);
    await postgres.admin(`INSERT INTO "${where.schema}".notes (id, body) VALUES (1, 'migrated')`);
  });

  it('add a new family beside existing ones without touching them', async () => {
    const where = await target();
    const store = new PostgresSessionStore(where);
    stores.push(store);
    await store.append({ projectKey: 'p', sessionId: 's' }, [{ type: 'user', uuid: 'kept' }]);
    await ensureSchema(await pool(), where.schema, where.display, [SESSIONS, notes(2)]);
    expect(await store.load({ projectKey: 'p', sessionId: 's' })).toEqual([{ type: 'user', uuid: 'kept' }]);
    expect((await versions()).map((row) => row.family)).toEqual(['notes', 'sessions', 'task_records']);
  });
});
