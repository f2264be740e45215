import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { parseDirectory, wholeNumberAtLeast } from '../../../../src/cli/command-line/flag-values.js';

describe('wholeNumberAtLeast', () => {
  const rounds = wholeNumberAtLeast(1, '--rounds 3');

  it('accepts whole numbers from the minimum up', () => {
    expect(rounds('1')).toBe(1);
    expect(rounds('12')).toBe(12);
  });

  it('refuses numbers below the minimum, with an example of a right one', () => {
    expect(() => rounds('0')).toThrow(InvalidArgumentError);
    expect(() => rounds('0')).toThrow('it must be at least 1, e.g. --rounds 3.');
    expect(() => rounds('-5')).toThrow('at least 1');
  });

  it('refuses what is not a whole number', () => {
    expect(() => rounds('2.5')).toThrow('expected a whole number.');
    expect(() => rounds('three')).toThrow('expected a whole number.');
  });
});

describe('parseDirectory', () => {
  it('takes any path, relative, absolute or with odd characters', () => {
    expect(parseDirectory('proj')).toBe('proj');
    expect(parseDirectory('/tmp/x y')).toBe('/tmp/x y');
    expect(parseDirectory('./-weird')).toBe('./-weird');
  });

  it('refuses an option in the place of the directory, and an empty one', () => {
    expect(() => parseDirectory('--new')).toThrow(
      /that is an option, not a directory: the directory is missing/,
    );
    expect(() => parseDirectory('-v')).toThrow(InvalidArgumentError);
    expect(() => parseDirectory('')).toThrow('give a directory');
  });
});
