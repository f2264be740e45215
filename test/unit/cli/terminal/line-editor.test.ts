import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LineEditor } from '../../../../src/cli/terminal/line-editor.js';

const encode = (text: string) => new TextEncoder().encode(text);

function typed(...keys: string[]) {
  const editor = new LineEditor();
  const events = keys.flatMap((key) => editor.feed(encode(key)));
  return { editor, events };
}

describe('LineEditor', () => {
  it('submits the typed line on Enter and starts empty again', () => {
    const { editor, events } = typed('h', 'i', '\r');
    expect(events).toEqual([{ kind: 'submit', line: 'hi' }]);
    expect(editor.text).toBe('');
    expect(editor.cursor).toBe(0);
  });

  it('treats LF like CR, and CRLF as one Enter', () => {
    expect(typed('a\n').events).toEqual([{ kind: 'submit', line: 'a' }]);
    expect(typed('a\r\nb\r\n').events).toEqual([
      { kind: 'submit', line: 'a' },
      { kind: 'submit', line: 'b' },
    ]);
    expect(typed('\r', '\r').events).toEqual([
      { kind: 'submit', line: '' },
      { kind: 'submit', line: '' },
    ]);
  });

  it('deletes one character with Backspace, whatever its byte length', () => {
    expect(typed('你好', '\x7f', '\r').events).toEqual([{ kind: 'submit', line: '你' }]);
    expect(typed('ab', '\b', '\r').events).toEqual([{ kind: 'submit', line: 'a' }]);
    expect(typed('\x7f', 'x', '\r').events).toEqual([{ kind: 'submit', line: 'x' }]);
  });

  it('decodes a UTF-8 character split across reads', () => {
    const editor = new LineEditor();
    const bytes = encode('好');
    expect(editor.feed(bytes.slice(0, 1))).toEqual([]);
    expect(editor.feed(bytes.slice(1))).toEqual([]);
    expect(editor.text).toBe('好');
  });

  it('clears the line with Ctrl-U and jumps with Ctrl-A / Ctrl-E', () => {
    expect(typed('abc', '\x15', 'x', '\r').events).toEqual([{ kind: 'submit', line: 'x' }]);
    expect(typed('bc', '\x01', 'a', '\x05', 'd', '\r').events).toEqual([{ kind: 'submit', line: 'abcd' }]);
  });

  it('moves with the arrow keys and edits in the middle', () => {
    const { editor } = typed('ac', '\x1b[D', 'b');
    expect(editor.text).toBe('abc');
    expect(editor.cursor).toBe(2);
    expect(editor.textAfterCursor).toBe('c');
    editor.feed(encode('\x1b[C\x1b[C'));
    expect(editor.cursor).toBe(3);
  });

  it('knows Home/End in their CSI, numbered and SS3 forms, and forward Delete', () => {
    expect(typed('bc', '\x1b[H', 'a', '\x1b[F', 'd', '\r').events[0]).toEqual({
      kind: 'submit',
      line: 'abcd',
    });
    expect(typed('bc', '\x1b[1~', 'a', '\x1b[4~', 'd', '\r').events[0]).toEqual({
      kind: 'submit',
      line: 'abcd',
    });
    expect(typed('bc', '\x1bOH', 'a', '\x1bOF', 'd', '\r').events[0]).toEqual({
      kind: 'submit',
      line: 'abcd',
    });
    expect(typed('abc', '\x1b[H', '\x1b[3~', '\r').events[0]).toEqual({ kind: 'submit', line: 'bc' });
  });

  it('swallows up/down, function keys and Alt chords without inserting anything', () => {
    expect(typed('a', '\x1b[A', '\x1b[B', '\x1b[15~', '\x1bx', 'b', '\r').events).toEqual([
      { kind: 'submit', line: 'ab' },
    ]);
  });

  it('completes an escape sequence split across reads', () => {
    const editor = new LineEditor();
    editor.feed(encode('ab\x1b'));
    editor.feed(encode('['));
    editor.feed(encode('D'));
    expect(editor.cursor).toBe(1);
  });

  it('abandons a runaway escape sequence after 8 characters and goes back to typing', () => {
    const { editor } = typed('\x1b[1;2;3;4', 'xy');
    expect(editor.text).toBe('xy');
  });

  it('reports Ctrl-D on an empty line as end of input, and ignores it otherwise', () => {
    expect(typed('\x04').events).toEqual([{ kind: 'eof' }]);
    expect(typed('a', '\x04', '\r').events).toEqual([{ kind: 'submit', line: 'a' }]);
  });

  it('reports Ctrl-C as an interrupt and keeps the half-typed line', () => {
    const { editor, events } = typed('ab', '\x03');
    expect(events).toEqual([{ kind: 'interrupt' }]);
    expect(editor.text).toBe('ab');
  });

  it('drops other control characters and keeps a pasted tab as a space', () => {
    expect(typed('a\x07\x00b\tc\r').events).toEqual([{ kind: 'submit', line: 'ab c' }]);
  });

  it('returns every line of a multi-line paste', () => {
    expect(typed('one\rtwo\rthr').events).toEqual([
      { kind: 'submit', line: 'one' },
      { kind: 'submit', line: 'two' },
    ]);
  });

  it('accepts any printable text typed without editing keys verbatim', () => {
    const printable = fc.string({ unit: fc.constantFrom('a', 'Z', ' ', '你', '？', '🌸', 'é', '1', '?') });
    fc.assert(
      fc.property(printable, (text) => {
        expect(typed(text, '\r').events).toEqual([{ kind: 'submit', line: text }]);
      }),
    );
  });
});
