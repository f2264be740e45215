/**
 * The connection pool a PostgreSQL store talks through, and the policy that sizes it.
 *
 * Invariants:
 * - A pool never crashes the process: an idle connection that the server drops (a restart, a
 *   network cut) emits `error` on the pool, which Node would otherwise throw as unhandled; here it
 *   is ignored (pg has already dropped that client) and the next query opens a new connection.
 * - Every query is bounded in time (`queryTimeoutMs`), so a server that stops answering fails the
 *   call instead of hanging it.
 * - Unnamed statements only: named prepared statements break behind PgBouncer in transaction mode
 *   and on servers that multiplex clients onto one session (PGlite's socket server), and the
 *   parse they save was not measurable next to the commit (BENCHMARKS.md, PostgreSQL store).
 */
import pg from 'pg';
import type { PostgresTarget } from '../../config/store-url.js';

export interface PostgresPoolPolicy {
  /** Connections per process. Appends of the main thread and of parallel subagents overlap, but
   * a few suffice; many flower processes share one server (default max_connections is 100). */
  maxConnections: number;
  /** Idle connections close after this long, so a quiet task holds no server slots. */
  idleTimeoutMs: number;
  /** How long to wait for a connection: a server that is down must fail the start, not stall it. */
  connectTimeoutMs: number;
  /** Client-side bound on one query; below the SDK's 60 s append timeout, so a stalled server's
   * failure reaches the SDK as a rejection (which it retries) rather than a timeout (which it does not). */
  queryTimeoutMs: number;
}

export const defaultPoolPolicy: PostgresPoolPolicy = {
  maxConnections: 4,
  idleTimeoutMs: 10_000,
  connectTimeoutMs: 10_000,
  queryTimeoutMs: 30_000,
};

export function createPool(target: PostgresTarget, policy: PostgresPoolPolicy = defaultPoolPolicy): pg.Pool {
  const pool = new pg.Pool({
    connectionString: target.connectionString,
    // The URL's own application_name wins (pg lets the connection string override these fields).
    application_name: 'flower',
    max: policy.maxConnections,
    idleTimeoutMillis: policy.idleTimeoutMs,
    connectionTimeoutMillis: policy.connectTimeoutMs,
    query_timeout: policy.queryTimeoutMs,
    keepAlive: true,
  });
  pool.on('error', () => {
    // An idle client lost its connection; pg has already removed it from the pool.
  });
  return pool;
}
