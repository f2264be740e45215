/**
 * A task whose state is kept in PostgreSQL, for the life of one process: the database opened,
 * the task's lease taken there (store/postgres/task-lease.ts) and kept (ownership/lease-keeper.ts),
 * the run directory pulled up to date, and from then on every change this process makes to the
 * task (transcript batches through `mirror`, file changes through task-changes.ts) sent behind
 * the work, fenced by the lease's epoch.
 *
 * Invariants:
 * - `openSharedTask` fails with one line (and leaves nothing behind: no run directory, no lease,
 *   no pool) when the database cannot be used; it throws `TaskBusyError` when another live
 *   process on any machine holds the task.
 * - Every write carries this process's epoch and is applied only while it owns the task; a write
 *   the database refuses is kept aside there (never merged), and the keeper learns at once that
 *   the task is lost. `ownership` tells the runtime when the agent must stop, and `regain` gives
 *   the one line to stop with: who took the task, or what stays in runs/.
 * - Every change is written to the outbox (outbox.ts) before it is queued, and the outbox is
 *   emptied only when the queue has sent everything: a change is lost neither to an outage nor
 *   to a kill.
 * - The asides' manifest rows are sent under their own task key (`<run dir>/aside`), so what
 *   the whole task spent is in the database; they are not kept in the outbox (a side question's
 *   books lost to a kill mid-outage stay in the local aside manifest).
 * - One outage line per process, whatever notices it first (a transcript batch, a record, the
 *   lock connection); the work never waits for the database except at the bounded flushes.
 * - `close` flushes (bounded), brings the database's sessions level with the local store (what
 *   was written to SQLite without the mirror, such as entries recovered from the agent's own
 *   transcript), releases the lock and ends the pool; what is still unsent is said in one line
 *   and stays in the run directory for the next start.
 */
