import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSpillWriter, spillFileName } from '../../../src/store/spill.js';
import { defaultTrimPolicy, trimLargeResults } from '../../../src/store/trim.js';
import { TranscriptBuilder } from '../../support/transcript-builder.js';
import { validateTranscript } from '../../support/transcript-validator.js';

const policy = { ...defaultTrimPolicy, enabled: true, keepRecent: 2 };
const resultOf = (entries: readonly Record<string, unknown>[], id: string): unknown =>
  entries
    .flatMap(
      (entry) => ((entry.message as { content?: unknown })?.content as Array<Record<string, unknown>>) ?? [],
    )
    .find((block) => block?.type === 'tool_result' && block.tool_use_id === id)?.content;

let workspace: string;
beforeEach(() => {
  workspace = mkdtempSync(path.join(tmpdir(), 'flower-trim-'));
});
afterEach(() => {
  rmSync(workspace, { recursive: true, force: true });
});

describe('trim layer', () => {
  it('spills all but the newest large results and points to the file', () => {
    const t = new TranscriptBuilder();
    const texts = ['a', 'b', 'c', 'd'].map((letter) => letter.repeat(3000));
    const ids = texts.map((text) => t.tool('Read', { file_path: 'f' }, text));
    t.bash('echo small', 'small');
    const spill = createSpillWriter(workspace, policy.spillDirname);
    const result = trimLargeResults(t.entries, policy, spill);
    expect(result).toMatchObject({ trimmed: 2, kept: 2, spillFailures: 0 });
    const spillPath = path.join(workspace, '.flower/spill', spillFileName(texts[0] as string));
    expect(resultOf(result.entries, ids[0] as string)).toBe(
      `[tool result archived: 3000 chars. Full text at ${spillPath}; Read it when needed]`,
    );
    expect(path.isAbsolute(spillPath)).toBe(true);
    expect(readFileSync(spillPath, 'utf8')).toBe(texts[0]);
    expect(resultOf(result.entries, ids[2] as string)).toBe(texts[2]);
    expect(result.charsSaved).toBe(
      2 * 3000 - 2 * (resultOf(result.entries, ids[0] as string) as string).length,
    );
    expect(validateTranscript(result.entries, { original: t.entries, singleChain: true })).toEqual([]);
  });

  it('names spill files by the first 16 hex digits of the SHA-256 and never rewrites one', () => {
    const text = 'z'.repeat(2500);
    expect(spillFileName(text)).toMatch(/^[0-9a-f]{16}\.txt$/);
    const directory = path.join(workspace, '.flower/spill');
    mkdirSync(directory, { recursive: true });
    const target = path.join(directory, spillFileName(text));
    writeFileSync(target, 'already here');
    const before = statSync(target).mtimeMs;
    expect(createSpillWriter(workspace, '.flower/spill')(text)).toBe(target);
    expect(readFileSync(target, 'utf8')).toBe('already here');
    expect(statSync(target).mtimeMs).toBe(before);
  });

  it('leaves images, documents, protected entries and small results alone', () => {
    const t = new TranscriptBuilder();
    const image = t.tool('Read', { file_path: 'p.png' }, '', {
      blocks: [
        { type: 'text', text: 'x'.repeat(5000) },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
      ],
    });
    t.compactSummary('s'.repeat(9000));
    t.meta('m'.repeat(9000));
    const small = t.tool('Read', { file_path: 'f' }, 'short');
    for (let index = 0; index < 3; index += 1) t.tool('Read', { file_path: 'f' }, `${index}`.repeat(2000));
    const result = trimLargeResults(t.entries, policy, createSpillWriter(workspace, policy.spillDirname));
    expect(result.trimmed).toBe(1);
    expect(resultOf(result.entries, image)).toEqual(resultOf(t.entries, image));
    expect(resultOf(result.entries, small)).toBe('short');
    expect(validateTranscript(result.entries, { original: t.entries })).toEqual([]);
  });

  it('trim alone never rewrites a large result held in a compact-summary or meta entry', () => {
    const t = new TranscriptBuilder();
    const summarised = t.call('Read', { file_path: 'old.log' });
    const summary = t.push({
      type: 'user',
      isCompactSummary: true,
      message: {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: summarised, content: 's'.repeat(9000) }],
      },
      toolUseResult: { stdout: 's'.repeat(9000) },
    });
    const noted = t.call('Bash', { command: 'make' });
    const meta = t.push({
      type: 'user',
      isMeta: true,
      message: {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: noted, content: [{ type: 'text', text: 'm'.repeat(9000) }] },
        ],
      },
    });
    const plain = t.tool('Read', { file_path: 'f' }, 'p'.repeat(9000));
    const result = trimLargeResults(
      t.entries,
      { ...policy, keepRecent: 0 },
      createSpillWriter(workspace, policy.spillDirname),
    );
    expect(result.trimmed).toBe(1);
    expect(resultOf(result.entries, plain)).toContain('archived: 9000 chars');
    expect(result.entries.find((entry) => entry.uuid === summary.uuid)).toBe(summary);
    expect(result.entries.find((entry) => entry.uuid === meta.uuid)).toBe(meta);
  });

  it('joins text blocks of a list result and trims it as one text', () => {
    const t = new TranscriptBuilder();
    const id = t.tool('Read', { file_path: 'f' }, '', {
      blocks: [
        { type: 'text', text: 'x'.repeat(1500) },
        { type: 'text', text: 'y'.repeat(1500) },
      ],
    });
    const result = trimLargeResults(
      t.entries,
      { ...policy, keepRecent: 0 },
      createSpillWriter(workspace, policy.spillDirname),
    );
    expect(result.trimmed).toBe(1);
    expect(resultOf(result.entries, id)).toContain('archived: 3000 chars');
  });

  it('leaves results untrimmed (and counts them) when the spill directory is not writable', () => {
    const t = new TranscriptBuilder();
    const id = t.tool('Read', { file_path: 'f' }, 'q'.repeat(4000));
    const blocked = path.join(workspace, 'blocked');
    writeFileSync(blocked, 'a file where the directory should be');
    const result = trimLargeResults(
      t.entries,
      { ...policy, keepRecent: 0 },
      createSpillWriter(blocked, 'spill'),
    );
    expect(result).toMatchObject({ trimmed: 0, spillFailures: 1, charsSaved: 0 });
    expect(resultOf(result.entries, id)).toBe('q'.repeat(4000));
  });

  it('a spill file that cannot be put in place leaves no temporary file and no pointer', () => {
    const text = 'w'.repeat(3000);
    const directory = path.join(workspace, '.flower/spill');
    // A directory squatting on the file's name makes the final rename fail, for any user, root included.
    mkdirSync(path.join(directory, spillFileName(text)), { recursive: true });
    const failures: unknown[] = [];
    const spill = createSpillWriter(workspace, '.flower/spill', {
      onFailure: (error) => failures.push(error),
    });
    expect(spill(text)).toBeUndefined();
    expect(readdirSync(directory)).toEqual([spillFileName(text)]);
    expect(failures).toHaveLength(1);
  });

  it('is off by default in the library', () => {
    const t = new TranscriptBuilder();
    t.tool('Read', { file_path: 'f' }, 'q'.repeat(4000));
    t.tool('Read', { file_path: 'f' }, 'q'.repeat(4000));
    expect(defaultTrimPolicy.enabled).toBe(false);
    expect(trimLargeResults(t.entries, { ...defaultTrimPolicy, keepRecent: 0 }, () => 'x').trimmed).toBe(0);
  });
});
