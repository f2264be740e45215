import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import {
  closestName,
  type KnownName,
  knownNames,
  mistypedCommandMessage,
} from '../../../../src/cli/command-line/mistyped-command.js';

/** The names as they will be once `status`, `report` and `log` are registered too. */
const NAMES: KnownName[] = [
  ...['go', 'run', 'setup', 'doctor', 'once', 'demo', 'status', 'report', 'log', 'help'].map((word) => ({
    word,
    suggestion: word,
  })),
  { word: 'version', suggestion: '--version' },
];
const guess = (word: string) => closestName(word, NAMES)?.suggestion;

describe('closestName', () => {
  it('finds a command typed exactly, in any case', () => {
    expect(guess('status')).toBe('status');
    expect(guess('Status')).toBe('status');
    expect(guess('  log ')).toBe('log');
  });

  it('counts a swap of two letters as one slip', () => {
    expect(guess('stauts')).toBe('status');
    expect(guess('reprot')).toBe('report');
    expect(guess('ocne')).toBe('once');
    expect(guess('olg')).toBe('log');
  });

  it('on a tie takes the name registered first', () => {
    // One slip from both "go" (a letter too many) and "log" (two letters swapped).
    expect(guess('lgo')).toBe('go');
  });

  it('takes two slips for longer names, one for names of up to four letters', () => {
    expect(guess('doctr')).toBe('doctor');
    expect(guess('dcotr')).toBe('doctor');
    expect(guess('statsu')).toBe('status');
    expect(guess('demos')).toBe('demo');
    expect(guess('hello')).toBeUndefined(); // two slips from "help": a word, not a typo
    expect(guess('domo')).toBe('demo');
    expect(guess('dmeos')).toBeUndefined();
  });

  it('suggests the flag for a bare "version"', () => {
    expect(guess('version')).toBe('--version');
    expect(guess('verison')).toBe('--version');
  });

  it('leaves real one-word requests and anything with a space alone', () => {
    for (const request of ['refactor', 'deploy', 'tests', 'lint', 'build', 'fix the status', 'status?'])
      expect(guess(request)).toBeUndefined();
  });
});

describe('knownNames', () => {
  it('reads the subcommands, their aliases, help and --version from the program', () => {
    const program = new Command('flower').version('1.0.0', '-V, --version').option('-v, --verbose');
    program.command('status').alias('st');
    program.command('report');
    expect(knownNames(program)).toEqual([
      { word: 'status', suggestion: 'status' },
      { word: 'st', suggestion: 'st' },
      { word: 'report', suggestion: 'report' },
      { word: 'help', suggestion: 'help' },
      { word: 'version', suggestion: '--version' },
    ]);
  });
});

describe('mistypedCommandMessage', () => {
  it('says what was meant and how to send the word as a request anyway', () => {
    expect(mistypedCommandMessage(['stauts'], NAMES)).toBe(
      'unknown command "stauts" — did you mean "status"? To send "stauts" to the agent as the request, type: flower go stauts',
    );
    expect(mistypedCommandMessage(['fix', 'it'], NAMES)).toBeUndefined();
    expect(mistypedCommandMessage([], NAMES)).toBeUndefined();
  });
});
