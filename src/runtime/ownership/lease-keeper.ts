/**
 * Keeping a task's lease (store/postgres/task-lease.ts) while this process works on it, and
 * stopping the work before the lease can run out.
 *
 * The lease is renewed every `renewEveryMs`. Its holder can only know the lease holds until
 * `leaseMs` after it *sent* its last confirmed renewal (the server stamped the expiry no earlier
 * than that), so the clock here runs from the send time, never from the answer.
 *
 * States:
 * - `held`: the last confirmed renewal is younger than `stopAfterMs`; the agent may work.
 * - `endangered`: no renewal was confirmed for `stopAfterMs`; the lease may expire in
 *   `leaseMs - stopAfterMs`, after which another machine may take the task, so the agent must
 *   stop now (the runtime interrupts it). A renewal confirmed later (the same epoch is still
 *   current) makes it `held` again: a blip never costs the task.
 * - `lost`: a renewal or a fenced write found another epoch: another process owns the task. Final.
 *
 * Invariants:
 * - Every listener hears each change of state once, in order; a throwing listener is ignored.
 * - At most one renewal is in flight; a slow one is not piled upon.
 * - Timers never keep the process alive (`unref`), and `stop` ends them all.
 * - `regain` is bounded by `regainWaitMs`: it resolves `kept`, `taken` or `gave-up`, never hangs.
 */
import type { LeaseHolder, LeasePolicy, RenewOutcome } from '../../store/postgres/task-lease.js';

export type OwnershipState = 'held' | 'endangered' | 'lost';

export type RegainOutcome =
  | { kind: 'kept' }
  | { kind: 'taken'; holder: LeaseHolder | undefined }
  | { kind: 'gave-up' };

export interface RenewableLease {
  renew(): Promise<RenewOutcome>;
}

export interface KeeperClock {
  /** Monotonic milliseconds. */
  now(): number;
}

const monotonic: KeeperClock = { now: () => performance.now() };

export class LeaseKeeper {
  private current: OwnershipState = 'held';
  private confirmedAt: number;
  private lastSentAt: number;
  private renewing = false;
  private ticker: NodeJS.Timeout | undefined;
  private readonly listeners = new Set<(state: OwnershipState) => void>();
  private newHolder: LeaseHolder | undefined;

  constructor(
    private readonly lease: RenewableLease,
    private readonly policy: Pick<LeasePolicy, 'renewEveryMs' | 'stopAfterMs' | 'regainWaitMs'>,
    private readonly clock: KeeperClock = monotonic,
  ) {
    // The grant itself is the first confirmation: acquire stamped the expiry.
    this.confirmedAt = clock.now();
    this.lastSentAt = this.confirmedAt;
  }

  get state(): OwnershipState {
    return this.current;
  }

  /** The holder that took the task, when it is `lost` and the database said who. */
  get takenBy(): LeaseHolder | undefined {
    return this.newHolder;
  }

  /** Starts renewing. The check runs often enough to notice `stopAfterMs` within a second. */
  start(): void {
    if (this.ticker !== undefined) return;
    const every = Math.max(50, Math.min(1000, Math.floor(this.policy.renewEveryMs / 4)));
    this.ticker = setInterval(() => this.tick(), every);
    this.ticker.unref();
  }

  stop(): void {
    clearInterval(this.ticker);
    this.ticker = undefined;
    this.listeners.clear();
  }

  /** Calls `listener` on every change of state; returns the unsubscribe. */
  onChange(listener: (state: OwnershipState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The database refused a write of this epoch: another process owns the task. */
  fencedOut(): void {
    this.become('lost');
  }

  /** One check: renew when due, and pause the work when the last confirmation is too old. */
  tick(): void {
    if (this.current === 'lost') return;
    const now = this.clock.now();
    // From held (`become` ignores a change to the state it is in).
    if (now - this.confirmedAt >= this.policy.stopAfterMs) this.become('endangered');
    // While endangered, ask more often: the sooner the database is heard again, the sooner work goes on.
    const due = this.current === 'held' ? this.policy.renewEveryMs : Math.min(this.policy.renewEveryMs, 2000);
    if (!this.renewing && now - this.lastSentAt >= due) void this.renewNow();
  }

  private async renewNow(): Promise<void> {
    this.renewing = true;
    const sentAt = this.clock.now();
    this.lastSentAt = sentAt;
    try {
      const outcome = await this.lease.renew();
      if (outcome.kind === 'lost') {
        this.newHolder = outcome.holder;
        this.become('lost');
        return;
      }
      this.confirmedAt = Math.max(this.confirmedAt, sentAt);
      // From endangered (never from lost: a fenced write may have come while this renewal was out).
      if (this.clock.now() - this.confirmedAt < this.policy.stopAfterMs) this.become('held');
    } catch {
      // No answer: the next tick tries again, and the age of the last confirmation decides.
    } finally {
      this.renewing = false;
    }
  }

  private become(state: OwnershipState): void {
    // Lost is final; every other change is heard once.
    if (this.current === 'lost' || this.current === state) return;
    this.current = state;
    for (const listener of [...this.listeners]) {
      try {
        listener(state);
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  /** Waits, at most `regainWaitMs`, until the task is certainly ours again or certainly not. */
  regain(): Promise<RegainOutcome> {
    const outcome = (): RegainOutcome | undefined =>
      this.current === 'held'
        ? { kind: 'kept' }
        : this.current === 'lost'
          ? { kind: 'taken', holder: this.newHolder }
          : undefined;
    const settled = outcome();
    if (settled !== undefined) return Promise.resolve(settled);
    return new Promise((resolve) => {
      const done = (result: RegainOutcome) => {
        clearTimeout(timer);
        unsubscribe();
        resolve(result);
      };
      // Referenced: the process is waiting on this, and must not exit under it.
      const timer = setTimeout(() => done(outcome() ?? { kind: 'gave-up' }), this.policy.regainWaitMs);
      const unsubscribe = this.onChange(() => {
        const result = outcome();
        // Stryker disable next-line ConditionalExpression: from endangered the only changes are to held or lost, both settled outcomes
        if (result !== undefined) done(result);
      });
    });
  }
}
