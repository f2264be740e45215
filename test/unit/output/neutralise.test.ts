import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { holdsUnsafeCharacters, neutralise, oneLine } from '../../../src/output/neutralise.js';

// Everything a terminal could interpret: C0 but newline, DEL, C1, the bidi set, U+2028/2029.
const UNSAFE = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/;

describe('neutralise', () => {
  it('shows an escape sequence as text: ESC and BEL become their control pictures', () => {
    expect(neutralise('a\x1b]0;evil title\x07b')).toBe('a␛]0;evil title␇b');
    expect(neutralise('\x1b[2J\x1b[H')).toBe('␛[2J␛[H');
    expect(neutralise('\x1b]52;c;aGVsbG8=\x1b\\')).toBe('␛]52;c;aGVsbG8=␛\\');
    expect(neutralise('\x1b]8;;https://x.test\x1b\\link\x1b]8;;\x1b\\')).toBe(
      '␛]8;;https://x.test␛\\link␛]8;;␛\\',
    );
  });

  it('shows C1 controls (8-bit CSI, OSC, NEL) and DEL as code points', () => {
    expect(neutralise('a\x9b31mb')).toBe('a[U+009B]31mb');
    expect(neutralise('\x9d0;t\x9c')).toBe('[U+009D]0;t[U+009C]');
    expect(neutralise('x\x7fy\x85z')).toBe('x\u2421y[U+0085]z');
  });

  it('shows every bidirectional control and the line/paragraph separators as code points', () => {
    for (const code of [
      0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x2028,
      0x2029,
    ]) {
      const shown = neutralise(`a${String.fromCodePoint(code)}b`);
      expect(shown).toBe(`a[U+${code.toString(16).toUpperCase().padStart(4, '0')}]b`);
    }
  });

  it('shows every C0 control but tab and newline as its control picture, from NUL to the unit separator', () => {
    for (let code = 0; code <= 0x1f; code += 1) {
      if (code === 0x09 || code === 0x0a) continue;
      expect(neutralise(`a${String.fromCodePoint(code)}b`)).toBe(`a${String.fromCodePoint(0x2400 + code)}b`);
    }
  });

  it('keeps newlines, turns CRLF into LF and a tab into a space, shows a lone CR and NUL', () => {
    expect(neutralise('a\tb\r\nc\rd\x00e')).toBe('a b\nc␍d␀e');
  });

  it('leaves ordinary text, CJK and emoji untouched', () => {
    expect(neutralise('你好，世界 🌸 café ✓')).toBe('你好，世界 🌸 café ✓');
  });

  it('never lets an unsafe character through, and is idempotent, whatever the input', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (input) => {
        const output = neutralise(input);
        expect(output).not.toMatch(UNSAFE);
        expect(neutralise(output)).toBe(output);
        expect(holdsUnsafeCharacters(output)).toBe(false);
      }),
    );
  });

  it('holdsUnsafeCharacters tells raw text from neutralised text', () => {
    expect(holdsUnsafeCharacters('plain\nlines\r\n')).toBe(false);
    expect(holdsUnsafeCharacters('a\x1bb')).toBe(true);
    expect(holdsUnsafeCharacters('a\u202eb')).toBe(true);
    expect(holdsUnsafeCharacters('a\x9bb')).toBe(true);
  });
});

describe('oneLine', () => {
  it('collapses whitespace and newlines into single spaces, after neutralising', () => {
    expect(oneLine('  npm\n  test\t-- --watch  ')).toBe('npm test -- --watch');
    expect(oneLine('a\x07\nb')).toBe('a␇ b');
  });
});
