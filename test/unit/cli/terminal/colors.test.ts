import { describe, expect, it } from 'vitest';
import { colorEnabled, cursorControlAllowed } from '../../../../src/cli/terminal/colors.js';

describe('colorEnabled', () => {
  it('is on for a terminal and off for a pipe when nothing is set', () => {
    expect(colorEnabled({}, true)).toBe(true);
    expect(colorEnabled({}, false)).toBe(false);
    // A CI log is a file: CI alone does not turn colour on.
    expect(colorEnabled({ CI: 'true' }, false)).toBe(false);
  });

  it('NO_COLOR (any non-empty value) turns it off; an empty NO_COLOR does not', () => {
    expect(colorEnabled({ NO_COLOR: '1' }, true)).toBe(false);
    expect(colorEnabled({ NO_COLOR: 'false' }, true)).toBe(false);
    expect(colorEnabled({ NO_COLOR: '' }, true)).toBe(true);
  });

  it('FORCE_COLOR turns it on, even into a pipe and over NO_COLOR; FORCE_COLOR=0 or false turns it off', () => {
    expect(colorEnabled({ FORCE_COLOR: '1' }, false)).toBe(true);
    expect(colorEnabled({ FORCE_COLOR: '' }, false)).toBe(true);
    expect(colorEnabled({ FORCE_COLOR: '1', NO_COLOR: '1' }, false)).toBe(true);
    expect(colorEnabled({ FORCE_COLOR: '0' }, true)).toBe(false);
    expect(colorEnabled({ FORCE_COLOR: 'false' }, true)).toBe(false);
  });

  it('TERM=dumb turns it off, unless colour is forced', () => {
    expect(colorEnabled({ TERM: 'dumb' }, true)).toBe(false);
    expect(colorEnabled({ TERM: 'dumb', FORCE_COLOR: '1' }, true)).toBe(true);
    expect(colorEnabled({ TERM: 'xterm-256color' }, true)).toBe(true);
  });
});

describe('cursorControlAllowed', () => {
  it('is false only for TERM=dumb', () => {
    expect(cursorControlAllowed({ TERM: 'dumb' })).toBe(false);
    expect(cursorControlAllowed({ TERM: 'xterm' })).toBe(true);
    expect(cursorControlAllowed({})).toBe(true);
  });
});
