import { describe, expect, it } from 'vitest';
import { compactTimestamp, newRunId } from '../../../src/runtime/run-id.js';

describe('run ids', () => {
  it('are local time YYYYmmdd-HHMMSS plus six hex digits', () => {
    const at = new Date(2026, 10, 30, 1, 2, 3);
    expect(newRunId(at, () => 'a1b2c3')).toBe('20261130-010203-a1b2c3');
    expect(compactTimestamp(at)).toBe('20261130-010203');
  });

  it('differ between processes started in the same second', () => {
    const at = new Date();
    const ids = new Set(Array.from({ length: 200 }, () => newRunId(at)));
    expect(ids.size).toBe(200);
    for (const id of ids) expect(id).toMatch(/^\d{8}-\d{6}-[0-9a-f]{6}$/);
  });
});