import { join, resolve } from 'node:path';
import type { SessionKey, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import type { PostgresTarget } from '../../config/store-url.js';
import type { SessionBackend } from '../../store/backend.js';
import { defaultPoolPolicy, GuardedPool, within } from '../../store/postgres/connection.js';
import {
  type HeldLease,
  type LeaseHolder,
  type LeasePolicy,
  leasePolicy,
  type TaskLeases,
} from '../../store/postgres/task-lease.js';
import { taskNameOf } from '../../store/postgres/task-records.js';
import { droppedIds } from '../../store/retention/tombstones.js';
import { projectKeyFor } from '../../store/session-key.js';
import { MirroredSessionStore } from '../../store/shared/mirrored-store.js';
import { syncSessions } from '../../store/shared/session-sync.js';
import { openSharedStore, type SharedStore } from '../../store/shared/shared-store.js';
import type { TaskRef } from '../../store/shared/task-lock-types.js';
import { type OutageNotice, outageNotice, WriteBehindQueue } from '../../store/shared/write-behind.js';
import { SqliteSessionStore } from '../../store/sqlite-session-store.js';
import { holdAcrossMachines } from '../in-flight.js';
import { LeaseKeeper } from '../ownership/lease-keeper.js';
import { leaseOptionsFor, readRunInstance, recordRunEpoch } from '../ownership/run-instance.js';
import { readTombstones } from '../retention/tombstones.js';
import { subscribeTaskChanges } from '../task-changes.js';
import { ASIDE_RUN_DIR } from '../task-spend.js';
import { appendOutbox, clearOutbox } from './outbox.js';
import { type PullReport, pullTaskState, pushSpillFiles } from './pull.js';
import { recordChangesOf } from './records.js';
import { CLOSE_FLUSH_MS, type RuntimeSharing, type TaskOwnership } from './sharing.js';

const seconds = (ms: number): string =>
  ms % 60_000 === 0 && ms >= 60_000 ? `${ms / 60_000} min` : `${Math.round(ms / 1000)} s`;

function describeCounts(kept: { entries: number; changes: number }): string {
  const parts: string[] = [];
  if (kept.entries > 0) parts.push(`${kept.entries} transcript entr${kept.entries === 1 ? 'y' : 'ies'}`);
  if (kept.changes > 0) parts.push(`${kept.changes} record${kept.changes === 1 ? '' : 's'}`);
  return parts.join(' and ');
}

export interface SharedTaskOptions {
  onWarning?: (line: string) => void;
  onVerbose?: (line: string) => void;
  /** Unsent transcript batches kept before a catch-up replaces them (default 20 000). */
  maxPendingBatches?: number;
  /** Write-behind retry pauses (tests shorten them). */
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
  /** Lease timing (default `defaultLeasePolicy`: 60 s). */
  lease?: Partial<LeasePolicy>;
}

export class SharedTask implements RuntimeSharing {
  readonly sessions: WriteBehindQueue;
  readonly records: WriteBehindQueue;
  readonly ownership: TaskOwnership;
  private readonly unsubscribe: () => void;
  private closed = false;
  /** Undoes `holdAcrossMachines` when the lease is given back. */
  private releaseHold: () => void = () => {};
  /** What the database kept aside because this process no longer owned the task. */
  private readonly keptAside = { entries: 0, changes: 0 };

  private constructor(
    readonly store: SharedStore,
    readonly task: TaskRef,
    readonly lease: HeldLease,
    private readonly leases: TaskLeases,
    private readonly keeper: LeaseKeeper,
    readonly pulled: PullReport,
    readonly notice: OutageNotice,
    private readonly options: SharedTaskOptions,
  ) {
    const refused = (label: string, error: unknown) =>
      options.onWarning?.(
        `${store.display} refused to ${label} (${(error as Error).message}); it stays in the run directory and the next start sends it again.`,
      );
    const queueOptions = {
      notice,
      onRefused: refused,
      ...(options.retryDelayMs === undefined ? {} : { retryDelayMs: options.retryDelayMs }),
      ...(options.maxRetryDelayMs === undefined ? {} : { maxRetryDelayMs: options.maxRetryDelayMs }),
    };
    this.sessions = new WriteBehindQueue({
      ...queueOptions,
      // Past this many unsent batches (a long outage), one catch-up from the local store replaces them.
      catchUp: { label: 'send the transcripts the database lacks', run: () => this.syncSessions() },
      ...(options.maxPendingBatches === undefined ? {} : { maxPending: options.maxPendingBatches }),
    });
    this.records = new WriteBehindQueue({
      ...queueOptions,
      // Everything the outbox holds has been sent.
      onDrained: () => clearOutbox(this.runDir),
    });
    const mainChanges = subscribeTaskChanges(this.runDir, (change) => {
      const changes = recordChangesOf(change);
      appendOutbox(this.runDir, changes, lease.epoch);
      this.records.push(`write the task's ${change.kind} record`, async () => {
        if ((await store.records.write(task, changes, lease.fence)) === 'fenced')
          this.fenced('changes', changes.length);
      });
    });
    // The asides' books (their own run directory, see cli/interaction/aside.ts) are part of what
    // the task spent: a report or a budget on another machine reads them from here. Only their
    // rows go: an aside's session is throwaway (gc drops it) and resumes nowhere.
    const asideTask = { workspace: task.workspace, runDir: join(task.runDir, ASIDE_RUN_DIR) };
    const asideChanges = subscribeTaskChanges(join(this.runDir, ASIDE_RUN_DIR), (change) => {
      if (change.kind !== 'manifest-run' && change.kind !== 'manifest-added') return;
      const changes = recordChangesOf(change);
      this.records.push("write an aside's books", async () => {
        await store.records.write(asideTask, changes);
      });
    });
    this.unsubscribe = () => {
      mainChanges();
      asideChanges();
    };
    const policy = leases.policy;
    this.ownership = {
      get state() {
        return keeper.state;
      },
      // Half the margin between the stop and the lease's end: the agent is gone before anyone may
      // take the task (5 s at most, what a turn needs to report its result).
      stopGraceMs: Math.min(5000, (policy.leaseMs - policy.stopAfterMs) / 2),
      onChange: (listener) =>
        keeper.onChange((state) => {
          if (state === 'endangered') options.onWarning?.(this.pausedLine());
          listener(state);
        }),
      regain: async () => {
        const outcome = await keeper.regain();
        if (outcome.kind === 'kept') return undefined;
        if (outcome.kind === 'gave-up') return this.gaveUpLine();
        // Whatever is still queued is refused and kept aside: send it now, so the line can say so.
        await this.flush(this.leases.policy.statementTimeoutMs);
        const holder = outcome.holder ?? (await this.leases.successorOf(this.lease).catch(() => undefined));
        return this.takenLine(holder);
      },
    };
  }

  /** A write came back refused: another process owns the task now. */
  private fenced(kind: 'entries' | 'changes', count: number): void {
    this.keptAside[kind] += count;
    this.keeper.fencedOut();
  }

  private pausedLine(): string {
    const policy = this.leases.policy;
    return `${this.store.display} has not confirmed this process's lease for ${seconds(policy.stopAfterMs)}: the agent is stopped before the lease can run out (another machine may take the task after ${seconds(policy.leaseMs)}); waiting up to ${seconds(policy.regainWaitMs)} for the database. Everything stays in ${this.runDir}.`;
  }

  private gaveUpLine(): string {
    return `${this.store.display} did not answer for ${seconds(this.leases.policy.regainWaitMs)}, so this process stopped; everything stays in ${this.runDir} and the next flower start here sends it (another machine may take the task once the lease has run out).`;
  }

  private takenLine(holder: LeaseHolder | undefined): string {
    const who = holder === undefined ? 'another flower' : `flower pid ${holder.pid} on host ${holder.host}`;
    const kept = this.keptAside.entries + this.keptAside.changes;
    const aside =
      kept === 0
        ? ''
        : ` ${describeCounts(this.keptAside)} this process sent after that ${kept === 1 ? 'was' : 'were'} kept aside there (flower report shows ${kept === 1 ? 'it' : 'them'});`;
    return `${who} took this task over while this process could not reach ${this.store.display}, so this process stopped;${aside} ${this.runDir} keeps everything it did.`;
  }

  get runDir(): string {
    return resolve(this.task.workspace, this.task.runDir);
  }

  get display(): string {
    return this.store.display;
  }

  mirror(local: SessionBackend): SessionBackend {
    const sessions = this.store.sessions;
    return new MirroredSessionStore(
      local,
      {
        append: (key, entries) => this.appendFenced(key, entries),
        // A process that lost the task deletes nothing another owner may be continuing.
        delete: async (key) => {
          if (this.keeper.state !== 'lost') await sessions.delete(key);
        },
      },
      this.sessions,
    );
  }

  async flush(timeoutMs: number): Promise<boolean> {
    // Nothing waits for a database that is away: not in an outage, not while the lease is unconfirmed.
    const wait = this.notice.down || this.keeper.state === 'endangered' ? 0 : timeoutMs;
    const [sessions, records] = await Promise.all([this.sessions.flush(wait), this.records.flush(wait)]);
    return sessions && records;
  }

  /** See the module header. Never throws. */
  async close(timeoutMs = CLOSE_FLUSH_MS): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe();
    // Stopped because the database stayed away past the wait: the line that said so also said
    // that everything stays in runs/; waiting more would only delay the exit.
    const gaveUp = this.keeper.state === 'endangered';
    const wait = gaveUp ? 0 : timeoutMs;
    const deadline = Date.now() + wait;
    // An outage may just have ended: wait the whole time here, it is the last chance.
    const [sent, recorded] = await Promise.all([this.sessions.flush(wait), this.records.flush(wait)]);
    this.sessions.close();
    this.records.close();
    let level = false;
    if (sent && recorded && !gaveUp) {
      level = await this.levelSessions(Math.max(1000, deadline - Date.now()));
      if (level)
        level =
          (await within(
            pushSpillFiles(this.store, this.task).then(() => true),
            Math.max(1000, deadline - Date.now()),
          )) === true;
    }
    if (!(sent && recorded && level) && !gaveUp) {
      const unsent = this.sessions.pending + this.records.pending;
      this.options.onWarning?.(
        `${unsent > 0 ? `${unsent} change${unsent === 1 ? '' : 's'} of this task` : 'Some of this task'} could not be sent to ${this.store.display} yet; ${unsent === 1 ? 'it stays' : 'they stay'} in ${this.runDir} and the next flower start here sends ${unsent === 1 ? 'it' : 'them'}.`,
      );
    }
    this.releaseHold();
    this.keeper.stop();
    // Side by side and bounded: a black-holed or frozen server answers neither the release nor the
    // pools' goodbyes, and the process must still end (issue 18). A lease left unreleased expires.
    const grace = defaultPoolPolicy.closeTimeoutMs + 1000;
    await Promise.all([
      within(this.lease.release(), defaultPoolPolicy.closeTimeoutMs).then(() =>
        within(this.leases.close(), grace),
      ),
      within(this.store.close(), grace),
    ]);
    // What still waits on the store's connections is abandoned: its sockets must not keep the process alive.
    const pool = this.store.sessions.pool;
    if (pool instanceof GuardedPool) pool.destroyConnections();
  }

  /** Brings the database's sessions level with the local store (both ways); throws on failure. */
  private async syncSessions(): Promise<void> {
    const projectKey = projectKeyFor(this.task.workspace);
    const dropped = droppedIds(readTombstones(this.runDir), projectKey);
    const local = new SqliteSessionStore(join(this.runDir, 'sessions.db'));
    try {
      await syncSessions(
        {
          entryCounts: (key) => local.entryCounts(key),
          load: (key) => local.load(key),
          append: (key, entries) => local.append(key, entries),
        },
        {
          entryCounts: (key) => this.store.sessions.entryCounts(key),
          load: (key) => this.store.sessions.load(key),
          // Behind the fence like every other write: a process that lost the task must not
          // put its catch-up into a transcript another owner continues.
          append: (key, entries) => this.appendFenced(key, entries),
        },
        projectKey,
        // What gc dropped (its tombstones here) stays dropped: an aside on another machine may
        // still hold a copy when this process ends.
        (sessionId) => !dropped.has(sessionId),
      );
    } finally {
      local.close();
    }
  }

  /** A transcript batch, applied only while this process owns the task (else kept aside). */
  private async appendFenced(key: SessionKey, entries: SessionStoreEntry[]): Promise<void> {
    const done = await this.store.sessions.appendFenced(
      key,
      entries,
      taskNameOf(this.task),
      this.lease.fence,
    );
    if (done.outcome === 'fenced') this.fenced('entries', done.kept);
  }

  /** `syncSessions`, bounded; true when it finished. */
  private async levelSessions(timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((done) => {
      timer = setTimeout(() => done(false), timeoutMs);
    });
    try {
      return await Promise.race([
        this.syncSessions().then(
          () => true,
          () => false,
        ),
        timeout,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Opens the database, takes the task's lock there and pulls the run directory up to date.
   * Throws the store's one-line error, or `TaskBusyError`.
   */
  static async open(
    target: PostgresTarget,
    task: TaskRef,
    options: SharedTaskOptions = {},
  ): Promise<SharedTask> {
    const lease = leasePolicy(options.lease);
    // A transaction of this process whose client vanished holds the lease row's share lock, which
    // a takeover must wait for: the server ends it well within the lease.
    const store = await openSharedStore(target, {
      pool: {
        idleInTransactionTimeoutMs: Math.min(defaultPoolPolicy.idleInTransactionTimeoutMs, lease.leaseMs / 2),
      },
    });
    const notice = outageNotice(store.display, options);
    const runDir = resolve(task.workspace, task.runDir);
    const copy = readRunInstance(runDir);
    const leases = store.leases(leaseOptionsFor(runDir, lease));
    let held: HeldLease | undefined;
    try {
      held = await leases.acquire(task);
      const pulled = await pullTaskState(store, task, {
        ...options,
        fence: held.fence,
        previousEpoch: copy.epoch,
      });
      recordRunEpoch(runDir, copy.instance, held.epoch);
      const keeper = new LeaseKeeper(held, leases.policy);
      const shared = new SharedTask(store, task, held, leases, keeper, pulled, notice, options);
      keeper.start();
      shared.releaseHold = holdAcrossMachines(shared.runDir);
      return shared;
    } catch (error) {
      await held?.release();
      await leases.close();
      await store.close();
      throw error;
    }
  }
}
