import { afterEach, describe, expect, it, vi } from 'vitest';
import { onTerminationSignal, rescuesPending, type TerminationSignal } from '../../../src/runtime/signals.js';

// Re-raising the signal is covered end to end (test/e2e/manifest-signal.test.ts). Here another
// listener stays attached, so the registry leaves ending the process to it and the test survives.
const bystander = () => {};

afterEach(() => {
  process.off('SIGTERM', bystander);
  process.off('SIGHUP', bystander);
});

describe('onTerminationSignal', () => {
  it('listens only while something is registered', () => {
    const before = process.listenerCount('SIGTERM');
    const first = onTerminationSignal(() => {});
    const second = onTerminationSignal(() => {});
    expect(process.listenerCount('SIGTERM')).toBe(before + 1);
    expect(process.listenerCount('SIGHUP')).toBeGreaterThanOrEqual(1);
    first();
    expect(process.listenerCount('SIGTERM')).toBe(before + 1);
    second();
    second();
    expect(process.listenerCount('SIGTERM')).toBe(before);
  });

  it.each(['SIGTERM', 'SIGHUP'] as const)('runs every rescue once on %s, even when one throws', (signal) => {
    process.on(signal, bystander);
    const seen: string[] = [];
    onTerminationSignal(() => {
      throw new Error('disk full');
    });
    const release = onTerminationSignal((received: TerminationSignal) => seen.push(received));
    process.emit(signal, signal);
    process.emit(signal, signal);
    expect(seen).toEqual([signal]);
    release();
    expect(process.listeners(signal)).toEqual([bystander]);
  });

  it('stops listening as soon as its only rescue is released', () => {
    const before = process.listenerCount('SIGHUP');
    const release = onTerminationSignal(() => {});
    expect(process.listenerCount('SIGHUP')).toBe(before + 1);
    release();
    expect(process.listenerCount('SIGHUP')).toBe(before);
    expect(rescuesPending()).toBe(false);
  });

  it.each(['SIGTERM', 'SIGHUP'] as const)(
    'after the rescue, %s takes its normal course: the process raises it to itself again',
    (signal) => {
      // Nobody else listens (whatever the test runner attached is set aside for the moment), so the
      // default behaviour must end the process: the kill is caught here instead of ending the test.
      const others = process.listeners(signal);
      process.removeAllListeners(signal);
      const kill = vi.spyOn(process, 'kill').mockImplementation(() => true);
      try {
        const seen: string[] = [];
        onTerminationSignal(() => seen.push('rescued'));
        process.emit(signal, signal);
        expect(seen).toEqual(['rescued']);
        expect(kill.mock.calls).toEqual([[process.pid, signal]]);
        // With another listener the registry leaves ending the process to it.
        kill.mockClear();
        process.on(signal, bystander);
        onTerminationSignal(() => seen.push('again'))();
        const release = onTerminationSignal(() => seen.push('again'));
        process.emit(signal, signal);
        release();
        expect(seen).toEqual(['rescued', 'again']);
        expect(kill).not.toHaveBeenCalled();
      } finally {
        kill.mockRestore();
        for (const listener of others) process.on(signal, listener as () => void);
      }
    },
  );

  it('does not run a rescue that was released before the signal', () => {
    process.on('SIGTERM', bystander);
    const seen: string[] = [];
    const release = onTerminationSignal(() => seen.push('late'));
    release();
    const keep = onTerminationSignal(() => seen.push('in flight'));
    process.emit('SIGTERM', 'SIGTERM');
    keep();
    expect(seen).toEqual(['in flight']);
  });
});

describe('rescuesPending', () => {
  // What a closed standard output decides on (cli/terminal/closed-output.ts): SIGHUP while a step
  // is in flight, so it is booked as killed; a quiet exit otherwise.
  it('is true exactly while a step has a rescue registered, and false once the signal ran it', () => {
    expect(rescuesPending()).toBe(false);
    const first = onTerminationSignal(() => {});
    const second = onTerminationSignal(() => {});
    expect(rescuesPending()).toBe(true);
    first();
    expect(rescuesPending()).toBe(true);
    second();
    expect(rescuesPending()).toBe(false);

    process.on('SIGHUP', bystander);
    const release = onTerminationSignal(() => {});
    expect(rescuesPending()).toBe(true);
    process.emit('SIGHUP', 'SIGHUP');
    // The step was written as killed: nothing is left for a later signal to rescue.
    expect(rescuesPending()).toBe(false);
    release();
    expect(rescuesPending()).toBe(false);
  });
});
