/**
 * The connections a PostgreSQL store talks through, and the policy that bounds them.
 *
 * Invariants ("no PostgreSQL failure ever crashes or hangs flower", issue 18):
 * - Nothing here crashes the process: every client made through this module (`createPool`'s, and
 *   any `pg.Client` given `clientConfig` and passed to `guardClient`) has an `error` listener for
 *   its whole life. pg emits `error` on a client whose connection dies, and pg-pool listens only
 *   while the client is idle: a reset under a checked-out client (a transaction in flight) was an
 *   unhandled 'error' event, a stack trace and exit 1 (observed: a reset as a step started). The
 *   query in flight still rejects, which its caller handles; the pool drops the client.
 * - Every wait on the server is bounded, on both sides: the connection attempt
 *   (`connectTimeoutMs`), each query as the client sees it (`queryTimeoutMs`: a black-holed or
 *   frozen server fails the call instead of hanging it), each statement on the server
 *   (`statementTimeoutMs`, shorter, so a statement stuck behind a lock is cancelled by the server
 *   and the connection stays usable), a transaction whose client vanished
 *   (`idleInTransactionTimeoutMs`: its row locks do not block other machines), and the end of a
 *   pool or client (`closeTimeoutMs`: a goodbye the server never acknowledges does not keep the
 *   process alive; the sockets are destroyed after it, a connection still being opened among them).
 * - TCP keepalive from `keepAliveInitialDelayMs` of silence, so the kernel notices a peer that
 *   vanished without a FIN or RST (a pulled cable, a NAT that forgot the flow) on an idle
 *   connection: after the delay plus the kernel's probes (Linux: 9 × 75 s) instead of two hours
 *   plus those. It cannot see a frozen server whose kernel still acknowledges, nor a proxy that
 *   black-holes; the timeouts above bound those.
 * - The server-side bounds travel in the startup packet, so they hold for every connection without
 *   a round trip; a URL may override them (pg lets the connection string's parameters win).
 *   PgBouncer refuses unknown startup parameters unless they are in its `ignore_startup_parameters`.
 * - Unnamed statements only: named prepared statements break behind PgBouncer in transaction mode
 *   and on servers that multiplex clients onto one session (PGlite's socket server), and the
 *   parse they save was not measurable next to the commit (BENCHMARKS.md, PostgreSQL store).
 * - Only the policy is public. Everything that names a pg type is `@internal`: the build strips it
 *   from the published .d.ts, whose readers have pg but not @types/pg (a devDependency).
 */
import type pg from 'pg';
import type { PostgresTarget } from '../../config/store-url.js';
import { pg as driver } from './pg-driver.js';

export interface PostgresPoolPolicy {
  /** Connections per process. Appends of the main thread and of parallel subagents overlap, but
   * a few suffice; many flower processes share one server (default max_connections is 100). */
  maxConnections: number;
  /** Idle connections close after this long, so a quiet task holds no server slots. */
  idleTimeoutMs: number;
  /** How long to wait for a connection: a server that is down must fail the start, not stall it. */
  connectTimeoutMs: number;
  /** Client-side bound on one query: what a black-holed or SIGSTOPped server costs a call (the
   * write-behind then retries it). Generous: a large batch over a slow link must still pass. */
  queryTimeoutMs: number;
  /** Server-side bound on one statement (statement_timeout), below `queryTimeoutMs`: a statement
   * stuck behind another session's lock is cancelled cleanly and the connection stays usable. */
  statementTimeoutMs: number;
  /** The server ends a session idle inside a transaction this long: flower's transactions never
   * wait on anything but the server, so such a session's client is gone and its locks must go too. */
  idleInTransactionTimeoutMs: number;
  /** First TCP keepalive probe after this much silence on a connection (Linux's default is 2 h). */
  keepAliveInitialDelayMs: number;
  /** How long ending a pool or client waits for the server to see it off before the sockets are
   * destroyed: a black-holed or frozen server never does, and its socket would keep flower alive. */
  closeTimeoutMs: number;
}

export const defaultPoolPolicy: Readonly<PostgresPoolPolicy> = Object.freeze({
  maxConnections: 4,
  idleTimeoutMs: 10_000,
  connectTimeoutMs: 10_000,
  queryTimeoutMs: 30_000,
  statementTimeoutMs: 25_000,
  idleInTransactionTimeoutMs: 30_000,
  keepAliveInitialDelayMs: 5_000,
  closeTimeoutMs: 2_000,
});

/**
 * The settings every connection to a store gets (`new pg.Client(clientConfig(…))`, or a pool's
 * config): application name, timeouts on both sides, keepalive. Pair a standalone client with
 * `guardClient` and end it with `endClient`.
 * @internal
 */
export function clientConfig(
  target: PostgresTarget,
  policy: Partial<PostgresPoolPolicy> = {},
  applicationName = 'flower',
): pg.ClientConfig {
  const bounds = { ...defaultPoolPolicy, ...policy };
  return {
    connectionString: target.connectionString,
    // The URL's own application_name wins (pg lets the connection string override these fields).
    application_name: applicationName,
    connectionTimeoutMillis: bounds.connectTimeoutMs,
    query_timeout: bounds.queryTimeoutMs,
    statement_timeout: bounds.statementTimeoutMs,
    idle_in_transaction_session_timeout: bounds.idleInTransactionTimeoutMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: bounds.keepAliveInitialDelayMs,
  };
}

