/**
 * The shipped example from an installed package (issue 21, polish): "`flower run
 * ./examples/my-flow.ts:main` in an empty directory" could not work — an empty directory has no
 * examples/, and a copy of my-flow.ts there cannot import `flower-agent` (Node resolves packages
 * from the file's own node_modules, never from a global install). What does work, and what the
 * README says instead: name the example inside the installed package, `-w` an empty directory.
 * The package's `.ts` needs the `typescript` package beside it (an optional peer, not installed
 * with flower); without it the run stops with one line that says so, before anything is paid for.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { isolatedEnv, runNodeScript, tempDir } from './cli-harness.js';
import { installPacked, linkModule, packTarball } from './packed-package.js';

describe('examples/my-flow.ts from an installed package, run from an empty directory', () => {
  /** A global prefix's node_modules (`npm root -g`) holding the installed package. */
  let globalRoot: string;
  let installed: string;
  beforeAll(() => {
    globalRoot = join(tempDir('global'), 'lib', 'node_modules');
    installed = installPacked(packTarball(), globalRoot);
  }, 120_000);

  it('without typescript installed: one line saying so, exit 1, nothing written', async () => {
    const cwd = tempDir('empty');
    const workspace = join(tempDir('ws'), 'ws');
    const flow = `${join(installed, 'examples', 'my-flow.ts')}:main`;
    const run = await runNodeScript(
      join(installed, 'dist', 'cli', 'bin.js'),
      ['-w', workspace, 'run', flow],
      {
        cwd,
        env: isolatedEnv({ ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' }),
      },
    );
    expect(run.stderr).toContain('is TypeScript, and flower compiles it with the "typescript" package');
    expect(run.status).toBe(1);
    expect(existsSync(join(workspace, 'runs'))).toBe(false);
    expect(readdirSync(cwd)).toEqual([]);
  }, 60_000);

  it('with typescript installed beside it (npm i -g typescript): the example runs, its files land in -w', async () => {
    linkModule(globalRoot, 'typescript');
    const cwd = tempDir('empty');
    const workspace = join(tempDir('ws'), 'ws');
    // The installed offline example runs `flower -w <workspace> run <installed>/examples/my-flow.ts:main`.
    const run = await runNodeScript(join(installed, 'examples', 'offline.mjs'), [workspace], {
      cwd,
      env: isolatedEnv(),
      timeoutMs: 170_000,
    });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('! gate rejected write (attempt 1/3)');
    expect(run.stdout).toMatch(/== usage =+ 2\/2/);
    expect(existsSync(join(workspace, 'wordcount.py'))).toBe(true);
    expect(existsSync(join(workspace, 'runs', 'manifest.json'))).toBe(true);
    expect(readdirSync(cwd)).toEqual([]);
  }, 180_000);
});
