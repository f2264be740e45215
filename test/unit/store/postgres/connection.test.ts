/**
 * connection.ts against a real server (PGlite without FLOWER_TEST_POSTGRES_URL) through the fault
 * proxy: a reset under a checked-out client crashes nothing, the server-side bounds reach every
 * session, and no wait on a black-holed server outlasts its bound (a query, the end of a pool, the
 * end of a client). Bounds are shortened through the policy, as a caller may.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { type PostgresTarget, parseStoreTarget } from '../../../../src/config/store-url.js';
import {
  clientConfig,
  createPool,
  defaultPoolPolicy,
  endClient,
  type GuardedPool,
  guardClient,
  lastClientError,
  within,
} from '../../../../src/store/postgres/connection.js';
import { isPassingFailure } from '../../../../src/store/shared/write-behind.js';
import { FaultProxy } from '../../../support/fault-proxy.js';
import { onlyOnRealServer, usePostgres } from '../../../support/postgres.js';

const postgres = usePostgres();

const opened: Array<{ close: () => Promise<void> }> = [];
afterEach(async () => {
  for (const each of opened.splice(0).reverse()) await each.close();
});

async function throughProxy(): Promise<{ proxy: FaultProxy; target: PostgresTarget }> {
  const proxy = await FaultProxy.start(postgres.baseUrl);
  opened.push(proxy);
  const url = new URL(postgres.baseUrl);
  url.port = String(proxy.port);
  return { proxy, target: parseStoreTarget(url.toString()) as PostgresTarget };
}

function pool(target: PostgresTarget, policy: Parameters<typeof createPool>[1] = {}): GuardedPool {
  const made = createPool(target, policy);
  opened.push({ close: () => made.end() });
  return made;
}

describe('a reset under a checked-out client', () => {
  it('rejects the query in flight, keeps the process up, and the next query works', async () => {
    const { proxy, target } = await throughProxy();
    const guarded = pool(target);
    const client = await guarded.connect();
    // pg-pool listens for errors only while a client is idle; this one is checked out.
    expect(client.listenerCount('error')).toBeGreaterThan(0);
    await client.query('BEGIN');
    const pending = client.query('SELECT pg_sleep(0.5)');
    proxy.reset();
    await expect(pending).rejects.toThrow();
    expect(isPassingFailure(lastClientError(client))).toBe(true);
    client.release(true);
    expect((await guarded.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });
});

describe('the server-side bounds', () => {
  onlyOnRealServer();
  it('statement_timeout and idle_in_transaction_session_timeout are set on every connection', async () => {
    const target = parseStoreTarget(postgres.baseUrl) as PostgresTarget;
    const guarded = pool(target);
    const shown = async (setting: string) =>
      (await guarded.query<Record<string, string>>(`SHOW ${setting}`)).rows[0]?.[setting];
    expect(await shown('statement_timeout')).toBe(`${defaultPoolPolicy.statementTimeoutMs / 1000}s`);
    expect(await shown('idle_in_transaction_session_timeout')).toBe(
      `${defaultPoolPolicy.idleInTransactionTimeoutMs / 1000}s`,
    );
  });

  it('a session left idle in a transaction is ended by the server, and that counts as an outage', async () => {
    const target = parseStoreTarget(postgres.baseUrl) as PostgresTarget;
    const guarded = pool(target, { idleInTransactionTimeoutMs: 300 });
    const client = await guarded.connect();
    await client.query('BEGIN');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const failure = await client.query('SELECT 1').catch((error: unknown) => error);
    client.release(true);
    expect(failure).toBeInstanceOf(Error);
    expect(isPassingFailure(failure)).toBe(true);
  });

  it('a statement stuck on the server is cancelled by the server', async () => {
    const target = parseStoreTarget(postgres.baseUrl) as PostgresTarget;
    const guarded = pool(target, { statementTimeoutMs: 200 });
    const failure = await guarded.query('SELECT pg_sleep(5)').catch((error: unknown) => error);
    expect((failure as { code?: string }).code).toBe('57014');
    expect(isPassingFailure(failure)).toBe(true);
  });
});

describe('a black-holed server', () => {
  it('fails a query after queryTimeoutMs instead of hanging it', async () => {
    const { proxy, target } = await throughProxy();
    const guarded = pool(target, { queryTimeoutMs: 300 });
    await guarded.query('SELECT 1');
    proxy.blackHole();
    const started = Date.now();
    const failure = await guarded.query('SELECT 1').catch((error: unknown) => error);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(isPassingFailure(failure)).toBe(true);
  });

  it("ends a pool within closeTimeoutMs: a hanging query's and an idle client's sockets are destroyed", async () => {
    const { proxy, target } = await throughProxy();
    const guarded = createPool(target, { closeTimeoutMs: 300, queryTimeoutMs: 60_000 });
    const [busy, idle] = [await guarded.connect(), await guarded.connect()];
    idle.release();
    expect(guarded.openConnections).toBe(2);
    proxy.blackHole();
    const hanging = busy.query('SELECT 1').catch((error: unknown) => {
      busy.release(true);
      return error;
    });
    const started = Date.now();
    await guarded.end();
    // The bound and the one second the destroyed sockets get to close, with slack for a busy machine.
    expect(Date.now() - started).toBeLessThan(300 + 1000 + 1500);
    expect(guarded.openConnections).toBe(0);
    expect(await hanging).toBeInstanceOf(Error);
  });

  // Observed in the SIGSTOP end-to-end test: the lease's release opened a connection to the frozen
  // server at close; the pool's end did not know it (pg reports a client only once it has
  // connected), so its socket kept flower alive until the connect timeout, past the stated bound.
  it('ends a pool within closeTimeoutMs while a connection is still being opened: its socket is destroyed too', async () => {
    const { proxy, target } = await throughProxy();
    const guarded = createPool(target, { closeTimeoutMs: 300, connectTimeoutMs: 60_000 });
    proxy.blackHole();
    const connecting = guarded.connect().catch((error: unknown) => error);
    await expect.poll(() => proxy.connections).toBe(1);
    expect(guarded.openConnections).toBe(1);
    const started = Date.now();
    await guarded.end();
    expect(Date.now() - started).toBeLessThan(300 + 1000 + 1500);
    expect(await within(connecting, 2000)).toBeInstanceOf(Error);
    // Its socket closed (a client says it ended once its socket has): on the loop's next turn.
    await expect.poll(() => guarded.openConnections, { timeout: 1000 }).toBe(0);
  });

  it('ends a standalone client within its bound (endClient)', async () => {
    const { proxy, target } = await throughProxy();
    const client = guardClient(new pg.Client(clientConfig(target, {}, 'flower test')));
    await client.connect();
    const ended = new Promise((resolve) => client.once('end', resolve));
    proxy.blackHole();
    const started = Date.now();
    await endClient(client, 300);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(await within(ended, 2000)).not.toBe('timed out');
  });
});
