import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { parseBudgetUsd, parseStallRounds } from '../../../../src/cli/command-line/task-limits.js';

describe('--budget and --stall values', () => {
  it('takes a positive number of dollars, with or without the $', () => {
    expect(parseBudgetUsd('5')).toBe(5);
    expect(parseBudgetUsd('$0.50')).toBe(0.5);
    for (const bad of ['0', '-1', 'lots', '', 'Infinity'])
      expect(() => parseBudgetUsd(bad)).toThrow(InvalidArgumentError);
  });

  it('takes 0 (no brake) or a whole number of rounds from 2 up', () => {
    expect(parseStallRounds('0')).toBe(0);
    expect(parseStallRounds('3')).toBe(3);
    for (const bad of ['1', '2.5', '-2', 'x']) expect(() => parseStallRounds(bad)).toThrow(/2 or more/);
  });
});
