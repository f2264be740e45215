/**
 * The sandbox gate from the command line (issue 19), with the built CLI on a machine where the
 * sandbox cannot run: a PATH that holds everything the host has except bubblewrap. `flower doctor`
 * names the problem and the fix; an unattended `go` (and `demo`) refuses with exit 1 and creates
 * nothing; on a terminal the person is asked, and "no" refuses while "y" runs; `--no-sandbox` runs
 * (the demo's worker commands included) and says so; a bad `--network` is a usage error.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockModel, startMockModel } from '../../src/testing/server.js';
import { isolatedEnv, mockedEnv, PtySession, runFlower, tempDir } from './cli-harness.js';
import { echoBrief } from './scenario-harness.js';

/**
 * One directory of symlinks to every program on this process's PATH (and node's own directory)
 * except `bwrap`: the host as it is, without bubblewrap. The first program of a name wins, as on
 * the PATH it copies.
 */
function pathWithoutBubblewrap(): string {
  const directory = tempDir('no-bwrap-path');
  const seen = new Set<string>(['bwrap']);
  const sources = [dirname(process.execPath), ...(process.env.PATH ?? '').split(delimiter)];
  for (const source of sources) {
    if (source === '' || !existsSync(source)) continue;
    for (const name of readdirSync(source)) {
      if (seen.has(name)) continue;
      seen.add(name);
      symlinkSync(join(source, name), join(directory, name));
    }
  }
  return directory;
}

let model: MockModel;
let noBwrap: string;
let cleanup: string[] = [];
beforeAll(async () => {
  model = await startMockModel({ main: Array.from({ length: 20 }, () => echoBrief) });
  noBwrap = pathWithoutBubblewrap();
  cleanup.push(noBwrap);
});
afterAll(async () => {
  await model.close();
  for (const path of cleanup) rmSync(path, { recursive: true, force: true });
  cleanup = [];
});

/** The mocked child environment, without bubblewrap on PATH. */
const withoutBwrap = (extra: Record<string, string> = {}) => mockedEnv(model, { PATH: noBwrap, ...extra });

