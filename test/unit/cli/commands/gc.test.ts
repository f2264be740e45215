/**
 * `flower gc`'s command line: the age it accepts and the block it prints.
 */
import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { parseAge } from '../../../../src/cli/commands/gc.js';
import { gcLines } from '../../../../src/cli/commands/gc-action.js';
import type { StoreOutcome } from '../../../../src/runtime/retention/collect.js';

const DAY = 86_400_000;

describe('parseAge', () => {
  it('reads whole days and hours, zero included', () => {
    expect(parseAge('30d')).toBe(30 * DAY);
    expect(parseAge('12h')).toBe(12 * 3_600_000);
    expect(parseAge(' 0d ')).toBe(0);
  });

  it.each(['30', '1.5d', '-1d', '3w', 'd', '', '30 d'])('refuses %j with what to type instead', (value) => {
    expect(() => parseAge(value)).toThrow(InvalidArgumentError);
    expect(() => parseAge(value)).toThrow(/e\.g\. --older-than 30d or 12h/);
  });
});

const outcome = (label: string, retired: string[], entries: number, bytes: number): StoreOutcome => ({
  label,
  freed: {
    retired: { sessions: retired, transcripts: retired.length, entries, bytes },
    aside: { sessions: [], transcripts: 0, entries: 0, bytes: 0 },
    archived: { sessions: [], transcripts: 0, entries: 0, bytes: 0 },
  },
  kept: { live: ['s-live'], recent: [], unclaimed: [] },
});

describe('gcLines', () => {
  it('counts a session held by two stores once and adds up what each freed', () => {
    const lines = gcLines(
      [outcome('runs/sessions.db', ['s-1'], 10, 2048), outcome('postgres://h/db', ['s-1'], 10, 2048)],
      30 * DAY,
      false,
    );
    expect(lines[0]).toBe('gc: dropped 1 session no resume can reach, last written over 30 days ago');
    expect(lines[1]).toMatch(
      /^ {2}retired handoff generations +1 session, 2 transcripts, 20 entries, 4\.0 KB$/,
    );
    expect(lines).toContain(
      '  kept: 1 a lineage still resumes, 0 newer than the limit, 0 of no known kind; manifest rows kept (the books)',
    );
    expect(lines).toContain('  stores: runs/sessions.db, postgres://h/db');
  });

  it('says a dry run changed nothing, and names hours', () => {
    const lines = gcLines([outcome('runs/sessions.db', ['s-1'], 3, 100)], 12 * 3_600_000, true);
    expect(lines[0]).toBe('gc: would drop 1 session no resume can reach, last written over 12 hours ago');
    expect(lines.at(-1)).toBe('  nothing was changed (--dry-run); run flower gc without it to drop them');
  });
});
