/**
 * One owner per task across machines: the task's lease in PostgreSQL, with a fencing epoch.
 *
 * Why a lease and not the advisory lock it replaces: a session advisory lock belongs to its
 * connection, so the server dropped it the moment the holder's connection died, while the holder
 * kept working from its run directory; a second machine then took the task and both worked at
 * once (observed: split brain after a 30 s cut). A lease is a row with an expiry in the server's
 * clock that only time (or the holder's own release) ends, and an epoch that every shared write
 * carries, so a write of an owner that lost the task is refused by the database itself.
 *
 * Invariants:
 * - One row per task key: the workspace's absolute path *and* the run directory (taskNameOf), so
 *   two workspaces that both keep `./runs` never block each other on one database.
 * - A holder gets the task only when the row is free: released, expired in the server's clock, or
 *   held by a process this machine can prove dead (`isDeadHere`: same host and boot, pid gone or
 *   reused). Every grant takes the next epoch (never reused, never lower), in one transaction
 *   that holds the row's lock, and is recorded in `task_lease_epochs` with the run directory
 *   instance that took it (what lets an outbox replay prove nobody else worked in between).
 * - Renewal succeeds only for the same epoch and token: a holder whose lease was taken learns it
 *   at its next renewal (`lost`, naming the newest grant's holder, who may be done already); a renewal after its own
 *   expiry that nobody took keeps the epoch (no other writer could have existed).
 * - A refused `acquire` leaves no connection behind, and the lease's pool never keeps a finished
 *   process alive (`allowExitOnIdle`; timers are the keeper's business and unreferenced).
 * - Every statement is bounded (`query_timeout`, `lock_timeout`): a black-holed server fails the
 *   call in seconds, it never hangs it. A start that finds the row locked by a write of the
 *   holder's epoch is refused like one that finds the lease held (`TaskBusyError`).
 * - Fencing (`task_fence_ok`, used by task-records.ts and the session store in the same
 *   transaction as the write) takes the task's lease lock shared (an advisory lock: memory only,
 *   where a row lock would write the lease row at every append); a grant takes it exclusive, so
 *   it waits for every write of the old epoch that already passed the check, and none passes
 *   after it.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import type { PostgresTarget } from '../../config/store-url.js';
import { TaskBusyError, type TaskRef } from '../shared/task-lock-types.js';
import { createPool, type GuardedPool } from './connection.js';
import { storeFailure } from './errors.js';
import { leaseLock } from './lease-tables.js';
import { taskNameOf } from './task-records.js';

/** How long a lease lasts and how its holder keeps it; every field overridable. */
export interface LeasePolicy {
  /** The lease's length in the server's clock: a crashed or partitioned holder blocks the task
   * this long at most. A minute rides out a database failover without a false takeover. */
  leaseMs: number;
  /** Renewal period: six chances per lease, so one or two lost renewals change nothing. */
  renewEveryMs: number;
  /** Without a confirmed renewal for this long (counted from when the last confirmed one was
   * sent) the holder pauses its agent: a third of the lease is left as margin for a slow pause
   * and for clocks that run at slightly different rates. */
  stopAfterMs: number;
  /** How long a paused holder waits for the database before it gives up and exits. */
  regainWaitMs: number;
  /** Bound on one lease statement; below `renewEveryMs` so renewals never pile up. */
  statementTimeoutMs: number;
}

export const defaultLeasePolicy: Readonly<LeasePolicy> = Object.freeze({
  leaseMs: 60_000,
  renewEveryMs: 10_000,
  stopAfterMs: 40_000,
  regainWaitMs: 5 * 60_000,
  statementTimeoutMs: 8_000,
});

/**
 * A policy for a lease of `leaseMs` (the other periods keep their proportions), with overrides.
 * `FLOWER_LEASE_SECONDS` / `FLOWER_LEASE_WAIT_SECONDS` reach this through the CLI.
 */
