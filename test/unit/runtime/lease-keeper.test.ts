/**
 * The lease keeper, on a clock and a lease of the test's own: renewals every period, one at a
 * time; `endangered` when no renewal was confirmed for `stopAfterMs` counted from the *send* of
 * the last confirmed one; `held` again when the same epoch renews (each blip noticed, the second
 * one too); `lost` for good when a renewal or a fenced write says so; `regain` bounded.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LeaseKeeper, type OwnershipState } from '../../../src/runtime/ownership/lease-keeper.js';
import type { RenewOutcome } from '../../../src/store/postgres/task-lease.js';

const policy = { renewEveryMs: 1000, stopAfterMs: 4000, regainWaitMs: 10_000 };

/** A lease whose renewals the test answers one by one. */
class ScriptedLease {
  calls = 0;
  private pending: Array<{ resolve: (outcome: RenewOutcome) => void; reject: (error: Error) => void }> = [];
  renew(): Promise<RenewOutcome> {
    this.calls += 1;
    return new Promise((resolve, reject) => this.pending.push({ resolve, reject }));
  }
  get waiting(): number {
    return this.pending.length;
  }
  answer(outcome: RenewOutcome = { kind: 'renewed' }): void {
    this.pending.shift()?.resolve(outcome);
  }
  fail(): void {
    this.pending.shift()?.reject(new Error('connection timeout'));
  }
}

let now = 0;
const clock = { now: () => now };
let lease: ScriptedLease;
let keeper: LeaseKeeper;
let states: OwnershipState[];

/** Moves the clock and the timers together, letting answered renewals settle. */
async function advance(ms: number): Promise<void> {
  for (let step = 0; step < ms; step += 250) {
    now += 250;
    await vi.advanceTimersByTimeAsync(250);
  }
}

beforeEach(() => {
  vi.useFakeTimers();
  now = 0;
  lease = new ScriptedLease();
  keeper = new LeaseKeeper(lease, policy, clock);
  states = [];
  keeper.onChange((state) => states.push(state));
  keeper.start();
});

afterEach(() => {
  keeper.stop();
  vi.useRealTimers();
});

describe('the lease keeper', () => {
  it('renews once a period, never two at a time, and stays held while renewals are confirmed', async () => {
    await advance(1000);
    expect(lease.calls).toBe(1);
    await advance(2000);
    // The first renewal is unanswered: no second one piles on it.
    expect(lease.calls).toBe(1);
    lease.answer();
    await advance(250);
    expect(lease.calls).toBe(2);
    lease.answer();
    await advance(750);
    expect(lease.calls).toBe(2);
    await advance(250);
    expect(lease.calls).toBe(3);
    lease.answer();
    await advance(3000);
    for (let i = 0; i < 3; i += 1) {
      lease.answer();
      await advance(1000);
    }
    expect(keeper.state).toBe('held');
    expect(states).toEqual([]);
  });

  it('is endangered after stopAfterMs without a confirmation, and held again when the same epoch renews', async () => {
    await advance(1000);
    lease.fail();
    await advance(2750);
    expect(keeper.state).toBe('held');
    await advance(250);
    // 4 s since the grant, the last confirmation.
    expect(keeper.state).toBe('endangered');
    for (let tick = 0; lease.waiting === 0 && tick < 100; tick += 1) await advance(250);
    lease.answer();
    await advance(250);
    expect(keeper.state).toBe('held');
    // A second blip, and its end, are noticed like the first.
    for (let waited = 0; keeper.state === 'held' && waited < 10_000; waited += 250) {
      if (lease.waiting > 0) lease.fail();
      await advance(250);
    }
    for (let tick = 0; lease.waiting === 0 && tick < 100; tick += 1) await advance(250);
    lease.answer();
    await advance(250);
    expect(states).toEqual(['endangered', 'held', 'endangered', 'held']);
  });

  it('counts from when the confirmed renewal was sent, not from when its answer came', async () => {
    await advance(1000);
    expect(lease.waiting).toBe(1);
    // The answer to the renewal sent at 1 s takes 2.5 s to come.
    await advance(2500);
    lease.answer();
    await advance(250);
    // Endangered 4 s after that renewal was sent (5 s), not 4 s after its answer (7.5 s).
    while (lease.waiting > 0) lease.fail();
    await advance(1000);
    expect(now).toBe(4750);
    while (lease.waiting > 0) lease.fail();
    await advance(250);
    expect(keeper.state).toBe('endangered');
  });

  it('is lost for good when a renewal finds another epoch, naming the new holder', async () => {
    await advance(1000);
    const holder = { pid: 42, host: 'machine-b', startedAt: '2026-12-04T00:00:00.000Z' };
    lease.answer({ kind: 'lost', holder });
    await advance(250);
    expect(keeper.state).toBe('lost');
    expect(keeper.takenBy).toEqual(holder);
    await advance(5000);
    expect(lease.calls).toBe(1);
    expect(states).toEqual(['lost']);
    await expect(keeper.regain()).resolves.toEqual({ kind: 'taken', holder });
  });

  it('stays lost when a renewal sent before a fenced write answers that it renewed', async () => {
    await advance(1000);
    expect(lease.waiting).toBe(1);
    keeper.fencedOut();
    lease.answer();
    await advance(250);
    expect(keeper.state).toBe('lost');
    expect(states).toEqual(['lost']);
  });

  it('is lost when a write was fenced', async () => {
    keeper.fencedOut();
    expect(keeper.state).toBe('lost');
    expect(states).toEqual(['lost']);
  });

  it('regain waits for the answer, and gives up after regainWaitMs', async () => {
    await advance(1000);
    lease.fail();
    await advance(3000);
    expect(keeper.state).toBe('endangered');
    const kept = keeper.regain();
    for (let tick = 0; lease.waiting === 0 && tick < 100; tick += 1) await advance(250);
    lease.answer();
    await advance(250);
    await expect(kept).resolves.toEqual({ kind: 'kept' });

    for (let tick = 0; keeper.state === 'held' && tick < 100; tick += 1) {
      if (lease.waiting > 0) lease.fail();
      await advance(250);
    }
    const given = keeper.regain();
    let settled: unknown;
    void given.then((outcome) => {
      settled = outcome;
    });
    for (let waited = 0; waited < 9500; waited += 250) {
      if (lease.waiting > 0) lease.fail();
      await advance(250);
    }
    expect(settled).toBeUndefined();
    await advance(750);
    expect(settled).toEqual({ kind: 'gave-up' });
  });

  it('a throwing listener does not keep the others from hearing', async () => {
    const heard: OwnershipState[] = [];
    keeper.onChange(() => {
      throw new Error('listener failed');
    });
    keeper.onChange((state) => heard.push(state));
    keeper.fencedOut();
    expect(heard).toEqual(['lost']);
  });
});

