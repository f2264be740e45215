import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BLOCK_BEGIN,
  BLOCK_END,
  placeBlock,
  readBlock,
  writeManagedFile,
} from '../../../src/bequest/managed-block.js';

const BODY = '## Left by flower\n\nsomething useful';

describe('placeBlock', () => {
  it('creates the block in an empty or missing file', () => {
    const expected = `${BLOCK_BEGIN}\n${BODY}\n${BLOCK_END}\n`;
    expect(placeBlock(undefined, BODY)).toEqual({ text: expected, placement: 'created' });
    expect(placeBlock('  \n\n', BODY).text).toBe(expected);
  });

  it('appends after user content that has no markers, and replaces in place on the next write', () => {
    const user = '# My project\n\nUse pnpm, not npm.\n';
    const first = placeBlock(user, BODY);
    expect(first.placement).toBe('appended');
    expect(first.text).toBe(`# My project\n\nUse pnpm, not npm.\n\n${BLOCK_BEGIN}\n${BODY}\n${BLOCK_END}\n`);
    const second = placeBlock(first.text, 'new body');
    expect(second.placement).toBe('replaced');
    expect(second.text).toBe(
      `# My project\n\nUse pnpm, not npm.\n\n${BLOCK_BEGIN}\nnew body\n${BLOCK_END}\n`,
    );
  });

  it('replaces only between one clean pair, keeping the text before and after it', () => {
    const text = `intro\n\n${BLOCK_BEGIN}\nold\n${BLOCK_END}\n\n## After\nmore notes\n`;
    expect(placeBlock(text, 'fresh').text).toBe(
      `intro\n\n${BLOCK_BEGIN}\nfresh\n${BLOCK_END}\n\n## After\nmore notes\n`,
    );
  });

  it('appends and says why when the markers cannot be trusted, deleting nothing', () => {
    const cases: Array<[string, string]> = [
      [`notes\n${BLOCK_BEGIN}\nhalf a block`, '1 begin and 0 end markers'],
      [`${BLOCK_END}\nnotes\n${BLOCK_BEGIN}\n`, 'the end marker comes before the begin marker'],
      [`${BLOCK_BEGIN}\na\n${BLOCK_END}\n${BLOCK_BEGIN}\nb\n${BLOCK_END}`, '2 begin and 2 end markers'],
    ];
    for (const [text, why] of cases) {
      const placed = placeBlock(text, BODY);
      expect(placed).toMatchObject({ placement: 'appended', brokenMarkers: why });
      expect(placed.text.startsWith(text.trimEnd())).toBe(true);
      expect(placed.text.endsWith(`${BLOCK_BEGIN}\n${BODY}\n${BLOCK_END}\n`)).toBe(true);
    }
  });

  it('never lets the body close or open a block itself', () => {
    const placed = placeBlock(undefined, `a\n${BLOCK_END}\nb <!-- flower:begin x -->`);
    expect(readBlock(placed.text)).toBe('a\n\nb');
  });

  const userText = fc.string({
    unit: fc.constantFrom('a', 'b', ' ', '\n', '#', '-', '<', '>', '!', 'é', '\r\n'),
    maxLength: 80,
  });
  const body = fc.string({ unit: fc.constantFrom('x', 'y', ' ', '\n', '#', '`'), maxLength: 40 });

  it('property: writing the same body twice gives identical bytes (no markers, or one clean pair)', () => {
    fc.assert(
      fc.property(userText, userText, body, body, fc.boolean(), (before, after, old, fresh, paired) => {
        const start = paired
          ? `${before}\n${BLOCK_BEGIN}\n${old}\n${BLOCK_END}\n${after}`
          : `${before}${after}`;
        const once = placeBlock(start, fresh).text;
        expect(placeBlock(once, fresh).text).toBe(once);
        expect(readBlock(once)).toBe(fresh.trim());
      }),
      { seed: 1919, numRuns: 500 },
    );
  });

  it("property: every line of the user's content outside the markers survives", () => {
    fc.assert(
      fc.property(userText, userText, body, fc.boolean(), (before, after, fresh, paired) => {
        const start = paired
          ? `${before}\n${BLOCK_BEGIN}\nold\n${BLOCK_END}\n${after}`
          : `${before}\n${after}`;
        const result = placeBlock(start, fresh).text;
        for (const line of `${before}\n${after}`.split(/\r?\n/)) {
          if (line.trim() !== '') expect(result).toContain(line);
        }
      }),
      { seed: 2020, numRuns: 500 },
    );
  });
});

describe('writeManagedFile', () => {
  it("writes the file, leaves identical bytes on a second write, and keeps the user's content", () => {
    const path = join(mkdtempSync(join(tmpdir(), 'flower-block-')), 'CLAUDE.md');
    writeFileSync(path, '# Mine\nkeep this\n');
    expect(writeManagedFile(path, BODY).placement).toBe('appended');
    const first = readFileSync(path);
    expect(writeManagedFile(path, BODY).placement).toBe('replaced');
    expect(readFileSync(path)).toEqual(first);
    expect(first.toString()).toMatch(/^# Mine\nkeep this\n\n<!-- flower:begin/);
  });
});
