/**
 * PostgreSQL for tests. With `FLOWER_TEST_POSTGRES_URL` set (CI sets it for the machine's
 * PostgreSQL 15) tests use that server; without it (a plain `npm test` on a fresh machine) this
 * test process starts PGlite, PostgreSQL compiled to WASM, and serves it over the wire protocol on
 * 127.0.0.1 with `@electric-sql/pglite-socket`, so the same tests drive the same pg client.
 *
 * Every test gets a schema of its own (`freshSchema()`: a URL ending in `?schema=<unique name>`)
 * and removes it (`drop()`); whatever a failed test left is dropped when the file ends.
 *
 * What PGlite cannot show: its socket server multiplexes all clients onto one database session, so
 * two "connections" never run at the same time (transactions queue whole) and share session state
 * such as advisory locks. Concurrency tests are therefore only meaningful against a real server;
 * they still run on PGlite, where they check that nothing breaks when the work is serialised.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';

export interface TestSchema {
  /** A store URL for this schema alone. */
  url: string;
  schema: string;
  drop: () => Promise<void>;
}

export interface TestPostgres {
  /** Which server the tests talk to. */
  kind: 'server' | 'pglite';
  /** The server's URL without a schema. */
  baseUrl: string;
  freshSchema: (label?: string) => Promise<TestSchema>;
  /** Runs SQL on the server as the test administrator (outside any store). */
  admin: (text: string, values?: unknown[]) => Promise<pg.QueryResult>;
}

export const realServerUrl = process.env.FLOWER_TEST_POSTGRES_URL || undefined;

interface Running {
  baseUrl: string;
  pool: pg.Pool;
  stop: () => Promise<void>;
}

async function startPglite(): Promise<Running> {
  const [{ PGlite }, { PGLiteSocketServer }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite-socket'),
  ]);
  const db = await PGlite.create();
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 64 });
  await server.start();
  const baseUrl = `postgres://postgres@${server.getServerConn()}/postgres`;
  const pool = new pg.Pool({ connectionString: baseUrl, max: 2 });
  return {
    baseUrl,
    pool,
    stop: async () => {
      await pool.end();
      await server.stop();
      await db.close();
    },
  };
}

async function connectServer(baseUrl: string): Promise<Running> {
  const pool = new pg.Pool({ connectionString: baseUrl, max: 2, connectionTimeoutMillis: 5000 });
  pool.on('error', () => {});
  try {
    await pool.query('SELECT 1');
  } catch (error) {
    await pool.end();
    throw new Error(
      `FLOWER_TEST_POSTGRES_URL=${baseUrl} does not answer (${(error as Error).message}); start that server or unset the variable to test against PGlite`,
    );
  }
  return { baseUrl, pool, stop: () => pool.end() };
}

/**
 * Registers `beforeAll`/`afterAll` hooks for this test file and returns the handle its tests use.
 * Call it once at the top level of a file.
 */
export function usePostgres(): TestPostgres {
  let running: Running | undefined;
  const created = new Set<string>();
  const kind = realServerUrl === undefined ? 'pglite' : 'server';
  const need = (): Running => {
    if (running === undefined) throw new Error('usePostgres(): the server is not up (use it inside tests)');
    return running;
  };
  const admin = (text: string, values?: unknown[]) => need().pool.query(text, values);
  const dropSchema = async (schema: string) => {
    await admin(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    created.delete(schema);
  };

  beforeAll(async () => {
    running = realServerUrl === undefined ? await startPglite() : await connectServer(realServerUrl);
  }, 60_000);
  afterAll(async () => {
    if (running === undefined) return;
    for (const schema of [...created]) await dropSchema(schema);
    await running.stop();
    running = undefined;
  });

  return {
    kind,
    get baseUrl() {
      return need().baseUrl;
    },
    admin,
    freshSchema: async (label = 'test') => {
      const schema = `flower_${label}_${process.pid}_${randomBytes(4).toString('hex')}`;
      created.add(schema);
      const base = need().baseUrl;
      return {
        schema,
        url: `${base}${base.includes('?') ? '&' : '?'}schema=${schema}`,
        drop: () => dropSchema(schema),
      };
    },
  };
}