/** The error a client's connection died of last, for callers that report it later. */
const lastErrors = new WeakMap<pg.ClientBase, unknown>();

/**
 * Gives a client an `error` listener for its whole life (see the module header); `onError` hears
 * each error (the caller's outage news), and `lastClientError` keeps the latest.
 * @internal
 */
export function guardClient<C extends pg.ClientBase>(client: C, onError?: (error: unknown) => void): C {
  client.on('error', (error) => {
    lastErrors.set(client, error);
    onError?.(error);
  });
  return client;
}

/** @internal */
export function lastClientError(client: pg.ClientBase): unknown {
  return lastErrors.get(client);
}

/** Destroys a client's socket at once: its queries fail, its `end` event follows. @internal */
export function destroyClient(client: pg.ClientBase): void {
  (
    client as unknown as { connection?: { stream?: { destroy?: () => void } } }
  ).connection?.stream?.destroy?.();
}

/** Resolves with `work`'s outcome when it settles within `ms`, else with `'timed out'`; never rejects. */
export async function within<T>(work: Promise<T>, ms: number): Promise<T | 'timed out'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timed out'>((resolve) => {
    timer = setTimeout(() => resolve('timed out'), Math.max(0, ms));
  });
  try {
    return await Promise.race([work.catch(() => undefined as T), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Ends a client, and destroys its socket when the server has not seen it off within `ms`. @internal */
export async function endClient(
  client: pg.Client,
  ms: number = defaultPoolPolicy.closeTimeoutMs,
): Promise<void> {
  if ((await within(client.end(), ms)) === 'timed out') destroyClient(client);
}

/**
 * A pg pool whose clients are guarded (module header) and whose `end()` is bounded: after
 * `closeTimeoutMs` every connection still open (a checked-out client whose query hangs, an idle one
 * whose goodbye is never acknowledged) is destroyed. `destroyConnections()` does that at once.
 * @internal
 */
export class GuardedPool extends driver.Pool {
  /** Every client the pool made whose connection has not ended yet, from the moment it is made:
   * pg reports a client only once it has connected, and one still connecting to a frozen server
   * would otherwise outlive the pool's end by the whole connect timeout (observed at exit). */
  private readonly live: Set<pg.ClientBase>;
  /** Told when the last open connection ended. */
  private readonly closedWaiters: Array<() => void>;
  private readonly closeTimeoutMs: number;
  private boundedEnd: Promise<void> | undefined;

  constructor(config: pg.PoolConfig, closeTimeoutMs: number) {
    const live = new Set<pg.ClientBase>();
    const closedWaiters: Array<() => void> = [];
    super({
      ...config,
      Client: class TrackedClient extends driver.Client {
        constructor(clientConfig?: string | pg.ClientConfig) {
          super(clientConfig);
          live.add(this);
          guardClient(this);
          this.once('end', () => {
            live.delete(this);
            if (live.size === 0) for (const done of closedWaiters.splice(0)) done();
          });
        }
      },
    });
    this.live = live;
    this.closedWaiters = closedWaiters;
    this.closeTimeoutMs = closeTimeoutMs;
    this.on('error', () => {
      // An idle client lost its connection; pg has already removed it from the pool.
    });
  }

  /** Connections not ended yet (checked out, idle, or saying goodbye). */
  get openConnections(): number {
    return this.live.size;
  }

  /** Destroys every connection of the pool now; what runs on them fails at once. */
  destroyConnections(): void {
    for (const client of this.live) destroyClient(client);
  }

  override end(): Promise<void>;
  override end(callback: () => void): void;
  override end(callback?: () => void): Promise<void> | void {
    this.boundedEnd ??= this.endBounded();
    if (callback === undefined) return this.boundedEnd;
    void this.boundedEnd.then(callback);
  }

  private async endBounded(): Promise<void> {
    const deadline = Date.now() + this.closeTimeoutMs;
    // pg-pool's end resolves once no client is checked out; the idle ones' goodbyes go on after it.
    const ended = new Promise<void>((resolve) => super.end(() => resolve()));
    await within(ended, this.closeTimeoutMs);
    await within(this.allClosed(), deadline - Date.now());
    this.destroyConnections();
    // Destroyed sockets close on the next turns of the loop; the pool's own end follows them.
    await within(ended, 1000);
  }

  private allClosed(): Promise<void> {
    if (this.live.size === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.closedWaiters.push(resolve));
  }
}

/** @internal */
export function createPool(
  target: PostgresTarget,
  policy: Partial<PostgresPoolPolicy> = defaultPoolPolicy,
  applicationName = 'flower',
): GuardedPool {
  const bounds = { ...defaultPoolPolicy, ...policy };
  return new GuardedPool(
    {
      ...clientConfig(target, bounds, applicationName),
      max: bounds.maxConnections,
      idleTimeoutMillis: bounds.idleTimeoutMs,
    },
    bounds.closeTimeoutMs,
  );
}
