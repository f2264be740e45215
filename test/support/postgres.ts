/**
 * PostgreSQL for tests. With `FLOWER_TEST_POSTGRES_URL` set (CI sets it for the machine's
 * PostgreSQL 15) tests use that server; without it (a plain `npm test` on a fresh machine) this
 * test process starts PGlite, PostgreSQL compiled to WASM, and serves it over the wire protocol on
 * 127.0.0.1 with `@electric-sql/pglite-socket`, so the same tests drive the same pg client.
 *
 * Every test gets a schema of its own (`freshSchema()`: a URL ending in `?schema=<unique name>`)
 * and removes it (`drop()`); whatever a failed test left is dropped when the file ends.
 *
 * What PGlite cannot show: it is one database session, so its clients never run at the same time
 * (requests and open transactions queue whole, see `WholeRequestQueue`) and share session state
 * such as advisory locks and prepared statements. Concurrency tests are therefore only meaningful
 * against a real server; on PGlite they check that nothing breaks when the work is serialised.
 */
import { randomBytes } from 'node:crypto';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { type PostgresTarget, parseStoreTarget } from '../../src/config/store-url.js';
import { openSharedStore, type SharedStore } from '../../src/store/shared/shared-store.js';

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

/** Why a test that needs the real server skipped: the test summary prints it (never a silent skip). */
export const NEEDS_REAL_SERVER =
  'needs FLOWER_TEST_POSTGRES_URL: only a real PostgreSQL server shows two sessions at once (advisory locks, missing databases, server-side settings)';

/** Inside a describe: each of its tests skips, saying why, when no real server is configured. */
export function onlyOnRealServer(): void {
  beforeEach((context) => context.skip(realServerUrl === undefined, NEEDS_REAL_SERVER));
}

interface Running {
  baseUrl: string;
  pool: pg.Pool;
  stop: () => Promise<void>;
}

type PGliteDatabase = import('@electric-sql/pglite').PGlite;
type HandlerOptions = ConstructorParameters<
  typeof import('@electric-sql/pglite-socket').PGLiteSocketHandler
>[0];

/**
 * The scheduler between PGlite and its socket handlers: it runs one client's whole request (every
 * message up to its Sync, or a simple Query) at a time, and keeps an open transaction's client in
 * front until it ends. pglite-socket's own queue schedules single messages, so two clients using
 * the extended protocol at once interleave (a Parse of one between the Parse and Bind of the other
 * fails with "unnamed prepared statement does not exist"); pg sends every query that way.
 */
class WholeRequestQueue {
  private readonly partial = new Map<number, Uint8Array[]>();
  private readonly waiting: Array<{
    handlerId: number;
    request: Uint8Array;
    onData: (data: Uint8Array) => void;
    done: (bytes: number) => void;
    failed: (error: unknown) => void;
  }> = [];
  private owner: number | undefined;
  private running = false;

  constructor(private readonly db: PGliteDatabase) {}

  enqueue(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> {
    const parts = [...(this.partial.get(handlerId) ?? []), message];
    // A startup message has no type byte (it starts with its length); Sync, Query, Flush and
    // Terminate end a request.
    const ends = message[0] === 0 || [0x53, 0x51, 0x48, 0x58].includes(message[0] as number);
    if (!ends) {
      this.partial.set(handlerId, parts);
      return Promise.resolve(0);
    }
    this.partial.delete(handlerId);
    return new Promise((done, failed) => {
      this.waiting.push({ handlerId, request: Buffer.concat(parts), onData, done, failed });
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      for (;;) {
        const index = this.waiting.findIndex(
          (job) => this.owner === undefined || job.handlerId === this.owner,
        );
        if (index === -1) return;
        const [job] = this.waiting.splice(index, 1);
        if (job === undefined) return;
        let bytes = 0;
        try {
          await this.db.runExclusive(() =>
            this.db.execProtocolRawStream(job.request, {
              onRawData: (data) => {
                bytes += data.length;
                job.onData(data);
              },
            }),
          );
          this.owner = this.db.isInTransaction() ? job.handlerId : undefined;
          job.done(bytes);
        } catch (error) {
          job.failed(error);
        }
      }
    } finally {
      this.running = false;
    }
  }

  clearQueueForHandler(handlerId: number): void {
    this.partial.delete(handlerId);
    for (let index = this.waiting.length - 1; index >= 0; index -= 1) {
      const job = this.waiting[index];
      if (job?.handlerId !== handlerId) continue;
      this.waiting.splice(index, 1);
      job.failed(new Error('client disconnected'));
    }
  }

  async clearTransactionIfNeeded(handlerId: number): Promise<void> {
    if (this.owner !== handlerId) return;
    if (this.db.isInTransaction()) await this.db.exec('ROLLBACK');
    this.owner = undefined;
    await this.pump();
  }
}

async function startPglite(): Promise<Running> {
  const [{ PGlite }, { PGLiteSocketHandler }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite-socket'),
  ]);
  const db = await PGlite.create();
  const queryQueue = new WholeRequestQueue(db) as unknown as HandlerOptions['queryQueue'];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    void new PGLiteSocketHandler({ queryQueue, closeOnDetach: true }).attach(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as AddressInfo;
  const baseUrl = `postgres://postgres@127.0.0.1:${address.port}/postgres`;
  const pool = new pg.Pool({ connectionString: baseUrl, max: 2 });
  return {
    baseUrl,
    pool,
    stop: async () => {
      await pool.end();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
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

export interface SharedStoresPerTest {
  /** Opens another shared store on this test's schema (created on first use). */
  open(): Promise<SharedStore>;
  /** This test's schema name, once `open` has created it. */
  schemaName(): string | undefined;
}

/**
 * Shared stores (`openSharedStore`) on one fresh schema per test: every store opened in a test is
 * closed after it and the schema dropped. Call it once at the top level, after `usePostgres()`.
 */
export function sharedStoresPerTest(postgres: TestPostgres, label: string): SharedStoresPerTest {
  const opened: SharedStore[] = [];
  let schema: TestSchema | undefined;
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    await schema?.drop();
    schema = undefined;
  });
  return {
    async open() {
      schema ??= await postgres.freshSchema(label);
      const store = await openSharedStore(parseStoreTarget(schema.url) as PostgresTarget);
      opened.push(store);
      return store;
    },
    schemaName: () => schema?.schema,
  };
}