describe('without bubblewrap', () => {
  it('flower doctor names the problem and the command that installs it, as a warning', async () => {
    const run = await runFlower(['doctor'], { env: isolatedEnv({ PATH: noBwrap, ANTHROPIC_API_KEY: 'k' }) });
    // It stops an unattended run, so doctor fails for it (exit 1) and says so last.
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('the sandbox settings stop unattended runs');
    expect(run.stdout).toMatch(/Warnings: \d+[\s\S]*! the sandbox cannot run here: bubblewrap \(bwrap\)/);
    expect(run.stdout).toContain('Sandbox: cannot run here: bubblewrap (bwrap) not found on PATH');
    expect(run.stdout).toContain('fix: sudo apt-get install -y bubblewrap socat');
    expect(run.stdout).toMatch(/credential stores hidden: \d+ places/);
  });

  it('an unattended go refuses with exit 1, names the fix and --no-sandbox, and writes nothing', async () => {
    const workspace = tempDir('sandbox-refused');
    const run = await runFlower(['-w', workspace, '--timeout', '0', 'count the words'], {
      env: withoutBwrap(),
      stdin: 'devnull',
    });
    expect(run.status).toBe(1);
    const line = run.stderr.trim();
    expect(line.split('\n')).toHaveLength(1);
    expect(line).toContain('the sandbox cannot run here: bubblewrap (bwrap) not found on PATH');
    expect(line).toContain('sudo apt-get install -y bubblewrap socat');
    expect(line).toContain('--no-sandbox');
    expect(readdirSync(workspace)).toEqual([]);
    expect(model.requests.some((request) => JSON.stringify(request.body).includes('count the words'))).toBe(
      false,
    );
  });

  it('go --no-sandbox runs and says at the start that it runs without the sandbox', async () => {
    const workspace = tempDir('sandbox-off');
    const run = await runFlower(
      ['-w', workspace, '--no-sandbox', '--clarify-only', '--timeout', '0', 'add up'],
      {
        env: withoutBwrap(),
      },
    );
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout.split('\n')[0]).toContain('running without the sandbox (--no-sandbox)');
    expect(readFileSync(join(workspace, '.flower', 'notes', 'brief.md'), 'utf8')).toContain('add up');
  });

  it('an unattended demo refuses the same way, before it makes its directory', async () => {
    const parent = tempDir('demo-refused');
    const target = join(parent, 'demo');
    const run = await runFlower(['demo', target], { env: isolatedEnv({ PATH: noBwrap }) });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('the sandbox cannot run here');
    expect(run.stderr).toContain('--no-sandbox');
    expect(existsSync(target)).toBe(false);
  });

  it("demo --no-sandbox still runs the whole flow, the worker's commands included, and says so", async () => {
    const workspace = join(tempDir('demo-unsandboxed'), 'here');
    const run = await runFlower(['demo', '--no-sandbox', workspace], {
      env: isolatedEnv({ PATH: noBwrap }),
      timeoutMs: 170_000,
    });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout.split('\n')[0]).toContain('running without the sandbox (--no-sandbox)');
    expect(run.stdout).toContain("The judge's verdict: achieved.");
  });

  it('on a terminal asks once: no refuses and writes nothing, y runs without the sandbox', async () => {
    const refused = tempDir('sandbox-asked-no');
    const no = PtySession.flower(
      ['-w', refused, '--clarify-only', '--timeout', '0', 'count'],
      withoutBwrap(),
    );
    await no.waitFor('Run this task without the sandbox? [y/N]');
    expect(no.screen).toContain('The sandbox cannot run here: bubblewrap (bwrap) not found on PATH');
    no.type('\r');
    expect(await no.exited()).toBe(1);
    expect(no.screen).toContain('Nothing was started');
    expect(readdirSync(refused)).toEqual([]);

    const agreed = tempDir('sandbox-asked-yes');
    const yes = PtySession.flower(
      ['-w', agreed, '--clarify-only', '--timeout', '0', 'tally'],
      withoutBwrap(),
    );
    await yes.waitFor('[y/N]');
    yes.type('y\r');
    expect(await yes.exited()).toBe(0);
    expect(yes.screen).toContain('running without the sandbox');
    expect(readFileSync(join(agreed, '.flower', 'notes', 'brief.md'), 'utf8')).toContain('tally');
  });
});

describe('--network', () => {
  it('a bad value is a usage error naming the accepted forms, before anything is created', async () => {
    const workspace = tempDir('network-bogus');
    const run = await runFlower(['-w', workspace, '--network', 'bogus!', 'count'], { env: withoutBwrap() });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain("argument 'bogus!' is invalid");
    expect(run.stderr).toContain('`none`, `any`, `registries`');
    expect(readdirSync(workspace)).toEqual([]);
  });

  it('a bad FLOWER_NETWORK is a usage error too, and --network overrides it', async () => {
    const workspace = tempDir('network-variable');
    mkdirSync(workspace, { recursive: true });
    const bad = await runFlower(['-w', workspace, '--timeout', '0', 'count'], {
      env: withoutBwrap({ FLOWER_NETWORK: 'bogus!' }),
    });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('FLOWER_NETWORK=bogus!');
    const overridden = await runFlower(
      ['-w', workspace, '--network', 'none', '--no-sandbox', '--clarify-only', '--timeout', '0', 'count'],
      { env: withoutBwrap({ FLOWER_NETWORK: 'bogus!' }) },
    );
    expect(overridden.stderr).toBe('');
    expect(overridden.status).toBe(0);
  });

  it('is documented in --help', async () => {
    const run = await runFlower(['go', '--help']);
    expect(run.stdout).toContain('--network <policy>');
    expect(run.stdout).toContain('FLOWER_NETWORK');
    expect(run.stdout).toContain('--no-sandbox');
  });
});
