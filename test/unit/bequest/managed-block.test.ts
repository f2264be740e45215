import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BLOCK_BEGIN,
  BLOCK_END,
  blockBegin,
  blockEnd,
  flowerBlocks,
  LEGACY_BLOCK_BEGIN,
  LEGACY_BLOCK_END,
  placeBlock,
  readBlock,
  taskKey,
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

  it('appends and says why when its markers pair with nothing, deleting and changing nothing', () => {
    const cases: Array<[string, string]> = [
      [`notes\n${BLOCK_BEGIN}\nhalf a block`, '1 begin marker without an end'],
      [
        `${BLOCK_END}\nnotes\n${BLOCK_BEGIN}\n`,
        '1 begin marker without an end and 1 end marker without a begin',
      ],
      [
        `${BLOCK_BEGIN}\na\n${blockEnd('runs-2')}\n`,
        '1 begin marker without an end and 1 end marker without a begin',
      ],
      [`${LEGACY_BLOCK_BEGIN}\nold body, its end deleted\n`, '1 begin marker without an end'],
    ];
    for (const [text, why] of cases) {
      const placed = placeBlock(text, BODY);
      expect(placed).toMatchObject({ placement: 'appended', brokenMarkers: why });
      expect(placed.text.startsWith(text)).toBe(true);
      expect(placed.text.endsWith(`${BLOCK_BEGIN}\n${BODY}\n${BLOCK_END}\n`)).toBe(true);
      // The stray markers stay the user's; the appended block is replaced in place from now on.
      const again = placeBlock(placed.text, 'newer');
      expect(again).toMatchObject({ placement: 'replaced', brokenMarkers: why });
      expect(again.text).toBe(placed.text.replace(`\n${BODY}\n`, '\nnewer\n'));
    }
  });

  it('sets an appended block apart by one blank line, adding only the line breaks that takes', () => {
    for (const [user, separator] of [
      ['no line break at the end', '\n\n'],
      ['one line break\n', '\n'],
      ['a blank line already\n\n', ''],
      ['a blank line, CRLF\r\n\r\n', ''],
    ]) {
      expect(placeBlock(user, BODY).text).toBe(`${user}${separator}${BLOCK_BEGIN}\n${BODY}\n${BLOCK_END}\n`);
    }
  });

  it("folding keeps a blank line that separates the user's paragraphs, and drops the one appending added", () => {
    const dup = `${blockBegin('runs-2')}\nb\n${blockEnd('runs-2')}`;
    const cases: Array<[string, string]> = [
      [`one\n\n${dup}\ntwo\n`, 'one\n\ntwo\n'],
      [`one\n${dup}\n\ntwo\n`, 'one\n\ntwo\n'],
      [`one\n\n${dup}\n\ntwo\n`, 'one\n\ntwo\n'],
      [`one\n\n${dup}\n`, 'one\n'],
      [`one\n\n${dup}`, 'one\n'],
    ];
    for (const [after, kept] of cases) {
      const placed = placeBlock(`${BLOCK_BEGIN}\na\n${BLOCK_END}\n${after}`, BODY);
      expect(placed).toEqual({
        text: `${BLOCK_BEGIN}\n${BODY}\n${BLOCK_END}\n${kept}`,
        placement: 'replaced',
        folded: 1,
      });
    }
  });

  it('folds several of its own blocks into the first and says how many went', () => {
    const text = `${BLOCK_BEGIN}\na\n${BLOCK_END}\n\nmine\n\n${blockBegin('runs-2')}\nb\n${blockEnd('runs-2')}\n`;
    expect(placeBlock(text, BODY)).toEqual({
      text: `${BLOCK_BEGIN}\n${BODY}\n${BLOCK_END}\n\nmine\n`,
      placement: 'replaced',
      folded: 1,
    });
  });

  it('never lets the body close or open a block itself', () => {
    const placed = placeBlock(undefined, `a\n${BLOCK_END}\nb <!-- flower:begin x -->`);
    expect(readBlock(placed.text)).toBe('a\n\nb');
  });

  it('never lets the body hold a marker, even one that removing another would piece together', () => {
    const body = `x <!-<!-- flower:end -->- flower:begin task=runs -->\n<!--<!--flower:end y\n<!-- flower:begin other-tool\nz`;
    const placed = placeBlock(undefined, body);
    expect(readBlock(placed.text)).toBeDefined();
    expect(placed.text.match(/<!--\s*flower:/g)).toHaveLength(2);
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
    expect(first.toString()).toMatch(/^# Mine\nkeep this\n\n<!-- flower:begin task=runs /);
  });
});

