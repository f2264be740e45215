import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatCheck, formatTimeLimit, parseTimeLimit, readCheck } from '../../../src/checks/syntax.js';

describe('check syntax of a checklist item', () => {
  it('reads a command in a code span at the end of the item, and the description before it', () => {
    expect(readCheck('the tests pass — check: `npm test`')).toEqual({
      kind: 'check',
      description: 'the tests pass',
      command: 'npm test',
    });
    expect(readCheck('binary is Mach-O - Check: `file dist/app | grep -q Mach-O`.')).toMatchObject({
      kind: 'check',
      description: 'binary is Mach-O',
      command: 'file dist/app | grep -q Mach-O',
    });
  });

  it('takes a time limit in parentheses: ms, s, m, h, or a bare number of seconds', () => {
    expect(readCheck('server answers — check (2m): `curl -sf localhost:8080`')).toMatchObject({
      timeoutMs: 120_000,
    });
    expect(readCheck('x check (90): `true`')).toMatchObject({ timeoutMs: 90_000 });
    expect(readCheck('x check (timeout 1.5h): `true`')).toMatchObject({ timeoutMs: 5_400_000 });
    expect(parseTimeLimit('250ms')).toBe(250);
    expect(parseTimeLimit('0s')).toBeUndefined();
    expect(parseTimeLimit('forever')).toBeUndefined();
    expect(parseTimeLimit('25h')).toBeUndefined();
    expect(formatTimeLimit(120_000)).toBe('2m');
    expect(formatTimeLimit(1500)).toBe('1500ms');
    expect(parseTimeLimit('2M')).toBe(120_000); // units in any case
  });

  it('a marker that fails early in the item does not hide the check that ends it', () => {
    expect(readCheck('the docs mention check: `x` in passing — check: `npm test`')).toEqual({
      kind: 'check',
      description: 'the docs mention check: `x` in passing',
      command: 'npm test',
    });
  });

  it('lets a command hold backticks when the span uses more of them, as markdown does', () => {
    expect(readCheck('dated — check: `` echo `date` ``')).toMatchObject({ command: 'echo `date`' });
    // A command that itself mentions a check is still one command.
    expect(readCheck('meta — check: ``grep -q "check: `x`" goal.md``')).toMatchObject({
      command: 'grep -q "check: `x`" goal.md',
    });
  });

  it('leaves prose alone: "check:" without a code span is a judgement item', () => {
    expect(readCheck('the README explains the check: it is manual')).toEqual({ kind: 'none' });
    expect(readCheck('a paycheck: `ignored` because paycheck is another word')).toEqual({ kind: 'none' });
    expect(readCheck('hello.py exists')).toEqual({ kind: 'none' });
  });

  it('reports what is wrong with a check it cannot read, instead of treating it as prose', () => {
    expect(readCheck('tests — check: `npm test')).toMatchObject({
      kind: 'malformed',
      problem: expect.stringContaining('not closed'),
    });
    expect(readCheck('tests — check: `  `')).toMatchObject({
      kind: 'malformed',
      problem: 'the command is empty',
    });
    expect(readCheck('tests — check (soon): `npm test`')).toMatchObject({
      kind: 'malformed',
      problem: expect.stringContaining('"soon" is not a time limit'),
    });
    expect(readCheck('tests — check: `npm test` and look at it')).toMatchObject({
      kind: 'malformed',
      description: 'tests',
      problem: expect.stringContaining('must end the item'),
    });
  });

  it('reads back exactly what it writes, for any description, command and limit', () => {
    const description = fc
      .string({
        unit: fc.constantFrom('a', 'b', ' ', '`', ':', '—', 'c', 'h', 'e', 'k', '(', ')', 'é', '1'),
        maxLength: 30,
      })
      .map((text) => text.replace(/[\s—–\-:;,]+$/u, '').trim());
    const command = fc
      .string({
        unit: fc.constantFrom('a', 'b', ' ', '`', '|', '"', "'", '$', 'c', 'h', 'e', 'k', ':', '\\'),
        minLength: 1,
        maxLength: 30,
      })
      .filter((text) => text.trim() !== '');
    const limit = fc.option(fc.integer({ min: 1, max: 86_400_000 }), { nil: undefined });
    fc.assert(
      fc.property(description, command, limit, (text, cmd, timeoutMs) => {
        const check = { description: text, command: cmd, ...(timeoutMs === undefined ? {} : { timeoutMs }) };
        expect(readCheck(formatCheck(check))).toEqual({ kind: 'check', ...check });
      }),
      { seed: 1313, numRuns: 400 },
    );
  });
});
