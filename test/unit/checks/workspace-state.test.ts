import { execFileSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { workspaceState } from '../../../src/checks/workspace-state.js';

function workspace(): string {
  const ws = mkdtempSync(join(tmpdir(), 'flower-state-'));
  writeFileSync(join(ws, 'main.js'), 'console.log(1);\n');
  mkdirSync(join(ws, 'runs'));
  mkdirSync(join(ws, '.flower', 'notes'), { recursive: true });
  return ws;
}

const exclude = (ws: string) => [join(ws, 'runs'), join(ws, '.flower')];

describe('workspaceState outside git: a content hash', () => {
  it("changes with a file and stays put for flower's own directories", () => {
    const ws = workspace();
    const first = workspaceState(ws, exclude(ws));
    expect(first.method).toBe('content');
    writeFileSync(join(ws, 'runs', 'manifest.json'), '[]');
    writeFileSync(join(ws, '.flower', 'notes', 'goal.md'), '# Statement');
    expect(workspaceState(ws, exclude(ws))).toEqual(first);
    writeFileSync(join(ws, 'main.js'), 'console.log(2);\n');
    expect(workspaceState(ws, exclude(ws)).hash).not.toBe(first.hash);
  });

  it('counts a new empty file and a rename', () => {
    const ws = workspace();
    const first = workspaceState(ws, exclude(ws)).hash;
    writeFileSync(join(ws, 'empty.txt'), '');
    const second = workspaceState(ws, exclude(ws)).hash;
    expect(second).not.toBe(first);
    execFileSync('mv', [join(ws, 'empty.txt'), join(ws, 'renamed.txt')]);
    expect(workspaceState(ws, exclude(ws)).hash).not.toBe(second);
  });
});

describe('workspaceState outside git: what counts', () => {
  it('a rename that keeps the order of the files', () => {
    const ws = workspace();
    writeFileSync(join(ws, 'x1.txt'), 'same');
    const first = workspaceState(ws, exclude(ws)).hash;
    renameSync(join(ws, 'x1.txt'), join(ws, 'x2.txt'));
    expect(workspaceState(ws, exclude(ws)).hash).not.toBe(first);
  });

  it('a symbolic link by its target, not followed', () => {
    const ws = workspace();
    const first = workspaceState(ws, exclude(ws)).hash;
    symlinkSync('main.js', join(ws, 'link'));
    const linked = workspaceState(ws, exclude(ws)).hash;
    expect(linked).not.toBe(first);
    unlinkSync(join(ws, 'link'));
    symlinkSync('elsewhere.js', join(ws, 'link'));
    expect(workspaceState(ws, exclude(ws)).hash).not.toBe(linked);
  });

  it('never a .git directory (one git cannot use)', () => {
    const ws = workspace();
    mkdirSync(join(ws, '.git'));
    const first = workspaceState(ws, exclude(ws));
    expect(first.method).toBe('content');
    writeFileSync(join(ws, '.git', 'HEAD'), 'not a repository');
    expect(workspaceState(ws, exclude(ws))).toEqual(first);
  });
});

describe('workspaceState in a git repository: the tree hash', () => {
  function repository(): string {
    const ws = workspace();
    const git = (...args: string[]) => execFileSync('git', args, { cwd: ws, stdio: 'ignore' });
    git('init', '-q');
    writeFileSync(join(ws, '.gitignore'), 'build/\n');
    git('add', 'main.js', '.gitignore');
    return ws;
  }

  it("sees untracked and changed files, not ignored ones, and never touches the user's index or objects", () => {
    const ws = repository();
    const index = readFileSync(join(ws, '.git', 'index'));
    const objects = () => execFileSync('git', ['count-objects', '-v'], { cwd: ws, encoding: 'utf8' });
    const objectsBefore = objects();
    const first = workspaceState(ws, exclude(ws));
    expect(first.method).toBe('git');
    expect(first.hash).toMatch(/^[0-9a-f]{40}$/);
    mkdirSync(join(ws, 'build'));
    writeFileSync(join(ws, 'build', 'out.o'), 'binary');
    writeFileSync(join(ws, 'runs', 'sessions.db'), 'x');
    expect(workspaceState(ws, exclude(ws)).hash).toBe(first.hash);
    writeFileSync(join(ws, 'new.js'), 'untracked');
    const second = workspaceState(ws, exclude(ws)).hash;
    expect(second).not.toBe(first.hash);
    writeFileSync(join(ws, 'main.js'), 'changed');
    expect(workspaceState(ws, exclude(ws)).hash).not.toBe(second);
    expect(readFileSync(join(ws, '.git', 'index'))).toEqual(index);
    expect(objects()).toBe(objectsBefore);
    expect(execFileSync('git', ['status', '--porcelain'], { cwd: ws, encoding: 'utf8' })).toContain(
      '?? new.js',
    );
  });

  it('an excluded directory outside the workspace changes nothing (git still hashes)', () => {
    const ws = repository();
    const outside = mkdtempSync(join(tmpdir(), 'flower-state-outside-'));
    const state = workspaceState(ws, [...exclude(ws), outside]);
    expect(state).toEqual(workspaceState(ws, exclude(ws)));
    expect(state.method).toBe('git');
  });
});
