import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { prepareRunDirectory } from '../../../src/runtime/run-directory.js';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'flower-run-dir-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));
const modeOf = (path: string) => statSync(path).mode & 0o777;

describe('prepareRunDirectory', () => {
  it('creates the run directory 0700 with a .gitignore that ignores everything', () => {
    const runs = join(root, 'ws', 'runs');
    prepareRunDirectory(runs, join(root, 'ws'));
    expect(modeOf(runs)).toBe(0o700);
    expect(readFileSync(join(runs, '.gitignore'), 'utf8').split('\n')).toContain('*');
    expect(modeOf(join(runs, '.gitignore'))).toBe(0o600);
  });

  it('tightens a run directory and files an older version left readable, and keeps a .gitignore of the user', () => {
    const runs = join(root, 'runs');
    mkdirSync(runs, { mode: 0o755 });
    writeFileSync(join(runs, 'manifest.json'), '[]', { mode: 0o644 });
    writeFileSync(join(runs, '.gitignore'), 'mine\n');
    prepareRunDirectory(runs, join(root, 'ws'));
    expect(modeOf(runs)).toBe(0o700);
    expect(modeOf(join(runs, 'manifest.json'))).toBe(0o600);
    expect(readFileSync(join(runs, '.gitignore'), 'utf8')).toBe('mine\n');
  });

  it('with no workspace named, the run directory is its own: private, with its .gitignore', () => {
    const runs = join(root, 'aside');
    prepareRunDirectory(runs);
    expect(modeOf(runs)).toBe(0o700);
    expect(existsSync(join(runs, '.gitignore'))).toBe(true);
  });

  it('leaves a run directory that is the workspace (or holds it) as it is: no .gitignore, no mode change', () => {
    const workspace = join(root, 'ws');
    mkdirSync(workspace, { mode: 0o755 });
    prepareRunDirectory(workspace, workspace);
    prepareRunDirectory(root, workspace);
    expect(existsSync(join(workspace, '.gitignore'))).toBe(false);
    expect(existsSync(join(root, '.gitignore'))).toBe(false);
    expect(modeOf(workspace)).toBe(0o755);
  });
});