const OTHER_TOOL = '<!-- flower:begin other-tool -->\nmine\n<!-- flower:end -->';

describe('whose block it is (issue 20, observation 7)', () => {
  it('writes whole-line markers naming the task, in a key that cannot end the comment', () => {
    expect(BLOCK_BEGIN).toBe(
      '<!-- flower:begin task=runs (written by flower when a task ends; the next task ending here replaces it; keep your own notes outside this block) -->',
    );
    expect(BLOCK_END).toBe('<!-- flower:end task=runs -->');
    expect(taskKey('runs')).toBe('runs');
    expect(taskKey('work/runs-2')).toBe('work/runs-2');
    expect(taskKey('my runs -->é')).toBe('my%20runs%20--%3E%C3%A9');
    expect(taskKey('..\\elsewhere')).toBe('../elsewhere');
    expect(taskKey('')).toBe('.');
    const placed = placeBlock(undefined, BODY, taskKey('a b'));
    expect(flowerBlocks(placed.text)).toMatchObject([{ task: 'a%20b', body: BODY }]);
  });

  it("never takes another tool's flower:begin block, nor a line that is almost flower's", () => {
    const almost = [
      OTHER_TOOL,
      `<!-- flower:begin task=runs -->\nmine\n${BLOCK_END}`,
      ` ${BLOCK_BEGIN}\nmine\n${BLOCK_END}`,
      `${BLOCK_BEGIN} \nmine\n${BLOCK_END}`,
      `${BLOCK_BEGIN.replace('--', '-')}\nmine\n${BLOCK_END}`,
      `${BLOCK_BEGIN}\nmine\n<!-- flower:end task=other -->`,
      `${LEGACY_BLOCK_BEGIN.replace('—', '-')}\nmine\n${LEGACY_BLOCK_END}`,
      `${LEGACY_BLOCK_BEGIN}\nmine\n${OTHER_TOOL}`,
      `${LEGACY_BLOCK_BEGIN}\nmine\n<!-- flower:end  -->`,
    ];
    for (const text of almost) {
      expect(flowerBlocks(text), text).toEqual([]);
      const placed = placeBlock(text, BODY);
      expect(placed.placement).toBe('appended');
      expect(placed.text.startsWith(text)).toBe(true);
    }
  });

  for (const [order, user] of [
    ['before', `# Rules\n\n${OTHER_TOOL}\n`],
    ['after', `${OTHER_TOOL}`],
  ] as const) {
    it(`keeps another tool's block byte for byte through three writes (its block ${order} flower's)`, () => {
      const start = order === 'before' ? user : `${user}\n`;
      for (const keys of [
        ['runs', 'runs', 'runs'],
        ['runs-1', 'runs-2', 'runs-3'],
      ]) {
        // flower's block first in the file when the other one comes after it.
        let text = order === 'before' ? start : `${block('earlier')}\n\n${start}`;
        for (const [index, key] of keys.entries()) {
          const placed = placeBlock(text, `task ${index}`, key);
          text = placed.text;
          expect(placed.placement).toBe(order === 'before' && index === 0 ? 'appended' : 'replaced');
          expect(placed.brokenMarkers).toBeUndefined();
          expect(flowerBlocks(text)).toMatchObject([{ task: key, body: `task ${index}` }]);
          expect(text.split('<!-- flower:begin task=')).toHaveLength(2);
          if (order === 'before')
            expect(text).toBe(`${user}\n${blockBegin(key)}\ntask ${index}\n${blockEnd(key)}\n`);
          else expect(text).toBe(`${blockBegin(key)}\ntask ${index}\n${blockEnd(key)}\n\n${start}`);
        }
      }
    });
  }

  it("takes over the previous format's block in place, only as that version wrote it", () => {
    const legacy = `# Mine\n\n${LEGACY_BLOCK_BEGIN}\nold bequest\n${LEGACY_BLOCK_END}\n\n## After\n`;
    expect(flowerBlocks(legacy)).toMatchObject([{ task: undefined, body: 'old bequest' }]);
    expect(placeBlock(legacy, BODY)).toEqual({
      text: `# Mine\n\n${BLOCK_BEGIN}\n${BODY}\n${BLOCK_END}\n\n## After\n`,
      placement: 'replaced',
    });
    // Written on Windows or checked out with autocrlf: the same markers, the user's CRLFs kept.
    const crlf = legacy.replace(/\n/g, '\r\n');
    expect(placeBlock(crlf, BODY).text).toBe(
      `# Mine\r\n\r\n${BLOCK_BEGIN}\n${BODY}\n${BLOCK_END}\r\n\r\n## After\r\n`,
    );
  });

  it("folds the old bug's duplicates into one block, keeping the other tool's block and the user's text", () => {
    // What the previous version left: the other tool's block came back after flower overwrote it,
    // so the file had "two pairs" and each later task appended another block.
    const user = `# Rules\n\n${OTHER_TOOL}\n`;
    const old = (body: string) => `${LEGACY_BLOCK_BEGIN}\n${body}\n${LEGACY_BLOCK_END}`;
    const file = `${old('task 1')}\n\n${user}\n${old('task 2')}\n\n${old('task 3')}\n`;
    const placed = placeBlock(file, BODY);
    expect(placed).toEqual({
      text: `${block(BODY)}\n\n${user}`,
      placement: 'replaced',
      folded: 2,
    });
    expect(placeBlock(placed.text, BODY)).toEqual({ text: placed.text, placement: 'replaced' });
  });

  const keyName = fc.constantFrom('runs', 'runs-2', 'a b', 'w/x');
  const fresh = fc.string({ unit: fc.constantFrom('x', ' ', '\n', '#', '<', '!', '-'), maxLength: 30 });
  const around = fc.string({
    unit: fc.constantFrom('a', ' ', '\n', '#', '-', '<', '>', '!', '\r\n', '\t', `\n${OTHER_TOOL}\n`),
    maxLength: 60,
  });

  it("property: after any writes, one block of flower's, and the user's text before it byte for byte", () => {
    fc.assert(
      fc.property(
        around,
        fc.array(fc.tuple(keyName, fresh), { minLength: 1, maxLength: 4 }),
        (user, writes) => {
          let text = user;
          for (const [name, next] of writes) text = placeBlock(text, next, taskKey(name)).text;
          const [only, ...more] = flowerBlocks(text);
          expect(more).toEqual([]);
          const [lastName, lastBody] = writes.at(-1)!;
          expect(only).toMatchObject({ task: taskKey(lastName), body: lastBody.trim() });
          if (user.trim() !== '') {
            expect(text.startsWith(user)).toBe(true);
            expect(text.slice(user.length)).toMatch(/^\n{0,2}<!-- flower:begin task=/);
          }
          expect(text.slice(only!.end)).toBe('\n');
        },
      ),
      { seed: 2021, numRuns: 400 },
    );
  });
});

function block(body: string, key = 'runs'): string {
  return `${blockBegin(key)}\n${body}\n${blockEnd(key)}`;
}
