import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bulletItems, readSections, stripCode } from '../../../src/runtime/markdown-sections.js';
import { BRIEF_PLACEHOLDER, Brief } from '../../../src/workflow/brief.js';
import { Goal } from '../../../src/workflow/goal.js';
import { UNCLEAR_VERDICT_REASON, Verdict } from '../../../src/workflow/verdict.js';

const tempDir = () => mkdtempSync(join(tmpdir(), 'flower-docs-'));

const FULL_BRIEF = `## Goal
A CLI that prints hello.

## Acceptance
- \`python hello.py\` prints "hello"

## Boundaries
No GUI.

## Unknowns & assumptions
Python 3.11 assumed.`;

describe('sections', () => {
  it('removes closed fences and cuts the text at an unclosed one', () => {
    expect(stripCode('a\n```js\n## Goal\n```\nb')).toBe('a\n\nb');
    expect(stripCode('a\n~~~\nx\n~~~\nb\n```\ncut here')).toBe('a\n\nb\n');
  });

  it('turns list lines into items without markers or task boxes', () => {
    expect(bulletItems('- one\n* two\n+ three\n4. four\n5) five\n- [ ] six\n- [x] seven\n\n')).toEqual([
      'one',
      'two',
      'three',
      'four',
      'five',
      'six',
      'seven',
    ]);
  });

  it('keeps the first section with content and drops horizontal rules', () => {
    const sections = readSections('## Goal\n\n---\n## Goal\nsecond\n## Goal\nthird', { goal: ['Goal'] });
    expect(sections).toEqual({ goal: 'second' });
  });

  it('does not treat a prose line that merely starts with a section name as a heading', () => {
    const sections = readSections('## Goal\nGoals of this work are simple.\nScope is small.', {
      goal: ['Goal', 'Goals'],
      scope: ['Scope'],
    });
    expect(sections).toEqual({ goal: 'Goals of this work are simple.\nScope is small.' });
  });
});