export function leasePolicy(overrides: Partial<LeasePolicy> = {}): LeasePolicy {
  const leaseMs = overrides.leaseMs ?? defaultLeasePolicy.leaseMs;
  const scale = leaseMs / defaultLeasePolicy.leaseMs;
  const policy: LeasePolicy = {
    leaseMs,
    renewEveryMs: Math.round(defaultLeasePolicy.renewEveryMs * scale),
    stopAfterMs: Math.round(defaultLeasePolicy.stopAfterMs * scale),
    regainWaitMs: defaultLeasePolicy.regainWaitMs,
    statementTimeoutMs: Math.max(1000, Math.round(defaultLeasePolicy.statementTimeoutMs * scale)),
    ...overrides,
  };
  if (!(policy.renewEveryMs < policy.stopAfterMs && policy.stopAfterMs < policy.leaseMs))
    throw new RangeError('a lease policy needs renewEveryMs < stopAfterMs < leaseMs');
  return policy;
}

/** Who holds a lease, as the row says. */
export interface LeaseHolder {
  readonly pid: number;
  readonly host: string;
  readonly startedAt: string;
  /** Linux boot id and the pid's start time: what proves a same-host holder dead. */
  readonly bootId?: string | undefined;
  readonly processStart?: string | undefined;
}

/** What this process is, for the lease row (the runtime knows how to read /proc). */
export interface LeaseIdentity {
  readonly bootId?: string | undefined;
  readonly processStart?: string | undefined;
  /** The run directory's own id (its `instance` file): which copy of runs/ took each epoch. */
  readonly instance: string;
}

/** The epoch a write is made under, and by which run directory instance. */
export interface Fence {
  readonly epoch: number;
  /** The epoch the change was made under (an outbox replay's older one); default `epoch`. */
  readonly origin?: number;
  readonly instance: string;
}

export type RenewOutcome = { kind: 'renewed' } | { kind: 'lost'; holder: LeaseHolder | undefined };

export interface TaskLeaseOptions {
  policy?: Partial<LeasePolicy>;
  identity: LeaseIdentity;
  /** True when `holder` ran on this machine and is gone (its lease may be taken at once). */
  isDeadHere?: (holder: LeaseHolder) => boolean;
}

interface LeaseRow {
  epoch: string;
  token: string;
  pid: number;
  host: string;
  boot_id: string | null;
  proc_start: string | null;
  started_at: Date;
  free: boolean;
}

const holderOf = (row: LeaseRow): LeaseHolder => ({
  pid: row.pid,
  host: row.host,
  startedAt: row.started_at.toISOString(),
  bootId: row.boot_id ?? undefined,
  processStart: row.proc_start ?? undefined,
});

/** One held lease: renew it, release it. */
export class HeldLease {
  private released = false;

  constructor(
    private readonly leases: TaskLeases,
    readonly task: TaskRef,
    readonly epoch: number,
    readonly token: string,
    readonly holder: LeaseHolder,
    readonly instance: string,
  ) {}

  /** This lease's fence for writes made now. */
  get fence(): Fence {
    return { epoch: this.epoch, instance: this.instance };
  }

  renew(): Promise<RenewOutcome> {
    return this.leases.renew(this);
  }

  /** Gives the lease back (the next holder need not wait for it to expire). Never throws. */
  async release(): Promise<void> {
    // Stryker disable next-line ConditionalExpression: a second release's UPDATE matches the same epoch and token, already released (no other holder has them)
    if (this.released) return;
    // Stryker disable next-line BooleanLiteral: as above, a second release changes nothing
    this.released = true;
    await this.leases.release(this).catch(() => {});
  }
}

/** The task leases of one database, over a small pool of their own (see the module header). */
export class TaskLeases {
  readonly policy: LeasePolicy;
  private readonly pool: GuardedPool;
  private readonly tables: { schema: string; leases: string; epochs: string };

  constructor(
    private readonly target: PostgresTarget,
    /** Creates the schema (task_leases) if needed. */
    private readonly ready: () => Promise<void>,
    private readonly options: TaskLeaseOptions,
  ) {
    this.policy = leasePolicy(options.policy);
    const schema = `"${target.schema}"`;
    this.tables = { schema, leases: `${schema}.task_leases`, epochs: `${schema}.task_lease_epochs` };
    // Its own pool: a renewal must never queue behind transcript appends on a busy shared pool.
    // Guarded (connection.ts): an error listener on every client, a bounded end.
    this.pool = createPool(
      target,
      {
        maxConnections: 1,
        idleTimeoutMs: this.policy.renewEveryMs * 3,
        connectTimeoutMs: this.policy.statementTimeoutMs,
        queryTimeoutMs: this.policy.statementTimeoutMs,
        statementTimeoutMs: this.policy.statementTimeoutMs,
      },
      'flower lease',
    );
    // An idle lease connection never keeps a finished process alive.
    this.pool.options.allowExitOnIdle = true;
  }

