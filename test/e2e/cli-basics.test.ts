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

  it('shows examples, the exit codes and the environment variables in --help (issue 21, polish)', () => {
    const { stdout } = flower('--help');
    expect(stdout).toMatch(/^Examples:\n {2}flower "/m);
    expect(stdout).toMatch(
      /^Exit codes:\n {2}0 +done\n {2}1 +failed.*\n {2}2 +.*\n {2}130 +interrupted \(Ctrl-C\)$/m,
    );
    expect(stdout).toMatch(/^Environment .*\n {2}ANTHROPIC_API_KEY +/m);
    expect(stdout).toMatch(/^ {2}FLOWER_STORE_URL +/m);
    // Only the top-level help carries them; a command's help has its own examples.
    expect(flower('status', '--help').stdout).not.toContain('Exit codes:');
  });

  it('exits 2 with a usage hint on an unknown flag', () => {
    const result = flower('--no-such-flag');
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('flower --help');
  });
});
