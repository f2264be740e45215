import { describe, expect, it } from 'vitest';
import { formatElapsed, formatTokens, formatTurns } from '../../../../src/cli/terminal/format.js';

describe('formatting helpers', () => {
  it('says "1 turn" but "2 turns"', () => {
    expect(formatTurns(1)).toBe('1 turn');
    expect(formatTurns(2)).toBe('2 turns');
    expect(formatTurns(0)).toBe('0 turns');
  });

  it('formats elapsed time as m:ss, and h:mm:ss from an hour on', () => {
    expect(formatElapsed(0)).toBe('0:00');
    expect(formatElapsed(61_000)).toBe('1:01');
    expect(formatElapsed(3_723_000)).toBe('1:02:03');
  });

  it('formats tokens in thousands with one decimal', () => {
    expect(formatTokens(36_812)).toBe('36.8K');
  });
});
