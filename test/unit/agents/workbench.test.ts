import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { describeText, humanSize, IsolationError, Workbench } from '../../../src/agents/workbench.js';
import { HOSTILE_ESCAPES, HOSTILE_SECRETS, RAW_CONTROL, secretCore } from '../../support/hostile-payloads.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'flower-wb-')));
  dirs.push(dir);
  return dir;
}

describe('describeText', () => {
  it('prefers an explicit desc line within the first eight lines, in any comment style', () => {
    expect(describeText('#!/bin/sh\n# desc: build the thing\necho')).toBe('build the thing');
    expect(describeText('// DESC： run the checks\n')).toBe('run the checks');
    expect(describeText('-- desc: migrate the db')).toBe('migrate the db');
    expect(describeText('a\nb\nc\nd\ne\nf\ng\nh\n# desc: too late')).toBe('');
  });

  it('falls back to the first meaningful comment or docstring, skipping a shebang', () => {
    expect(describeText('#!/usr/bin/env python\n# Collects the logs\n')).toBe('Collects the logs');
    expect(describeText('"""Parse the report."""\nimport os')).toBe('Parse the report.');
    expect(describeText('# x\nx = 1')).toBe('');
    expect(describeText('x = 1')).toBe('');
  });

  it('cuts descriptions at 100 characters', () => {
    expect(describeText(`# desc: ${'é'.repeat(150)}`)).toBe('é'.repeat(100));
  });
});

describe('humanSize', () => {
  it('uses B, K and M with 1024 steps', () => {
    expect(humanSize(512)).toBe('512B');
    expect(humanSize(1536)).toBe('1.5K');
    expect(humanSize(2 * 1024 * 1024)).toBe('2.0M');
  });
});

describe('Workbench', () => {
  it('lays out .flower/ under the workspace and shows paths relative to it', () => {
    const workspace = tempDir();
    const workbench = new Workbench(workspace).ensure();
    expect(workbench.root).toBe(join(workspace, '.flower'));
    expect(workbench.external).toBe(false);
    expect(workbench.show(workbench.scripts)).toBe('.flower/scripts');
    expect(workbench.contains(join(workspace, '.flower/notes/x.md'))).toBe(true);
    expect(workbench.contains(join(workspace, 'src/x.ts'))).toBe(false);
  });

  it('writes an INDEX.md listing every file with its description and size', () => {
    const workspace = tempDir();
    const workbench = new Workbench(workspace).ensure();
    writeFileSync(join(workbench.scripts, 'build.sh'), '# desc: build everything\nmake\n');
    mkdirSync(join(workbench.notes, 'archive'));
    writeFileSync(join(workbench.notes, 'archive', 'old.md'), 'plain text');
    writeFileSync(join(workbench.notes, '.hidden'), 'skip me');

    const index = workbench.refresh();
    expect(readFileSync(workbench.indexPath, 'utf8')).toBe(index);
    expect(index).toContain('## Reusable scripts (1)\n- `.flower/scripts/build.sh` — build everything (30B)');
    expect(index).toContain('## Artifacts (0)\n- (none)');
    expect(index).toContain('## Notes (1)\n- `.flower/notes/archive/old.md` — (no description) (10B)');
    expect(index).not.toContain('.hidden');
  });

  it('writes INDEX.md masked and inert: a hostile file name or description drives nothing and leaks no secret', () => {
    const workspace = tempDir();
    const workbench = new Workbench(workspace).ensure();
    const escapes = Object.values(HOSTILE_ESCAPES).join('');
    writeFileSync(
      join(workbench.scripts, 'deploy.sh'),
      `# desc: deploy with ${HOSTILE_SECRETS.github} ${HOSTILE_SECRETS.dbPassword} ${escapes}\n`,
    );
    writeFileSync(join(workbench.artifacts, `out\x1b]0;PWNED-TITLE\x07\u202e.txt`), 'x');
    // A token the 100-character cut runs through: masked before the cut, so no part of it stays.
    writeFileSync(join(workbench.notes, 'long.md'), `# ${'x'.repeat(80)} ${HOSTILE_SECRETS.github}\n`);
    const index = workbench.refresh();
    const onDisk = readFileSync(workbench.indexPath, 'utf8');
    expect(onDisk).toBe(index);
    expect(onDisk).not.toContain(secretCore(HOSTILE_SECRETS.github!));
    expect(onDisk).not.toContain(secretCore(HOSTILE_SECRETS.dbPassword!));
    expect(onDisk).not.toMatch(RAW_CONTROL);
    expect(onDisk).not.toContain(HOSTILE_SECRETS.github!.slice(4, 14));
    // Visible, so a reader sees what was there.
    expect(onDisk).toContain('out\u241b]0;PWNED-TITLE\u2407[U+202E].txt');
    expect(onDisk).toContain('— deploy with ghp_');
    // The index keeps the user's umask, like the files it lists (see workbench.ts).
    expect(statSync(workbench.indexPath).mode & 0o777).toBe(0o666 & ~process.umask());
  });

  it('lists at most the configured number of entries per category in the prompt block', () => {
    const workspace = tempDir();
    const workbench = new Workbench(workspace, { maxIndexEntries: 3 }).ensure();
    for (let index = 0; index < 5; index++) writeFileSync(join(workbench.artifacts, `a${index}.txt`), 'x');
    const block = workbench.promptBlock();
    expect(block).toContain('# Workbench .flower/');
    expect(block.match(/\.flower\/artifacts\/a\d\.txt/g)).toHaveLength(3);
    expect(block).toContain('- … and 2 more: `ls .flower/artifacts/`');
    expect(block).toContain('Output longer than 2000 characters goes in `.flower/artifacts/`');
    expect(block).toContain('`# desc: <one sentence>`');
  });

  it('says so when the workbench is empty', () => {
    expect(new Workbench(tempDir()).promptBlock()).toContain('(empty so far)');
  });

  it('moves outside a git repository with --isolate and shows absolute paths', () => {
    const parent = tempDir();
    const workspace = join(parent, 'proj');
    execFileSync('git', ['init', '-q', workspace]);
    const workbench = Workbench.isolated(workspace);
    expect(workbench.root).toBe(join(parent, '.flower-proj'));
    expect(workbench.external).toBe(true);
    expect(workbench.show(workbench.scripts)).toBe(join(parent, '.flower-proj', 'scripts'));
    expect(workbench.promptBlock()).toContain('always use these absolute paths');
    expect(workbench.promptBlock()).toContain(`\`${join(parent, '.flower-proj', 'artifacts')}/\``);
  });

  it('refuses --isolate outside a git repository with directions', () => {
    const workspace = tempDir();
    expect(() => Workbench.isolated(workspace)).toThrow(IsolationError);
    expect(() => Workbench.isolated(workspace)).toThrow(
      `--isolate needs ${workspace} to be a git repository`,
    );
    expect(() => Workbench.isolated(workspace)).toThrow('or drop --isolate');
  });
});
