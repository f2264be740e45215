import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { replayCommand } from '../../../../src/agents/guards/delegate.js';
import { sandboxAvailability } from '../../../../src/runtime/sandbox/availability.js';
import {
  bubblewrapArgs,
  type WallFacts,
  type WallPlan,
  wallFacts,
  wallPlan,
} from '../../../../src/runtime/sandbox/bubblewrap.js';
import { defaultSandboxPolicy } from '../../../../src/runtime/sandbox/policy.js';
import { runWalled } from '../../../../src/runtime/sandbox/walled-run.js';
import { cleanUp, tempDir } from '../../../support/scratch.js';

afterEach(cleanUp);

const facts: WallFacts = {
  writable: ['/ws'],
  stores: [
    { path: '/home/u/.ssh', kind: 'directory' },
    { path: '/ws/.env', kind: 'file' },
  ],
  blankFile: '/tmp/blank',
  uid: 0,
  gid: 0,
};
const plan: WallPlan = { writable: ['/ws'], hidden: [], network: false, cwd: '/ws' };

describe('bubblewrap arguments', () => {
  it('mount everything read-only, then the writable places, then cover the stores, in that order', () => {
    const args = bubblewrapArgs(plan, facts, ['bash', '-c', 'ls']);
    const at = (...words: string[]) =>
      args.findIndex((_, index) => words.every((word, offset) => args[index + offset] === word));
    const root = at('--ro-bind', '/', '/');
    const writable = at('--bind', '/ws', '/ws');
    const ssh = at('--perms', '000', '--tmpfs', '/home/u/.ssh');
    const env = at('--ro-bind', '/tmp/blank', '/ws/.env');
    expect(root).toBeGreaterThanOrEqual(0);
    expect(writable).toBeGreaterThan(root);
    expect(ssh).toBeGreaterThan(writable);
    expect(env).toBeGreaterThan(writable);
    expect(args.slice(-5)).toEqual(['/ws', '--', 'bash', '-c', 'ls']);
    expect(args[args.length - 6]).toBe('--chdir');
  });

  it('own user namespace with no capability, own PID namespace, new session, dies with flower', () => {
    const args = bubblewrapArgs(plan, facts, ['true']);
    for (const flag of ['--unshare-user', '--unshare-pid', '--new-session', '--die-with-parent'])
      expect(args, flag).toContain(flag);
    expect(args.slice(args.indexOf('--cap-drop'), args.indexOf('--cap-drop') + 2)).toEqual([
      '--cap-drop',
      'ALL',
    ]);
  });

  it('shares the network only when the plan says so', () => {
    expect(bubblewrapArgs(plan, facts, ['true'])).toContain('--unshare-net');
    expect(bubblewrapArgs({ ...plan, network: true }, facts, ['true'])).not.toContain('--unshare-net');
  });

  it('sharing the network changes nothing else in the wall', () => {
    const walled = bubblewrapArgs(plan, facts, ['true']);
    expect(bubblewrapArgs({ ...plan, network: true }, facts, ['true'])).toEqual(
      walled.filter((arg) => arg !== '--unshare-net'),
    );
  });
});

describe('the wall plan', () => {
  const places = { reachable: ['/ws'], caches: ['/home/u/.npm'], hidden: ['/home/u/.ssh'] };

  it('a read-only role writes nothing and reaches nothing', () => {
    expect(
      wallPlan('read-only', { enabled: true, workerNetwork: { kind: 'any' } }, places, '/ws/src'),
    ).toEqual({
      writable: [],
      hidden: ['/home/u/.ssh'],
      network: false,
      cwd: '/ws/src',
    });
  });

  it('a worker writes the workspace, the caches and its scratch; the network only for `any`', () => {
    const registries = wallPlan('worker', defaultSandboxPolicy, places, '/ws', '/tmp/scratch');
    expect(registries.writable).toEqual(['/ws', '/home/u/.npm', '/tmp/scratch']);
    expect(registries.network).toBe(false);
    expect(wallPlan('worker', { enabled: true, workerNetwork: { kind: 'any' } }, places, '/ws').network).toBe(
      true,
    );
  });

  it('a worker without a scratch directory writes only the workspace and the caches', () => {
    expect(wallPlan('worker', defaultSandboxPolicy, places, '/ws').writable).toEqual(['/ws', '/home/u/.npm']);
  });

  it('covers a store where its links lead, leaves out what does not exist', () => {
    const home = tempDir('wall-home-');
    mkdirSync(join(home, 'real-ssh'));
    symlinkSync(join(home, 'real-ssh'), join(home, '.ssh'));
    writeFileSync(join(home, 'token'), 'x');
    const found = wallFacts({
      writable: [home, join(home, 'never-made')],
      hidden: [join(home, '.ssh'), join(home, 'token'), join(home, 'missing'), join(home, 'real-ssh')],
      network: false,
      cwd: home,
    });
    expect(found.writable).toEqual([home]);
    expect(found.stores).toEqual([
      { path: join(home, 'real-ssh'), kind: 'directory' },
      { path: join(home, 'token'), kind: 'file' },
    ]);
  });

  it('never covers the root itself, even when a store or its link names it', () => {
    const home = tempDir('wall-home-');
    symlinkSync('/', join(home, 'root-link'));
    writeFileSync(join(home, 'token'), 'x');
    const found = wallFacts({
      writable: [],
      hidden: ['/', join(home, 'root-link'), join(home, 'token')],
      network: false,
      cwd: home,
    });
    expect(found.stores).toEqual([{ path: join(home, 'token'), kind: 'file' }]);
  });

  it("covers file stores with one empty mode-000 file in flower's temporary directory, made again if removed", () => {
    const wall: WallPlan = { writable: [], hidden: [], network: false, cwd: '/' };
    const blank = wallFacts(wall).blankFile;
    expect(statSync(blank).size).toBe(0);
    expect(statSync(blank).mode & 0o777).toBe(0);
    expect(dirname(dirname(blank))).toBe(tmpdir());
    expect(basename(dirname(blank))).toMatch(/^flower-wall-/);
    expect(wallFacts(wall).blankFile, 'one file for every wall, not a directory per command').toBe(blank);
    rmSync(dirname(blank), { recursive: true, force: true });
    const again = wallFacts(wall).blankFile;
    expect(existsSync(again)).toBe(true);
    expect(statSync(again).mode & 0o777).toBe(0);
  });

  it('runs the command as the user who runs flower', () => {
    const uid = vi.spyOn(process, 'getuid').mockReturnValue(1234);
    const gid = vi.spyOn(process, 'getgid').mockReturnValue(5678);
    try {
      expect(wallFacts({ writable: [], hidden: [], network: false, cwd: '/' })).toMatchObject({
        uid: 1234,
        gid: 5678,
      });
    } finally {
      uid.mockRestore();
      gid.mockRestore();
    }
  });
});

