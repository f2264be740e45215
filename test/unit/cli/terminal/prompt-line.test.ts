import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { promptRow } from '../../../../src/cli/terminal/prompt-line.js';
import { displayWidth } from '../../../../src/cli/terminal/terminal-text.js';

describe('promptRow', () => {
  it('shows the hint and the input, with the cursor at the end', () => {
    expect(promptRow('> ', 'hello', '', 40)).toEqual({ row: '> hello', cursorLeft: 0 });
  });

  it('moves the cursor back over the text right of it, counting wide characters as two', () => {
    expect(promptRow('> ', 'ab', '你c', 40)).toEqual({ row: '> ab你c', cursorLeft: 3 });
  });

  it('lets the hint shrink to half the row when there is input', () => {
    const { row } = promptRow('a very long hint that explains everything > ', 'typed', '', 40);
    expect(row.endsWith('typed')).toBe(true);
    expect(displayWidth(row)).toBeLessThanOrEqual(39);
  });

  it('scrolls a long input so the cursor stays visible and the row fits', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom('a', '你', ' ') }),
        fc.string({ unit: fc.constantFrom('b', '好') }),
        fc.integer({ min: 40, max: 110 }),
        (before, after, width) => {
          const { row, cursorLeft } = promptRow('answer > ', before, after, width);
          expect(displayWidth(row)).toBeLessThanOrEqual(width - 1);
          // What is right of the cursor is a prefix of the text after it…
          const characters = Array.from(row);
          let shownAfter = '';
          while (displayWidth(shownAfter) < cursorLeft) shownAfter = characters.pop() + shownAfter;
          expect(after.startsWith(shownAfter)).toBe(true);
          // …and the character just left of the cursor is the last one typed before it.
          const lastBefore = Array.from(before).at(-1);
          if (lastBefore !== undefined) expect(characters.at(-1)).toBe(lastBefore);
        },
      ),
    );
  });
});
