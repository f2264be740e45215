import fc from 'fast-check';
import stringWidth from 'string-width';
import { describe, expect, it } from 'vitest';
import {
  displayWidth,
  oneLine,
  terminalWidth,
  truncate,
  wrap,
} from '../../../../src/cli/terminal/terminal-text.js';

describe('terminalWidth', () => {
  it('clamps the terminal columns into 40..110', () => {
    expect(terminalWidth(20)).toBe(40);
    expect(terminalWidth(80)).toBe(80);
    expect(terminalWidth(300)).toBe(110);
  });

  it('falls back to 80 columns when the output is not a terminal', () => {
    expect(terminalWidth(undefined)).toBe(80);
    expect(terminalWidth(0)).toBe(80);
  });
});

describe('oneLine', () => {
  it('collapses whitespace and newlines into single spaces', () => {
    expect(oneLine('  npm\n  test\t-- --watch  ')).toBe('npm test -- --watch');
  });
});

describe('displayWidth', () => {
  it('counts CJK and full-width characters as two columns', () => {
    expect(displayWidth('abc')).toBe(3);
    expect(displayWidth('你好')).toBe(4);
    expect(displayWidth('？')).toBe(2);
  });

  it('counts East Asian ambiguous characters as two columns', () => {
    expect(displayWidth('§')).toBe(2);
  });

  // Plain ASCII is measured without the library (see terminal-text.ts): the two must agree on it,
  // and text with anything else in it (a control character, a tab, DEL) goes to the library.
  it('measures plain ASCII as string-width does, and anything else with string-width', () => {
    const plain = fc.string({
      unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)),
    });
    const near = fc.string({ unit: fc.constantFrom('a', ' ', '\t', '\x7f', '\x1b', '\u00ad', '§', 'é') });
    fc.assert(
      fc.property(fc.oneof(plain, near), (text) => {
        expect(displayWidth(text)).toBe(stringWidth(text, { ambiguousIsNarrow: false }));
      }),
    );
    expect(displayWidth('a\x7fb\tc')).toBe(3);
  });
});

describe('truncate', () => {
  it('leaves text that fits alone', () => {
    expect(truncate('hello', 5)).toBe('hello');
  });

  it('cuts with ... and never exceeds the width, even in the middle of wide characters', () => {
    expect(truncate('hello world', 8)).toBe('hello...');
    const cut = truncate('你好世界你好世界', 8);
    expect(cut).toBe('你好...');
    expect(displayWidth(cut)).toBeLessThanOrEqual(8);
  });
});

describe('wrap', () => {
  it('breaks Latin text between words', () => {
    expect(wrap('the quick brown fox jumps', 10)).toEqual(['the quick', 'brown fox', 'jumps']);
  });

  it('breaks CJK text between any two characters', () => {
    expect(wrap('一二三四五六七八', 6)).toEqual(['一二三', '四五六', '七八']);
  });

  it('never starts a line with closing punctuation', () => {
    const lines = wrap('一二三。四五', 6);
    expect(lines[0]).toBe('一二');
    expect(lines[1]).toBe('三。四');
    for (const line of wrap('alpha beta, gamma delta.', 11)) {
      expect(line[0]).not.toMatch(/[,.]/);
    }
  });

  it('puts the marker on the first line only and indents the rest under it', () => {
    expect(wrap('one two three four', 12, { firstPrefix: '  + ' })).toEqual([
      '  + one two',
      '    three',
      '    four',
    ]);
  });

  it('keeps paragraph breaks and empty lines', () => {
    expect(wrap('a\n\nb', 20, { firstPrefix: '> ' })).toEqual(['> a', '  ', '  b']);
  });

  it('hard-breaks a word longer than the line', () => {
    expect(wrap('abcdefghij', 4)).toEqual(['abcd', 'efgh', 'ij']);
  });

  it('never produces a line wider than the width', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'b', ' ', '你', '。', ',', '\n', '🌸', 'é') });
    fc.assert(
      fc.property(text, fc.integer({ min: 6, max: 40 }), (input, width) => {
        for (const line of wrap(input, width, { firstPrefix: '  * ' })) {
          expect(displayWidth(line)).toBeLessThanOrEqual(width);
        }
      }),
    );
  });

  it('loses no non-space character', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'b', ' ', '你', '。', ',', '🌸') });
    fc.assert(
      fc.property(text, fc.integer({ min: 6, max: 30 }), (input, width) => {
        const joined = wrap(input, width).join('').replace(/ /g, '');
        expect(joined).toBe(input.replace(/ /g, ''));
      }),
    );
  });
});