describe.runIf(sandboxAvailability().available)('a walled command (real bubblewrap)', () => {
  const run = (wall: WallPlan, command: string, options: { timeoutMs?: number; maxBytes?: number } = {}) => {
    const outputPath = join(tempDir('wall-out-'), 'out');
    return runWalled(wall, command, {
      outputPath,
      timeoutMs: options.timeoutMs ?? 30_000,
      maxBytes: options.maxBytes ?? 1024 * 1024,
      env: { PATH: process.env.PATH, ANTHROPIC_API_KEY: 'sk-ant-in-env-0123456789', HOME: '/root' },
    }).then((outcome) => ({ ...outcome, output: readFileSync(outputPath, 'utf8') }));
  };

  it('cannot read a covered store, write, or connect; keeps the exit code and stderr', async () => {
    const home = tempDir('wall-home-');
    writeFileSync(join(home, '.env'), 'ANTHROPIC_API_KEY=sk-ant-on-disk-0123456789\n');
    mkdirSync(join(home, '.ssh'));
    writeFileSync(join(home, '.ssh', 'id'), 'private');
    const wall: WallPlan = {
      writable: [],
      hidden: [join(home, '.env'), join(home, '.ssh')],
      network: false,
      cwd: home,
    };
    const result = await run(
      wall,
      `cat .env; cat .ssh/id; echo x > new; printenv ANTHROPIC_API_KEY; echo "env $?"; exec 3<>/dev/tcp/127.0.0.1/5432; exit 7`,
    );
    expect(result.exitCode).toBe(7);
    expect(result.output).not.toContain('sk-ant');
    expect(result.output).not.toContain('private');
    expect(result.output.match(/Permission denied/g)?.length).toBe(2);
    expect(result.output).toContain('Read-only file system');
    expect(result.output).toContain('env 1');
    expect(result.output).toMatch(/Connection refused|Network is unreachable/);
    const exited = await run(wall, 'echo fine; exit 7');
    expect(exited).toMatchObject({ exitCode: 7, timedOut: false, cut: false, output: 'fine\n' });
  });

  it('writes where the plan says, only there', async () => {
    const workspace = tempDir('wall-ws-');
    const outside = tempDir('wall-outside-');
    const wall: WallPlan = { writable: [workspace], hidden: [], network: false, cwd: workspace };
    const result = await run(wall, `echo in > in.txt && echo wrote; echo out > ${outside}/out.txt`);
    expect(result.output).toContain('wrote');
    expect(readFileSync(join(workspace, 'in.txt'), 'utf8')).toBe('in\n');
    expect(result.output).toContain('Read-only file system');
  });

  it('cuts an endless output at the cap and ends the command; ends a hang at its time limit', async () => {
    const wall: WallPlan = { writable: [], hidden: [], network: false, cwd: '/' };
    const flood = await run(wall, 'yes flood', { maxBytes: 64 * 1024 });
    expect(flood.cut).toBe(true);
    expect(flood.output.length).toBeLessThan(64 * 1024 + 200);
    expect(flood.output).toContain('[output cut at 65536 bytes; the command was ended]');
    const hang = await run(wall, 'sleep 60', { timeoutMs: 500 });
    expect(hang).toMatchObject({ exitCode: 124, timedOut: true });
    expect(hang.output).toContain('the command was ended after');
  });
});

describe('the replay command', () => {
  it('prints the file and exits with the code, whatever the path holds', () => {
    const directory = tempDir("it's-");
    const path = join(directory, 'out');
    writeFileSync(path, 'the output\n');
    const replay = spawnSync('bash', ['-c', replayCommand(path, 3)], { encoding: 'utf8' });
    expect(replay.stdout).toBe('the output\n');
    expect(replay.status).toBe(3);
  });
});

describe('sandbox availability', () => {
  it('names what is missing and the install command; unsupported platforms say so', () => {
    const missing = sandboxAvailability({ PATH: tempDir('empty-path-') }, 'linux');
    expect(missing).toMatchObject({
      available: false,
      problem: 'bubblewrap (bwrap) and socat not found on PATH',
    });
    expect((missing as { fix: string }).fix).toContain('apt-get install -y bubblewrap socat');
    expect(sandboxAvailability({}, 'win32')).toMatchObject({ available: false });
    expect((sandboxAvailability({}, 'win32') as { problem: string }).problem).toContain('win32');
    expect(sandboxAvailability({}, 'darwin')).toEqual({ available: true, engine: 'seatbelt' });
  });
});
