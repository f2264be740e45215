import { describe, expect, it } from 'vitest';
import { commandLabel, defaultEphemeralPolicy, expireStaleGlances } from '../../../src/store/expire.js';
import { TranscriptBuilder } from '../../support/transcript-builder.js';
import { validateTranscript } from '../../support/transcript-validator.js';

const resultOf = (entries: readonly Record<string, unknown>[], id: string): unknown =>
  entries
    .flatMap(
      (entry) => ((entry.message as { content?: unknown })?.content as Array<Record<string, unknown>>) ?? [],
    )
    .find((block) => block?.type === 'tool_result' && block.tool_use_id === id)?.content;

/** A glance's output longer than any expiry note (a note never replaces a shorter text). */
const status = (tag: string | number): string => `On branch main (${tag})\n${' M src/file.ts\n'.repeat(12)}`;
const note = (command: string, age: number): string => defaultEphemeralPolicy.placeholder(command, age);

describe('expire layer', () => {
  it('replaces all but the newest 6 glance results with the expiry note, block kept', () => {
    const t = new TranscriptBuilder();
    t.prompt('go');
    const ids = Array.from({ length: 9 }, (_, index) => t.bash('git status', status(index)));
    const { entries, expired } = expireStaleGlances(t.entries);
    expect(expired).toBe(3);
    expect(resultOf(entries, ids[0] as string)).toBe(
      '[result of `git status` expired (9 glances ago); the state may have changed — run it again if you need it]',
    );
    expect(resultOf(entries, ids[2] as string)).toContain('(7 glances ago)');
    for (const id of ids.slice(3)) expect(resultOf(entries, id)).toMatch(/^On branch main/);
    expect(validateTranscript(entries, { original: t.entries, singleChain: true })).toEqual([]);
  });

  it('only expires Bash glances: Read results and non-glance commands stay', () => {
    const t = new TranscriptBuilder();
    const read = t.tool('Read', { file_path: 'a.ts' }, 'file contents');
    const build = t.bash('npm run build', status('built'));
    const glances = Array.from({ length: 7 }, (_, index) => t.bash('ls -la', status(index)));
    const { entries, expired } = expireStaleGlances(t.entries);
    expect(expired).toBe(1);
    expect(resultOf(entries, read)).toBe('file contents');
    expect(resultOf(entries, build)).toBe(status('built'));
    expect(resultOf(entries, glances[0] as string)).toContain('`ls -la` expired');
  });

  it('expires only Bash results: another tool whose input has a glance `command` keeps its result', () => {
    const t = new TranscriptBuilder();
    const others = ['PowerShell', 'mcp__shell__run', 'Monitor'].map((tool) =>
      t.tool(tool, { command: 'git status' }, status(`${tool} saw a clean tree`)),
    );
    const glances = Array.from({ length: 7 }, (_, index) => t.bash('git status', status(index)));
    const { entries, expired } = expireStaleGlances(t.entries);
    expect(expired).toBe(1);
    for (const id of others) expect(resultOf(entries, id)).toBe(resultOf(t.entries, id));
    expect(resultOf(entries, glances[0] as string)).toContain('expired');
  });

  it('a glance result of exactly maxChars still expires; one character more does not', () => {
    const t = new TranscriptBuilder();
    const limit = defaultEphemeralPolicy.maxChars;
    const atLimit = t.bash('git log --oneline', 'x'.repeat(limit));
    const overLimit = t.bash('git log --oneline', 'y'.repeat(limit + 1));
    for (let index = 0; index < 6; index += 1) t.bash('pwd', status(index));
    const { entries, expired } = expireStaleGlances(t.entries);
    expect(expired).toBe(1);
    expect(resultOf(entries, atLimit)).toContain('`git log --oneline` expired');
    expect(resultOf(entries, overLimit)).toHaveLength(limit + 1);
  });

  it('leaves glance results above maxChars to the trim layer', () => {
    const t = new TranscriptBuilder();
    const big = t.bash('cat big.log', 'x'.repeat(2001));
    for (let index = 0; index < 7; index += 1) t.bash('pwd', status(index));
    const { entries, expired } = expireStaleGlances(t.entries);
    expect(expired).toBe(1);
    expect(resultOf(entries, big)).toHaveLength(2001);
  });

  it('never expires an error result, however long: it tells the model what failed', () => {
    const t = new TranscriptBuilder();
    const missing = t.tool('Bash', { command: 'tree' }, 'zsh: command not found: tree', { isError: true });
    const sibling = t.tool(
      'Bash',
      { command: 'git status' },
      '<tool_use_error>Sibling tool call errored</tool_use_error>',
      {
        isError: true,
      },
    );
    const long = `fatal: not a git repository (or any of the parent directories): .git\n${'x'.repeat(200)}`;
    const failed = t.tool('Bash', { command: 'git log' }, long, { isError: true });
    const stale = t.bash('git status', status('stale'));
    for (let index = 0; index < 6; index += 1) t.bash('pwd', status(index));
    const { entries, expired } = expireStaleGlances(t.entries);
    expect(expired).toBe(1);
    expect(resultOf(entries, missing)).toBe('zsh: command not found: tree');
    expect(resultOf(entries, sibling)).toBe('<tool_use_error>Sibling tool call errored</tool_use_error>');
    expect(resultOf(entries, failed)).toBe(long);
    // The errors still count as glances: the stale one is 7 glances old.
    expect(resultOf(entries, stale)).toBe(note('git status', 7));
    for (const id of [missing, sibling, failed])
      expect(entries.find((entry) => resultOf([entry], id) !== undefined)).toBe(
        t.entries.find((entry) => resultOf([entry], id) !== undefined),
      );
  });

  it('an explicit is_error: false result expires like any other', () => {
    const t = new TranscriptBuilder();
    const id = t.tool('Bash', { command: 'git status' }, status('old'));
    const message = t.entries.at(-1)?.message as { content: Array<Record<string, unknown>> } | undefined;
    const block = message?.content[0];
    if (block !== undefined) block.is_error = false;
    for (let index = 0; index < 6; index += 1) t.bash('pwd', status(index));
    expect(resultOf(expireStaleGlances(t.entries).entries, id)).toBe(note('git status', 7));
  });

  it('never replaces a text that is not longer than the note: one as long stays, one character more expires', () => {
    const t = new TranscriptBuilder();
    const age = 9;
    const same = t.bash('git status', 's'.repeat(note('git status', age).length));
    const longer = t.bash('git status', 'l'.repeat(note('git status', age - 1).length + 1));
    const short = t.bash('pwd', '/work/project');
    for (let index = 0; index < 6; index += 1) t.bash('pwd', status(index));
    const { entries, expired } = expireStaleGlances(t.entries);
    expect(expired).toBe(1);
    expect(resultOf(entries, same)).toBe('s'.repeat(note('git status', age).length));
    expect(resultOf(entries, longer)).toBe(note('git status', age - 1));
    expect(resultOf(entries, short)).toBe('/work/project');
    // A kept short result is still a glance: it is counted in the age of older ones (above) and
    // takes one of the `keepRecent` places.
    const recent = new TranscriptBuilder();
    const old = recent.bash('git status', status('old'));
    for (let index = 0; index < 6; index += 1) recent.bash('pwd', '/w');
    expect(resultOf(expireStaleGlances(recent.entries).entries, old)).toBe(note('git status', 7));
  });

  it('passes over results it cannot judge: no tool_use, a Bash call without input or with a non-string command', () => {
    const t = new TranscriptBuilder();
    t.result('toolu-gone', status('stray'));
    t.push({
      type: 'assistant',
      message: { role: 'assistant', content: [{ type: 'tool_use', id: 'no-input', name: 'Bash' }] },
    });
    t.result('no-input', status('no input'));
    const numeric = t.call('Bash', { command: 42 });
    t.result(numeric, status('numeric'));
    const old = t.bash('git status', status('old'));
    for (let index = 0; index < 6; index += 1) t.bash('pwd', status(index));
    const { entries, expired } = expireStaleGlances(t.entries);
    expect(expired).toBe(1);
    expect(resultOf(entries, 'toolu-gone')).toBe(status('stray'));
    expect(resultOf(entries, 'no-input')).toBe(status('no input'));
    expect(resultOf(entries, numeric)).toBe(status('numeric'));
    // Only the judged glances count: the old status is 7 glances old, not 10.
    expect(resultOf(entries, old)).toBe(note('git status', 7));
  });

  it('judges each distinct command once and labels it the same every time', () => {
    const t = new TranscriptBuilder();
    const olds = Array.from({ length: 3 }, (_, index) => t.bash('  git status  ', status(index)));
    for (let index = 0; index < 6; index += 1) t.bash('pwd', status(index));
    const { entries } = expireStaleGlances(t.entries);
    expect(olds.map((id) => resultOf(entries, id))).toEqual([
      note('git status', 9),
      note('git status', 8),
      note('git status', 7),
    ]);
  });

  it('a negative keepRecent keeps none, like 0', () => {
    const t = new TranscriptBuilder();
    const ids = Array.from({ length: 3 }, (_, index) => t.bash('git status', status(index)));
    const { entries, expired } = expireStaleGlances(t.entries, { ...defaultEphemeralPolicy, keepRecent: -2 });
    expect(expired).toBe(3);
    expect(ids.map((id) => resultOf(entries, id))).toEqual([3, 2, 1].map((age) => note('git status', age)));
  });

  it('labels the command by its first line, at most 60 characters', () => {
    expect(commandLabel('  git status  \n  ')).toBe('git status');
    expect(commandLabel('git status\ngit diff --stat')).toBe('git status');
    expect(commandLabel(`git log --format=${'x'.repeat(80)}\necho two`)).toBe(
      `git log --format=${'x'.repeat(43)}`,
    );
  });

  it('keeps everything when disabled or when keepRecent covers all, and never mutates its input', () => {
    const t = new TranscriptBuilder();
    for (let index = 0; index < 8; index += 1) t.bash('git status', status(index));
    const frozen = structuredClone(t.entries);
    expect(expireStaleGlances(t.entries, { ...defaultEphemeralPolicy, enabled: false }).expired).toBe(0);
    expect(expireStaleGlances(t.entries, { ...defaultEphemeralPolicy, keepRecent: 8 }).expired).toBe(0);
    expect(expireStaleGlances(t.entries, { ...defaultEphemeralPolicy, keepRecent: 0 }).expired).toBe(8);
    expect(t.entries).toEqual(frozen);
  });

  it('never touches protected entries', () => {
    const t = new TranscriptBuilder();
    const id = t.call('Bash', { command: 'git status' });
    const meta = t.push({
      type: 'user',
      isMeta: true,
      message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: 'clean' }] },
    });
    for (let index = 0; index < 7; index += 1) t.bash('git status', 'clean');
    const { entries } = expireStaleGlances(t.entries);
    expect(entries.find((entry) => entry.uuid === meta.uuid)).toBe(meta);
  });
});
