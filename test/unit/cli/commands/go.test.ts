import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { parseInteger, parseWaitSeconds } from '../../../../src/cli/commands/go.js';
import { tildePath, wakeBanner } from '../../../../src/cli/commands/go-action.js';

describe('go flag values', () => {
  it('accepts whole numbers, negative ones included, for --asks/--rounds/--window', () => {
    expect(parseInteger('3')).toBe(3);
    expect(parseInteger('-1')).toBe(-1);
    expect(() => parseInteger('2.5')).toThrow(InvalidArgumentError);
    expect(() => parseInteger('many')).toThrow('expected a whole number.');
  });

  it('takes --timeout from 0 ("never wait") to the longest a timer holds', () => {
    expect(parseWaitSeconds('1800')).toBe(1800);
    expect(parseWaitSeconds('0.5')).toBe(0.5);
    expect(parseWaitSeconds('0')).toBe(0);
    expect(parseWaitSeconds('2147483')).toBe(2147483);
  });

  it('refuses a negative, non-numeric or overlong --timeout, naming the allowed values', () => {
    for (const value of ['-5', '-0.1', 'soon', '', 'NaN', 'Infinity', '2147484'])
      expect(() => parseWaitSeconds(value), value).toThrow(InvalidArgumentError);
    expect(() => parseWaitSeconds('-5')).toThrow(
      'give the seconds a question waits for an answer, from 0 (never wait) to 2147483 (about 24 days), e.g. --timeout 600.',
    );
  });
});

describe('wake banner', () => {
  const state = {
    waking: true,
    brief: '',
    goal: '',
    items: 3,
    hostChecks: 0,
    pendingRemark: '',
    checks: 3,
    woke: 1,
    steps: {},
    goalStatement: 'hello.py prints hello',
    spend: { stepsUsd: 0, asidesUsd: 0, totalUsd: 0, archivedUsd: 0, runs: 0, lastActivity: 0 },
  };

  it('shortens the home directory to ~', () => {
    expect(tildePath('/home/ada/proj', '/home/ada')).toBe('~/proj');
    expect(tildePath('/home/adam/proj', '/home/ada')).toBe('/home/adam/proj');
  });

  it('says what is settled, the work context when known, and which wake this is', () => {
    expect(wakeBanner('/srv/proj', state, 71_400)).toBe(
      '<- continuing in /srv/proj  brief confirmed · goal: 3 items · work context 71.4K · wake 2',
    );
    // Items are counted as items; only those with a command are checks (issue 21).
    expect(wakeBanner('/srv/proj', { ...state, hostChecks: 1 }, 0)).toBe(
      '<- continuing in /srv/proj  brief confirmed · goal: 3 items (1 checked by flower) · wake 2',
    );
    expect(wakeBanner('/srv/proj', { ...state, items: 1, checks: 1, hostChecks: 1 }, 0)).toBe(
      '<- continuing in /srv/proj  brief confirmed · goal: 1 item (1 checked by flower) · wake 2',
    );
    expect(wakeBanner('/srv/proj', { ...state, items: 0, checks: 0 }, 0)).toBe(
      '<- continuing in /srv/proj  brief confirmed · wake 2',
    );
  });
});