  /** Takes the task's lease, or throws `TaskBusyError` naming the live holder. */
  async acquire(task: TaskRef): Promise<HeldLease> {
    try {
      await this.ready();
    } catch (error) {
      throw storeFailure('take the task lease', error, this.target);
    }
    const name = taskNameOf(task);
    const token = randomBytes(12).toString('hex');
    const me: LeaseHolder = {
      pid: process.pid,
      host: hostname(),
      startedAt: new Date().toISOString(),
      bootId: this.options.identity.bootId,
      processStart: this.options.identity.processStart,
    };
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw storeFailure('take the task lease', error, this.target);
    }
    let broken = false;
    try {
      await client.query('BEGIN');
      // A writer of the old epoch holds the row's share lock for a moment; a stuck one must not
      // stall a start for longer than a statement.
      await client.query(`SET LOCAL lock_timeout = ${Math.round(this.policy.statementTimeoutMs / 2)}`);
      // Exclusive with every write's fence: a grant waits for the writes of the old epoch that
      // already passed their check, and none passes after it.
      await client.query(`SELECT ${leaseLock(this.tables.schema, '$1', '$2', false)}`, [
        name.workspace,
        name.runDir,
      ]);
      await client.query(
        `INSERT INTO ${this.tables.leases} (workspace, run_dir, epoch, token, pid, host, started_at, expires_at, released)
         VALUES ($1, $2, 0, '', 0, '', now(), now(), true) ON CONFLICT DO NOTHING`,
        [name.workspace, name.runDir],
      );
      const { rows } = await client.query<LeaseRow>(
        `SELECT epoch::text, token, pid, host, boot_id, proc_start, started_at,
                (released OR expires_at <= clock_timestamp()) AS free
           FROM ${this.tables.leases} WHERE workspace = $1 AND run_dir = $2 FOR UPDATE`,
        [name.workspace, name.runDir],
      );
      const row = rows[0] as LeaseRow;
      // Refused: the catch below rolls back.
      if (!row.free && !(this.options.isDeadHere?.(holderOf(row)) ?? false))
        throw new TaskBusyError(holderOf(row));
      const granted = await client.query<{ epoch: string }>(
        `UPDATE ${this.tables.leases}
            SET epoch = epoch + 1, token = $3, pid = $4, host = $5, boot_id = $6, proc_start = $7,
                started_at = $8, released = false,
                expires_at = clock_timestamp() + make_interval(secs => $9::double precision / 1000)
          WHERE workspace = $1 AND run_dir = $2 RETURNING epoch::text`,
        [
          name.workspace,
          name.runDir,
          token,
          me.pid,
          me.host,
          me.bootId ?? null,
          me.processStart ?? null,
          me.startedAt,
          this.policy.leaseMs,
        ],
      );
      // Stryker disable next-line OptionalChaining: the row exists (inserted above if missing, locked FOR UPDATE), so the UPDATE returns it
      const epoch = Number(granted.rows[0]?.epoch);
      await client.query(
        `INSERT INTO ${this.tables.epochs} (workspace, run_dir, epoch, instance, host, pid)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [name.workspace, name.runDir, epoch, this.options.identity.instance, me.host, me.pid],
      );
      await client.query('COMMIT');
      return new HeldLease(this, task, epoch, token, me, this.options.identity.instance);
    } catch (error) {
      // Stryker disable next-line BlockStatement: pg's pool drops a released client whose connection ended by itself (pg-pool checks _queryable/_ending), so this only says so explicitly
      await client.query('ROLLBACK').catch(() => {
        // Stryker disable next-line BooleanLiteral: as above
        broken = true;
      });
      if (error instanceof TaskBusyError) throw error;
      // lock_not_available: the row is locked by a write of the holder's epoch (or by its
      // takeover in progress). That holder is at work: say who it is, as for a held lease.
      if ((error as { code?: string }).code === '55P03') {
        // On this connection: the lease's pool has no other, and it is still ours until `finally`.
        const holder = await this.lastHolder(task, client).catch(() => undefined);
        if (holder !== undefined) throw new TaskBusyError(holder);
      }
      // Stryker disable next-line BooleanLiteral: here ROLLBACK succeeded (else broken is set already), so the connection is idle and sound: dropping it is caution
      broken = true;
      throw storeFailure('take the task lease', error, this.target);
    } finally {
      client.release(broken);
    }
  }

  /** See `HeldLease.renew`. Rejects when the database does not answer in time. */
  async renew(lease: HeldLease): Promise<RenewOutcome> {
    const name = taskNameOf(lease.task);
    const { rows } = await this.pool.query<{ epoch: string }>(
      `UPDATE ${this.tables.leases}
          SET expires_at = clock_timestamp() + make_interval(secs => $5::double precision / 1000)
        WHERE workspace = $1 AND run_dir = $2 AND epoch = $3 AND token = $4 AND NOT released
        RETURNING epoch::text`,
      [name.workspace, name.runDir, lease.epoch, lease.token, this.policy.leaseMs],
    );
    if (rows.length === 1) return { kind: 'renewed' };
    return { kind: 'lost', holder: await this.successorOf(lease) };
  }

  /** Who took the task after `lease`: the newest grant (its holder may be done already). */
  async successorOf(lease: HeldLease): Promise<LeaseHolder | undefined> {
    const name = taskNameOf(lease.task);
    const { rows } = await this.pool.query<{ pid: number; host: string; taken_at: Date }>(
      `SELECT pid, host, taken_at FROM ${this.tables.epochs}
        WHERE workspace = $1 AND run_dir = $2 AND epoch > $3 ORDER BY epoch DESC LIMIT 1`,
      [name.workspace, name.runDir, lease.epoch],
    );
    const row = rows[0];
    return row === undefined
      ? undefined
      : { pid: row.pid, host: row.host, startedAt: row.taken_at.toISOString() };
  }

  /** Whoever the lease row names, held or not (read without waiting for its lock). */
  private async lastHolder(task: TaskRef, client: pg.PoolClient): Promise<LeaseHolder | undefined> {
    const name = taskNameOf(task);
    const { rows } = await client.query<LeaseRow>(
      `SELECT epoch::text, token, pid, host, boot_id, proc_start, started_at, false AS free
         FROM ${this.tables.leases} WHERE workspace = $1 AND run_dir = $2 AND epoch > 0`,
      [name.workspace, name.runDir],
    );
    // Stryker disable next-line ConditionalExpression: holderOf(undefined) throws, which the caller's catch turns into undefined as well
    return rows[0] === undefined ? undefined : holderOf(rows[0]);
  }

  /** The task's current holder, or undefined when the lease is free. */
  async holder(task: TaskRef): Promise<LeaseHolder | undefined> {
    const name = taskNameOf(task);
    const { rows } = await this.pool.query<LeaseRow>(
      `SELECT epoch::text, token, pid, host, boot_id, proc_start, started_at,
              (released OR expires_at <= clock_timestamp()) AS free
         FROM ${this.tables.leases} WHERE workspace = $1 AND run_dir = $2`,
      [name.workspace, name.runDir],
    );
    const row = rows[0];
    return row === undefined || row.free ? undefined : holderOf(row);
  }

  async release(lease: HeldLease): Promise<void> {
    const name = taskNameOf(lease.task);
    await this.pool.query(
      `UPDATE ${this.tables.leases} SET released = true, expires_at = clock_timestamp()
        WHERE workspace = $1 AND run_dir = $2 AND epoch = $3 AND token = $4`,
      [name.workspace, name.runDir, lease.epoch, lease.token],
    );
  }

  /** Ends the lease pool (bounded: a black-holed socket is destroyed, not waited for). */
  async close(): Promise<void> {
    await this.pool.end().catch(() => {});
  }

  /** Connections the lease's pool holds now (a refused start must leave none behind). */
  get connections(): number {
    return this.pool.openConnections;
  }
}
