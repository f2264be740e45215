import { describe, expect, it } from 'vitest';
import { type CompactMode, CompactPolicy, HandoffPolicy } from '../../../src/config/policies.js';

describe('HandoffPolicy', () => {
  it.each([
    // window, headroom, room, at, warnAt
    [200_000, 0, 50_000, 150_000, 130_000],
    [1_000_000, 0, 250_000, 750_000, 730_000],
    [1_000_000, 50_000, 50_000, 950_000, 930_000],
    [40_000, 25_000, 25_000, 15_000, 1_000],
    [400_000, 0, 100_000, 300_000, 280_000],
    [100_000, 0, 50_000, 50_000, 30_000],
    [30_000, 0, 50_000, 10_000, 1_000],
    [-5, 0, 50_000, 10_000, 1_000],
    [201_001, 0, 50_250, 150_751, 130_751],
  ])('window %d, headroom %d → room %d, at %d, warnAt %d', (window, headroom, room, at, warnAt) => {
    const policy = new HandoffPolicy({ window, headroom });
    expect(policy.room).toBe(room);
    expect(policy.at).toBe(at);
    expect(policy.warnAt).toBe(warnAt);
  });

  it('defaults: enabled, automatic headroom, 8 generations, window from defaultWindow()', () => {
    const saved = { FLOWER_WINDOW: process.env.FLOWER_WINDOW };
    process.env.FLOWER_WINDOW = '300000';
    try {
      const policy = new HandoffPolicy();
      expect(policy).toMatchObject({ enabled: true, headroom: 0, maxGenerations: 8, window: 300_000 });
      expect(policy.at).toBe(225_000);
    } finally {
      if (saved.FLOWER_WINDOW === undefined) delete process.env.FLOWER_WINDOW;
      else process.env.FLOWER_WINDOW = saved.FLOWER_WINDOW;
    }
  });
});

describe('CompactPolicy', () => {
  it.each([
    ['auto', undefined, {}],
    ['no-summary', undefined, { DISABLE_AUTO_COMPACT: '1' }],
    ['off', undefined, { DISABLE_COMPACT: '1' }],
    ['auto', 200_000, { CLAUDE_CODE_AUTO_COMPACT_WINDOW: '200000' }],
    ['no-summary', 500_000, { DISABLE_AUTO_COMPACT: '1', CLAUDE_CODE_AUTO_COMPACT_WINDOW: '500000' }],
  ] as const)('mode %s, window %s → %j', (mode, window, env) => {
    const options = window === undefined ? { mode } : { mode, window };
    expect(new CompactPolicy(options).env()).toEqual(env);
  });

  it('defaults to auto with no variables', () => {
    expect(new CompactPolicy().mode).toBe('auto');
    expect(new CompactPolicy().env()).toEqual({});
  });

  it('an unknown mode (from JavaScript) fails when the variables are computed, naming the valid ones', () => {
    const policy = new CompactPolicy({ mode: 'summarise' as CompactMode });
    expect(() => policy.env()).toThrow(/auto, no-summary, off.*"summarise"/);
  });
});