describe('the lease keeper, over longer and shorter periods', () => {
  const long = { renewEveryMs: 10_000, stopAfterMs: 40_500, regainWaitMs: 60_000 };

  it('renews once per renewEveryMs while held, and every 2 s while endangered', async () => {
    keeper.stop();
    const own = new LeaseKeeper(lease, long, clock);
    own.start();
    try {
      await advance(9750);
      expect(lease.calls).toBe(0);
      await advance(250);
      expect(lease.calls).toBe(1);
      lease.fail();
      await advance(10_000);
      expect(lease.calls).toBe(2);
      lease.fail();
      // Endangered within a second of 40.5 s without a confirmation (the grant at 0).
      while (now < 41_000) {
        if (lease.waiting > 0) lease.fail();
        await advance(250);
      }
      expect(own.state).toBe('endangered');
      const before = lease.calls;
      for (let waited = 0; waited < 6000; waited += 250) {
        if (lease.waiting > 0) lease.fail();
        await advance(250);
      }
      expect(lease.calls - before).toBe(3);
    } finally {
      own.stop();
    }
  });

  it('a renewal answered stopAfterMs or later after it was sent does not make it held', async () => {
    await advance(1000);
    expect(lease.waiting).toBe(1);
    await advance(3000);
    expect(keeper.state).toBe('endangered');
    await advance(1000);
    // Sent at 1 s, answered at 5 s: the lease it confirms may already be running out.
    expect(now).toBe(5000);
    lease.answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(keeper.state).toBe('endangered');
    // The next renewal, sent and answered at once, does.
    for (let tick = 0; lease.waiting === 0 && tick < 100; tick += 1) await advance(250);
    lease.answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(keeper.state).toBe('held');
    expect(states).toEqual(['endangered', 'held']);
  });

  it('a very short renewal period does not make the check spin: at most one check per 50 ms', async () => {
    keeper.stop();
    let reads = 0;
    const counting = {
      now: () => {
        reads += 1;
        return now;
      },
    };
    const own = new LeaseKeeper(lease, { renewEveryMs: 100, stopAfterMs: 400, regainWaitMs: 1000 }, counting);
    own.start();
    try {
      await advance(100);
      // The renewal sent at 100 ms stays unanswered: from here on every read is a check.
      reads = 0;
      await advance(1000);
      expect(reads).toBeLessThanOrEqual(21);
    } finally {
      own.stop();
    }
  });

  it('stop ends its timers, even after a second start', async () => {
    keeper.start();
    keeper.stop();
    await advance(10_000);
    expect(lease.calls).toBe(0);
    expect(keeper.state).toBe('held');
  });

  it('an unsubscribed listener hears nothing more; a second fenced write changes nothing', async () => {
    const heard: OwnershipState[] = [];
    const unsubscribe = keeper.onChange((state) => heard.push(state));
    unsubscribe();
    keeper.fencedOut();
    keeper.fencedOut();
    expect(heard).toEqual([]);
    expect(states).toEqual(['lost']);
  });

  it('without a clock of its own it counts in real time', async () => {
    keeper.stop();
    vi.useRealTimers();
    const silent = { renew: () => new Promise<RenewOutcome>(() => {}) };
    const own = new LeaseKeeper(silent, { renewEveryMs: 50, stopAfterMs: 200, regainWaitMs: 1000 });
    own.start();
    try {
      expect(own.state).toBe('held');
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(own.state).toBe('endangered');
    } finally {
      own.stop();
    }
  });
});