describe('Brief', () => {
  it('reads the four sections under markdown headings', () => {
    const brief = Brief.parse(FULL_BRIEF);
    expect(brief.complete).toBe(true);
    expect(brief.goal).toBe('A CLI that prints hello.');
    expect(brief.acceptance).toBe('- `python hello.py` prints "hello"');
    expect(brief.boundaries).toBe('No GUI.');
    expect(brief.unknowns).toBe('Python 3.11 assumed.');
  });

  it('accepts heading variants: bold, colon with inline body, numbering, case, aliases', () => {
    const brief = Brief.parse(
      '**Goal**\nbuild it\n\n2. Acceptance criteria: it runs\n\n### **Out of scope:** windows\n\nunknowns and assumptions：none known',
    );
    expect(brief).toMatchObject({
      goal: 'build it',
      acceptance: 'it runs',
      boundaries: 'windows',
      unknowns: 'none known',
    });
  });

  it('accepts a list number outside or inside the emphasis', () => {
    const brief = Brief.parse(
      '1. **Goal**: g\n**2. Acceptance**\na\n3) __Boundaries:__ b\n4. Unknowns & assumptions\nu',
    );
    expect(brief).toMatchObject({ goal: 'g', acceptance: 'a', boundaries: 'b', unknowns: 'u' });
  });

  it('matches the longest alias first (Unknowns & assumptions is not Unknowns)', () => {
    const brief = Brief.parse('## Unknowns & assumptions\nA\n## Unknowns\nB');
    expect(brief.unknowns).toBe('A');
  });

  it('ignores headings inside code fences', () => {
    const brief = Brief.parse(`Here is my draft:\n\`\`\`markdown\n## Goal\nfake\n\`\`\`\n${FULL_BRIEF}`);
    expect(brief.goal).toBe('A CLI that prints hello.');
    const withCode = Brief.parse(
      FULL_BRIEF.replace('No GUI.', 'No GUI.\n```py\nprint(1)\n```\nNothing else.'),
    );
    expect(withCode.boundaries).toBe('No GUI.\n\nNothing else.');
  });

  it('reads a brief cut off inside an unclosed fence as incomplete', () => {
    const truncated = '## Goal\nG\n## Acceptance\nA\n```\n## Boundaries\nB\n## Unknowns & assumptions\nU';
    const brief = Brief.parse(truncated);
    expect(brief.complete).toBe(false);
    expect(brief.missing()).toEqual(['Boundaries', 'Unknowns & assumptions']);
  });

  it('lists missing sections by heading, in document order', () => {
    expect(new Brief({ acceptance: 'x' }).missing()).toEqual([
      'Goal',
      'Boundaries',
      'Unknowns & assumptions',
    ]);
    expect(new Brief().complete).toBe(false);
  });

  it('writes a human file that loads back equal, and a prompt block without metadata', () => {
    const dir = tempDir();
    const path = join(dir, 'notes', 'brief.md');
    const brief = Brief.parse(FULL_BRIEF);
    expect(brief.write(path)).toBe(path);
    const onDisk = readFileSync(path, 'utf8');
    expect(onDisk).toMatch(/^# Requirements brief\n/);
    expect(onDisk).toContain('edit this file');
    expect(Brief.load(path)).toEqual(brief);
    expect(brief.promptBlock()).toBe(
      '## Goal\nA CLI that prints hello.\n\n## Acceptance\n- `python hello.py` prints "hello"\n\n## Boundaries\nNo GUI.\n\n## Unknowns & assumptions\nPython 3.11 assumed.',
    );
  });

  it('writes placeholders for empty sections and reads them back as empty', () => {
    const dir = tempDir();
    const path = join(dir, 'brief.md');
    new Brief({ goal: 'g' }).write(path);
    expect(readFileSync(path, 'utf8')).toContain(BRIEF_PLACEHOLDER);
    const loaded = Brief.load(path);
    expect(loaded?.missing()).toEqual(['Acceptance', 'Boundaries', 'Unknowns & assumptions']);
    expect(new Brief({ goal: 'g' }).promptBlock()).toBe('## Goal\ng');
  });

  it('keeps remarks appended during the run inside the last section', () => {
    const dir = tempDir();
    const path = join(dir, 'brief.md');
    Brief.parse(FULL_BRIEF).write(path);
    writeFileSync(
      path,
      `${readFileSync(path, 'utf8')}\n## Added during run (12:00:01)\nalso report total bytes\n`,
    );
    const loaded = Brief.load(path);
    expect(loaded?.complete).toBe(true);
    expect(loaded?.unknowns).toContain('also report total bytes');
  });

  it('loads nothing from a missing file', () => {
    expect(Brief.load(join(tempDir(), 'nope.md'))).toBeUndefined();
  });
});

describe('Goal', () => {
  const text =
    '# Statement\nhello.py prints hello\n\n# Checklist\n- file exists\n2. prints hello\n* exit code 0';

  it('reads a statement and a checklist, one check per line', () => {
    const goal = Goal.parse(text);
    expect(goal.statement).toBe('hello.py prints hello');
    expect(goal.checks).toEqual(['file exists', 'prints hello', 'exit code 0']);
    expect(goal.complete).toBe(true);
  });

  it('is incomplete without a statement or without checks', () => {
    expect(Goal.parse('# Statement\nx').missing()).toEqual(['Checklist']);
    expect(Goal.parse('# Checklist\n- a').missing()).toEqual(['Statement']);
  });

  it('flags checks marked cannot-verify-here', () => {
    const goal = Goal.parse(
      '## Goal\nship\n## Checks\n- builds\n- runs on macOS [cannot verify here: this is Linux]\n- screenshot matches [ Cannot verify: no display ]',
    );
    expect(goal.unverifiable).toEqual([
      'runs on macOS [cannot verify here: this is Linux]',
      'screenshot matches [ Cannot verify: no display ]',
    ]);
  });

  it('round-trips through its file, and an empty checklist placeholder stays empty', () => {
    const dir = tempDir();
    const path = join(dir, 'goal.md');
    Goal.parse(text).write(path);
    expect(Goal.load(path)).toEqual(Goal.parse(text));
    new Goal({ statement: 'only a statement' }).write(path);
    expect(Goal.load(path)?.checks).toEqual([]);
    expect(Goal.load(join(dir, 'missing.md'))).toBeUndefined();
  });

  it('amends by appending to the statement, never replacing it', () => {
    const amended = Goal.parse(text).amend('also support --name');
    expect(amended.statement).toBe('hello.py prints hello\n\n(amended) also support --name');
    expect(amended.checks).toHaveLength(3);
  });

  it('gives a prompt block with the checklist', () => {
    expect(Goal.parse(text).promptBlock()).toBe(
      '## Statement\nhello.py prints hello\n\n## Checklist\n- file exists\n- prints hello\n- exit code 0',
    );
    expect(new Goal().promptBlock()).toBe('');
  });
});

describe('Goal items', () => {
  it('classifies items: a check wins over the mark, accepted marks are assumptions', () => {
    const goal = new Goal({
      statement: 's',
      checks: [
        'builds — check: `make`',
        'looks right',
        'runs on macOS [cannot verify here: Linux]',
        'signed — check: `codesign -v app` [cannot verify here: no keychain]',
        'has a window [cannot verify here, accepted: no display]',
      ],
    });
    expect(goal.items().map((item) => [item.kind, item.accepted])).toEqual([
      ['check', false],
      ['judgement', false],
      ['cannot verify here', false],
      ['check', false],
      ['cannot verify here', true],
    ]);
    expect(goal.undecided).toEqual(['runs on macOS [cannot verify here: Linux]']);
    expect(goal.assumptions).toEqual(['has a window [cannot verify here, accepted: no display]']);
  });

  it('accepts and replaces items without touching the others or the statement', () => {
    const goal = new Goal({ statement: 's', checks: ['a', 'b [ Cannot verify: no display ]', 'c'] });
    expect(goal.accept(['b [ Cannot verify: no display ]']).checks).toEqual([
      'a',
      'b [cannot verify here, accepted: no display ]',
      'c',
    ]);
    expect(goal.replace(['b [ Cannot verify: no display ]'], ['b1', 'b2']).checks).toEqual([
      'a',
      'b1',
      'b2',
      'c',
    ]);
    expect(goal.replace(['a', 'c'], []).statement).toBe('s');
  });

  it("teaches the check syntax in the file's header and reads its own file back unchanged", () => {
    const goal = new Goal({ statement: 's', checks: ['tests — check (2m): `npm test`'] });
    const text = goal.toMarkdown();
    expect(text).toContain('check: `command` (or check (2m): `command`): flower itself runs that command');
    expect(Goal.parse(text).checks).toEqual(goal.checks);
  });
});

describe('Verdict', () => {
  it('reads "cannot verify here" as cannot verify even when the sentence goes on with "not met"', () => {
    const read = (conclusion: string) => Verdict.parse(`## Conclusion\n${conclusion}\n## Reason\nr`).state;
    expect(read('cannot verify here: the checks are not met')).toBe('cannot verify here');
    expect(Verdict.parse('cannot verify here: the checks are not met').state).toBe('cannot verify here');
  });

  it('reads the three conclusions from a conclusion section', () => {
    const read = (conclusion: string) => Verdict.parse(`## Conclusion\n${conclusion}\n## Reason\nr`).state;
    expect(read('achieved')).toBe('achieved');
    expect(read('Not yet')).toBe('not yet');
    expect(read('not achieved')).toBe('not yet');
    expect(read('The goal has not been achieved.')).toBe('not yet');
    expect(read('cannot verify here (no display)')).toBe('cannot verify here');
    expect(read('Unverifiable in this container')).toBe('cannot verify here');
  });

  it('reads bare answers when there is no heading', () => {
    expect(Verdict.parse('1').state).toBe('achieved');
    expect(Verdict.parse('TRUE').state).toBe('achieved');
    expect(Verdict.parse('0').state).toBe('not yet');
    expect(Verdict.parse('no.').state).toBe('not yet');
  });

  it('reads a conclusion without headings from the whole text', () => {
    const verdict = Verdict.parse('not yet: item 2 missing');
    expect(verdict.state).toBe('not yet');
    expect(verdict.reason).toBe('not yet: item 2 missing');
  });

  it('treats anything unclear as unparsed, which counts as not achieved', () => {
    for (const text of [
      '',
      'I looked around and things seem fine overall.',
      '```\nachieved\n```',
      '1 of 3',
    ]) {
      const verdict = Verdict.parse(text);
      expect(verdict.parsed).toBe(false);
      expect(verdict.achieved).toBe(false);
    }
    expect(UNCLEAR_VERDICT_REASON).toMatch(/not yet/);
  });

  it('collects the reason and the checks that did not pass', () => {
    const verdict = Verdict.parse(
      '**Conclusion:** not yet\n\n**Reason:** output is wrong\n\n**Not passed:**\n- prints hello\n- exit code 0',
    );
    expect(verdict.reason).toBe('output is wrong');
    expect(verdict.failed).toEqual(['prints hello', 'exit code 0']);
  });

  it('sends back only what is missing', () => {
    const feedback = Verdict.parse(
      '## Conclusion\nnot yet\n## Reason\nno README\n## Failed\n- README exists',
    ).feedback();
    expect(feedback).toContain('no README');
    expect(feedback).toContain('- README exists');
    expect(feedback).toContain('Do not start over');
    expect(new Verdict({ state: 'not yet' }).feedback()).toContain('(no reason given)');
  });

  it('replaces the reason without touching the state', () => {
    const verdict = new Verdict({ state: 'cannot verify here', reason: 'x', failed: ['a'] }).withReason(
      'human says y',
    );
    expect(verdict).toMatchObject({ state: 'cannot verify here', reason: 'human says y', failed: ['a'] });
  });
});
