import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  displayWidth,
  oneLine,
  sanitize,
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

describe('sanitize', () => {
  it('removes colour and cursor sequences a model might emit', () => {
    expect(sanitize('\x1b[31mred\x1b[0m and \x1b[2J\x1b[Hcleared')).toBe('red and cleared');
  });

  it('removes OSC sequences whole, with either terminator, including hyperlinks and title changes', () => {
    expect(sanitize('a\x1b]0;evil title\x07b')).toBe('ab');
    expect(sanitize('a\x1b]8;;https://x.test\x1b\\link\x1b]8;;\x1b\\b')).toBe('alinkb');
  });

  it('removes an unterminated OSC to the end instead of letting it swallow later output', () => {
    expect(sanitize('safe\x1b]52;c;aGVsbG8=')).toBe('safe');
  });

  it('removes DCS/APC strings, two-character escapes, a lone ESC and 8-bit CSI', () => {
    expect(sanitize('x\x1bPq#0;2;0;0;0\x1b\\y')).toBe('xy');
    expect(sanitize('x\x1b_payload\x1b\\y')).toBe('xy');
    expect(sanitize('x\x1bcy\x1b(Bz')).toBe('xyz');
    expect(sanitize('end\x1b')).toBe('end');
    expect(sanitize('a\x9b31mb')).toBe('ab');
  });

  it('turns tabs into spaces, keeps newlines, drops carriage returns and other controls', () => {
    expect(sanitize('a\tb\r\nc\rd\x07e\x00f\x7fg\x85h')).toBe('a b\ncdefgh');
  });

  it('keeps CJK and emoji untouched', () => {
    expect(sanitize('你好，世界 🌸')).toBe('你好，世界 🌸');
  });

  it('never lets an ESC or control character through, whatever the input', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (input) => {
        const output = sanitize(input);
        expect(output).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/);
      }),
    );
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
