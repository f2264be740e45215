/**
 * The schema: created on first use, safe when several processes create or migrate it at once,
 * versioned per table family, and refused when a newer flower wrote it.
 */
import { foldSessionSummary, type SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
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
import { TOMBSTONES } from '../../../../src/store/postgres/tombstones.js';
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
      { family: 'tombstones', version: TOMBSTONES.migrations.length },
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
      { family: 'task_records', version: 3 },
      { family: 'tombstones', version: 1 },
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
      `PostgreSQL store ${where.display}: the "sessions" tables in schema "${where.schema}" are at version 7, newer than this flower knows (2): upgrade flower on this machine (a newer checkout or tarball, installed as the README's Set up says).`,
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
    expect((await versions()).map((row) => row.family)).toEqual([
      'notes',
      'sessions',
      'task_records',
      'tombstones',
    ]);
  });
});

describe('sessions version 1 → 2 (appends stop updating the key row)', () => {
  it('upgrades a database the previous flower wrote, in place: entries, order, summaries, costs and mtimes intact', async () => {
    const where = await target();
    const old = await pool();
    // The tables exactly as version 1 created them, written through its own session_append (as
    // the previous flower's store called it: entries, cost positions, mtime, folded summary, CAS).
    await ensureSchema(old, where.schema, where.display, [
      { name: 'sessions', migrations: SESSIONS.migrations.slice(0, 1) },
      TASK_RECORDS_FAMILY,
    ]);
    const s = `"${where.schema}"`;
    const main = { projectKey: '-work-p', sessionId: 's-1' };
    const sub = { ...main, subpath: 'subagents/agent-a' };
    const at = (uuid: string, extra: Record<string, unknown> = {}): SessionStoreEntry => ({
      type: 'user',
      uuid,
      message: { role: 'user', content: `entry ${uuid}` },
      ...extra,
    });
    const cost: SessionStoreEntry = { type: 'cost-state', uuid: 'c1', totalCostUSD: 3 };
    const first = [at('u1'), at('u2', { customTitle: 'Old title' }), cost];
    const second = [at('u3', { gitBranch: 'topic' }), at('u1')]; // u1 is known: v1 leaves a gap at the end
    const oldAppend = async (
      key: { projectKey: string; sessionId: string; subpath?: string },
      batch: SessionStoreEntry[],
      mtime: number,
      summary: string | null,
      expect: number | null,
    ) =>
      Number(
        (
          await old.query(`SELECT ${s}.session_append($1, $2, $3, $4, $5, $6, $7, $8, $9) AS m`, [
            key.projectKey,
            key.sessionId,
            key.subpath ?? '',
            batch.map((e) => e.uuid ?? null),
            batch.map((e) => JSON.stringify(e)).join('\n'),
            batch.flatMap((e, i) => (e.type === 'cost-state' ? [i + 1] : [])),
            mtime,
            summary,
            expect,
          ])
        ).rows[0].m,
      );
    const folded1 = foldSessionSummary(undefined, main, first);
    const m1 = await oldAppend(main, first, 1_700_000_000_000, JSON.stringify(folded1.data), null);
    const folded2 = foldSessionSummary({ ...folded1, mtime: m1 }, main, [second[0] as SessionStoreEntry]);
    await expect(oldAppend(main, second, m1 + 5, JSON.stringify(folded2.data), m1)).rejects.toMatchObject({
      code: 'FLW02',
    });
    const m2 = await oldAppend(
      main,
      [second[0] as SessionStoreEntry],
      m1 + 5,
      JSON.stringify(folded2.data),
      m1,
    );
    await oldAppend(sub, [at('s1'), { ...cost, uuid: 'c2', totalCostUSD: 1 }], m2 + 1, null, null);
    await oldAppend(sub, [at('s1')].concat([at('s2')]), m2 + 2, null, null);

    // The new flower opens it: migrated once, nothing lost.
    const store = new PostgresSessionStore(where);
    stores.push(store);
    await store.open();
    expect(await versions()).toEqual([
      { family: 'sessions', version: 2 },
      { family: 'task_records', version: 3 },
      { family: 'tombstones', version: 1 },
    ]);
    const before = [...first, second[0] as SessionStoreEntry];
    expect(await store.load(main)).toEqual(before);
    expect(await store.load(sub)).toEqual([at('s1'), { ...cost, uuid: 'c2', totalCostUSD: 1 }, at('s2')]);
    expect(await store.listSessions(main.projectKey)).toEqual([{ sessionId: 's-1', mtime: m2 }]);
    expect(await store.listSessionSummaries(main.projectKey)).toEqual([
      { sessionId: 's-1', mtime: m2, data: folded2.data },
    ]);
    expect(await store.lastCostState(main)).toEqual(cost);
    expect(await store.lastCostState(sub)).toEqual({ ...cost, uuid: 'c2', totalCostUSD: 1 });

    // And carries on: new entries after the old ones (past v1's trailing gap), folded onto the old summary.
    const later = [at('u4', { gitBranch: 'later' }), at('u2')];
    await store.append(main, later);
    await store.append(sub, [at('s3')]);
    expect(await store.load(main)).toEqual([...before, later[0]]);
    expect((await store.load(sub))?.at(-1)).toEqual(at('s3'));
    const [summary] = await store.listSessionSummaries(main.projectKey);
    expect(summary?.data).toEqual(
      foldSessionSummary(undefined, main, [...before, later[0] as SessionStoreEntry]).data,
    );
    expect(summary?.data).toMatchObject({ customTitle: 'Old title', gitBranch: 'later' });
    expect(summary?.mtime).toBeGreaterThan(m2);
  });
});
