import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HandoffPolicy } from '../../../src/config/policies.js';
import {
  DEGRADED_MARKER,
  degradedHandoff,
  degradedHandoffNote,
  degradedLimitReason,
  generationLimitReason,
  HandoffDocument,
  handoffPath,
  handoffWritingPrompt,
  incompleteReason,
  isContextOverflow,
  safeStepName,
  saveHandoff,
} from '../../../src/runtime/handoff-document.js';
import { HOSTILE_ESCAPES, HOSTILE_SECRETS, RAW_CONTROL, secretCore } from '../../support/hostile-payloads.js';

const reply = `Here is the handoff.

## Doing
Porting the parser module to TypeScript; tokenizer done.

## Decided
- Use a hand-written lexer: the grammar has context-sensitive keywords.

## Dead ends
- Tried the PEG library; it cannot express the indentation rule.

## Next
Port \`parse_block\` and run \`npm test -- parser\`.

## Scene
- src/parser/lexer.ts
- .flower/notes/grammar.md
`;

describe('HandoffDocument.parse', () => {
  it('reads the five sections of a well-formed reply', () => {
    const document = HandoffDocument.parse(reply);
    expect(document.doing).toBe('Porting the parser module to TypeScript; tokenizer done.');
    expect(document.decided).toContain('hand-written lexer');
    expect(document.deadEnds).toContain('PEG library');
    expect(document.next).toContain('parse_block');
    expect(document.scene).toContain('src/parser/lexer.ts');
    expect(document.complete).toBe(true);
    expect(document.degraded).toBe(false);
  });

  it('tolerates bold, numbered and colon headings and bodies on the heading line', () => {
    const document = HandoffDocument.parse(
      '**Doing:** fixing the build\n\n2. Decided: keep CMake\n\n**Dead ends**\nninja\n\nNext steps: run ctest\n\nKey files: CMakeLists.txt',
    );
    expect(document).toMatchObject({
      doing: 'fixing the build',
      decided: 'keep CMake',
      deadEnds: 'ninja',
      next: 'run ctest',
      scene: 'CMakeLists.txt',
    });
  });

  it('ignores headings inside code blocks and drops everything after an unclosed fence', () => {
    const document = HandoffDocument.parse(
      '## Doing\nwork\n```\n## Next\nnot a heading\n```\n## Scene\na.ts\n```\n## Next\ncut off',
    );
    expect(document.doing).toBe('work');
    expect(document.scene).toBe('a.ts');
    expect(document.next).toBe('');
  });

  it('requires only Doing and Next', () => {
    const partial = HandoffDocument.parse('## Doing\nsomething\n\n## Dead ends\n(none yet)');
    expect(partial.missing()).toEqual(['Next']);
    expect(partial.complete).toBe(false);
    expect(incompleteReason(partial)).toBe('missing Next');
    expect(HandoffDocument.parse('nothing useful').missing()).toEqual(['Doing', 'Next']);
    expect(HandoffDocument.parse('## Doing\nx\n## Next\ny').complete).toBe(true);
  });

  it('reads back what it writes, placeholders included', () => {
    const original = new HandoffDocument({ doing: 'a', next: 'b', scene: 'c' });
    const markdown = original.toMarkdown('work');
    expect(markdown).toMatch(/^# Handoff \(work\)\n/);
    expect(markdown).toContain('## Dead ends\n\n(empty)');
    expect(HandoffDocument.parse(markdown)).toEqual(original);
  });
});

describe('prompts', () => {
  it('asks the session for exactly the five sections, with the context figures', () => {
    const prompt = handoffWritingPrompt(152_340, 200_000);
    expect(prompt).toContain('152.3K of 200K');
    for (const heading of ['## Doing', '## Decided', '## Dead ends', '## Next', '## Scene']) {
      expect(prompt).toContain(heading);
    }
    expect(prompt).toMatch(/never invent/i);
    expect(prompt).toMatch(/notes\/ folder/);
  });

  it('starts the successor from the non-empty sections and tells it not to start over', () => {
    const prompt = new HandoffDocument({ doing: 'porting', next: 'run tests' }).successorPrompt();
    expect(prompt).toMatch(/^You are taking over unfinished work/);
    expect(prompt).toContain('## Doing\nporting');
    expect(prompt).toContain('## Next\nrun tests');
    expect(prompt).not.toContain('## Dead ends');
    expect(prompt).toMatch(/Do not start over/);
  });
});

describe('degraded handoff', () => {
  it('carries the marker, the reason and the first 1200 characters of the task', () => {
    const task = `  ${'x'.repeat(1300)}`;
    const document = degradedHandoff('work', task, 'missing Next');
    expect(document.doing.startsWith(DEGRADED_MARKER)).toBe(true);
    expect(document.doing).toContain('(missing Next)');
    expect(document.degraded).toBe(true);
    expect(document.complete).toBe(true);
    expect(document.scene).toContain('x'.repeat(1200));
    expect(document.scene).not.toContain('x'.repeat(1201));
    expect(document.next).toMatch(/git status/);
    expect(degradedHandoff('work', 'task').doing).not.toContain('()');
    expect(degradedHandoffNote('missing Next')).toBe('handoff degraded (missing Next)');
  });

  it('survives a round trip through its file', () => {
    const document = degradedHandoff('work', 'build it');
    expect(HandoffDocument.parse(document.toMarkdown('work')).degraded).toBe(true);
  });
});

describe('isContextOverflow', () => {
  it.each([
    'API Error: 400 prompt is too long: 1000123 tokens > 1000000 maximum',
    'context_length_exceeded',
    'context length exceeded',
    "This model's maximum context length is 200000 tokens",
    'input exceeds the context window',
    'Request exceeds context limit',
    'too many total text bytes',
    'input length and `max_tokens` exceed context limit',
  ])('recognises %j', (text) => {
    expect(isContextOverflow(text)).toBe(true);
  });

  it('looks at every text given and ignores missing ones', () => {
    expect(isContextOverflow(null, undefined, 'overloaded', 'Prompt is too long')).toBe(true);
    expect(isContextOverflow('overloaded', '529')).toBe(false);
    expect(isContextOverflow()).toBe(false);
  });
});

describe('handoff files', () => {
  let notes: string;
  beforeEach(() => {
    notes = mkdtempSync(join(tmpdir(), 'flower-handoff-'));
  });
  afterEach(() => rmSync(notes, { recursive: true, force: true }));

  it('names the file after the step without characters unsafe in file names', () => {
    expect(safeStepName('work:verdict#1')).toBe('workverdict#1');
    expect(safeStepName(' / ')).toBe('step');
    expect(handoffPath(notes, 'work#round2')).toBe(join(notes, 'handoff-work#round2.md'));
  });

  it('archives the previous generation before writing the next one', () => {
    const at = new Date(2026, 10, 30, 1, 2, 3);
    const first = saveHandoff(notes, 'work', new HandoffDocument({ doing: 'gen 1', next: 'n' }), at);
    saveHandoff(notes, 'work', new HandoffDocument({ doing: 'gen 2', next: 'n' }), at);
    saveHandoff(notes, 'work', new HandoffDocument({ doing: 'gen 3', next: 'n' }), at);
    expect(first).toBe(join(notes, 'handoff-work.md'));
    expect(HandoffDocument.load(first)?.doing).toBe('gen 3');
    const archive = join(notes, 'archive', 'handoff');
    expect(readdirSync(archive).sort()).toEqual(['work-20261130-010203-2.md', 'work-20261130-010203.md']);
    expect(readFileSync(join(archive, 'work-20261130-010203.md'), 'utf8')).toContain('gen 1');
    expect(readFileSync(join(archive, 'work-20261130-010203-2.md'), 'utf8')).toContain('gen 2');
  });

  it('freezes a hostile handoff masked, inert and private; it still reads back, and the successor gets it whole', () => {
    const secrets = Object.values(HOSTILE_SECRETS);
    const escapes = Object.values(HOSTILE_ESCAPES).join(' ');
    const document = new HandoffDocument({
      doing: `Deploying with ${HOSTILE_SECRETS.urlPassword} ${escapes}`,
      decided: secrets.map((secret) => `- uses ${secret}`).join('\n'),
      next: `Run the migration\x1b]0;PWNED-TITLE\x07 again`,
      scene: HOSTILE_SECRETS.pem,
    });
    const path = saveHandoff(notes, 'work', document);
    const text = readFileSync(path, 'utf8');
    for (const secret of secrets) expect(text).not.toContain(secretCore(secret));
    expect(text).not.toMatch(RAW_CONTROL);
    expect(text).toContain('Run the migration\u241b]0;PWNED-TITLE\u2407 again');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    // Still a handoff: the sections read back from the frozen file.
    const reread = HandoffDocument.load(path);
    expect(reread?.complete).toBe(true);
    expect(reread?.doing).toContain('Deploying with postgres://app:***@db.internal');
    // The successor's prompt is made from the document itself, not from the masked file.
    expect(document.successorPrompt()).toContain(HOSTILE_SECRETS.urlPassword);
  });

  it('loads a hand-edited file and returns undefined for a missing one', () => {
    const path = join(notes, 'handoff-work.md');
    writeFileSync(path, '# Handoff\n\n## Doing\nedited by hand\n\n## Next\ngo on\n');
    expect(HandoffDocument.load(path)?.doing).toBe('edited by hand');
    expect(HandoffDocument.load(join(notes, 'none.md'))).toBeUndefined();
    expect(existsSync(join(notes, 'archive'))).toBe(false);
  });
});

describe('handoff limits', () => {
  const policy = new HandoffPolicy({ window: 200_000, headroom: 50_000 });

  it('allows handoffs below both limits', () => {
    const history = { step: 'work', generations: 7, degradedInARow: 1 };
    expect(generationLimitReason(history, policy)).toBeUndefined();
    expect(degradedLimitReason(history, policy)).toBeUndefined();
  });

  it('stops after the maximum number of generations and explains the startup floor', () => {
    const reason = generationLimitReason({ step: 'work', generations: 8, degradedInARow: 0 }, policy);
    expect(reason).toContain('8 times');
    expect(reason).toContain('150K of a 200K window');
    expect(reason).toMatch(/--window or FLOWER_WINDOW/);
    expect(reason).toContain('--no-handoff');
  });

  it('stops after two degraded handoffs in a row and points at the manifest', () => {
    const reason = degradedLimitReason({ step: 'work', generations: 2, degradedInARow: 2 }, policy);
    expect(reason).toContain('2 handoffs in a row');
    expect(reason).toContain('runs/manifest.json');
  });
});
