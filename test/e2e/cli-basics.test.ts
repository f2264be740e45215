import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const repoRoot = join(import.meta.dirname, '..', '..');
const bin = join(repoRoot, 'dist', 'cli', 'bin.js');

function flower(...args: string[]) {
  return spawnSync(process.execPath, [bin, ...args], {
    encoding: 'utf8',
    env: { ...process.env, FLOWER_NO_UPDATE: '1' },
  });
}

describe('flower binary', () => {
  it('prints the package version for --version', () => {
    const { version } = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
      version: string;
    };
    const result = flower('--version');
    expect(result.status).toBe(0);
    expect(result.stdout.trim()).toBe(version);
  });

  it('explains itself for --help', () => {
    const result = flower('--help');
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('Usage: flower');
  });

  it('exits 2 with a usage hint on an unknown flag', () => {
    const result = flower('--no-such-flag');
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('flower --help');
  });
});
