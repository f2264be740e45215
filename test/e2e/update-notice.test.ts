/**
 * The update notice from a real process on a real terminal. flower never shows it from a git
 * checkout, so the built package is copied into a temporary "installed" location first (dist and
 * package.json copied; node_modules linked), as `npm i -g` would lay it out.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runInPty } from '../support/pty-session.js';

const repoRoot = join(import.meta.dirname, '..', '..');

let root: string;
let installedBin: string;
let xdg: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'flower-update-e2e-'));
  const installed = join(root, 'lib', 'node_modules', 'flower-agent');
  mkdirSync(installed, { recursive: true });
  cpSync(join(repoRoot, 'dist'), join(installed, 'dist'), { recursive: true });
  // As a published release would ship it: the notice runs only for a package that says it is on
  // npm (src/cli/update-notice.ts); this checkout does not, so its copy gets the flag here.
  const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8'));
  writeFileSync(
    join(installed, 'package.json'),
    JSON.stringify({ ...manifest, flower: { ...manifest.flower, npmPublished: true } }, null, 2),
  );
  symlinkSync(join(repoRoot, 'node_modules'), join(installed, 'node_modules'), 'dir');
  installedBin = join(installed, 'dist', 'cli', 'bin.js');
  xdg = join(root, 'xdg');
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

function flowerVersionInPty(env: Record<string, string> = {}, bin = installedBin) {
  return runInPty({
    argv: [process.execPath, bin, '--version'],
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: join(root, 'home'),
      XDG_CONFIG_HOME: xdg,
      TERM: 'xterm',
      // Any lookup goes to a port where nothing listens: offline, which must stay silent.
      npm_config_registry: 'http://127.0.0.1:1/',
      ...env,
    },
    steps: [],
  });
}

function seedState(state: Record<string, unknown>): void {
  mkdirSync(join(xdg, 'flower'), { recursive: true });
  writeFileSync(join(xdg, 'flower', '.update'), JSON.stringify(state));
}

describe('update notice from an installed copy', () => {
  const { version } = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string };

  it('shows a known newer version once, then stays quiet for the rest of the day', () => {
    seedState({ checkedAt: Date.now(), latest: '99.0.0' });
    const first = flowerVersionInPty();
    expect(first.status).toBe(0);
    expect(first.output).toContain('flower-agent 99.0.0 is available: npm i -g flower-agent');
    expect(first.output).toContain(version);

    const second = flowerVersionInPty();
    expect(second.status).toBe(0);
    expect(second.output).not.toContain('is available');
  });

  it("never from a git checkout (the repository's own build)", () => {
    seedState({ checkedAt: Date.now(), latest: '99.0.0' });
    const run = flowerVersionInPty({}, join(repoRoot, 'dist', 'cli', 'bin.js'));
    expect(run.status).toBe(0);
    expect(run.output).not.toContain('is available');
  });

  it('FLOWER_NO_UPDATE turns it off', () => {
    seedState({ checkedAt: Date.now(), latest: '99.0.0' });
    const run = flowerVersionInPty({ FLOWER_NO_UPDATE: '1' });
    expect(run.status).toBe(0);
    expect(run.output).not.toContain('is available');
  });

  it('offline with a stale check: no notice, no error, normal exit', () => {
    seedState({ checkedAt: 0 });
    const run = flowerVersionInPty();
    expect(run.status).toBe(0);
    expect(run.output.trim()).toBe(version);
  });
});
