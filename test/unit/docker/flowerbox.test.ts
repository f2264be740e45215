/**
 * docker/flowerbox, the real script, run by the system shell with a `docker` stand-in first on
 * PATH. No container engine runs on these machines (the `docker` there is only a client), so the
 * stand-in records each call's arguments and plays the engine's part in the mount probe: it
 * "sees" the probe file through the `-v <host>:/work` mount when told the path is shared, and says
 * whether the file existed at the moment of the call. What is checked is the wrapper's decisions:
 * which docker commands it runs, with which arguments, and what it tells the person.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runInPty } from '../../support/pty-session.js';

const script = path.join(import.meta.dirname, '..', '..', '..', 'docker', 'flowerbox');

// The stand-in: appends {argv, probeExisted} per call to $DOCKER_STANDIN_LOG as one JSON line.
const STAND_IN = `#!${process.execPath}
const fs = require('node:fs');
const path = require('node:path');
const argv = process.argv.slice(2);
const call = { argv, stdinIsTTY: Boolean(process.stdin.isTTY) };
let code = Number(process.env.DOCKER_STANDIN_EXIT || 0);
const entrypoint = argv.indexOf('--entrypoint');
if (entrypoint !== -1 && argv[entrypoint + 1] === 'test') {
  const mount = argv[argv.indexOf('-v') + 1];
  const host = mount.slice(0, mount.lastIndexOf(':/work'));
  const inside = argv[argv.indexOf('-f') + 1];
  call.probeExisted = fs.existsSync(path.join(host, inside.replace(/^\\/work\\//, '')));
  code = process.env.DOCKER_STANDIN_PROBE_EXIT
    ? Number(process.env.DOCKER_STANDIN_PROBE_EXIT)
    : process.env.DOCKER_STANDIN_SHARED === '1' && call.probeExisted ? 0 : 1;
}
fs.appendFileSync(process.env.DOCKER_STANDIN_LOG, JSON.stringify(call) + '\\n');
process.exit(code);
`;

let root: string;
let home: string;
let flowerHome: string;
let bin: string;
let log: string;

beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), 'flowerbox-'));
  home = path.join(root, 'home');
  flowerHome = path.join(root, 'flower-home');
  bin = path.join(root, 'bin');
  log = path.join(root, 'docker-calls.jsonl');
  for (const directory of [home, flowerHome, bin]) mkdirSync(directory, { recursive: true });
  writeFileSync(path.join(flowerHome, '.env'), 'ANTHROPIC_API_KEY=sk-test\n');
  writeFileSync(path.join(bin, 'docker'), STAND_IN);
  chmodSync(path.join(bin, 'docker'), 0o755);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

interface Call {
  argv: string[];
  stdinIsTTY: boolean;
  probeExisted?: boolean;
}

const calls = (): Call[] =>
  existsSync(log)
    ? readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Call)
    : [];

/** What every flower run starts with: the credentials file and the directory mounted at /work. */
const dockerRun = (project: string): string[] => [
  'run',
  '-i',
  '--rm',
  '--env-file',
  `${flowerHome}/.env`,
  '-v',
  `${project}:/work`,
  '-w',
  '/work',
];

function environment(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: `${bin}:${process.env.PATH ?? ''}`,
    HOME: home,
    FLOWER_HOME: flowerHome,
    DOCKER_STANDIN_LOG: log,
    ...extra,
  };
}

function flowerbox(cwd: string, args: string[], extra: Record<string, string> = {}, command = script) {
  mkdirSync(cwd, { recursive: true });
  const result = spawnSync(command, args, { cwd, env: environment(extra), encoding: 'utf8', input: '' });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('flowerbox', () => {
  it('refuses to start without $FLOWER_HOME/.env, and says where to point it', () => {
    rmSync(path.join(flowerHome, '.env'));
    const run = flowerbox(path.join(home, 'project'), ['do it']);
    expect(run.status).toBe(1);
    expect(run.stderr).toBe(
      `flowerbox: ${flowerHome}/.env (the credentials) does not exist. Point FLOWER_HOME at the directory that has it, e.g. FLOWER_HOME=~/.config/flower\n`,
    );
    expect(calls()).toEqual([]);
  });

  it('under $HOME: no probe; mounts the directory at /work, reads .env, passes the arguments on unchanged', () => {
    const project = path.join(home, 'project');
    const args = [
      'go',
      'fix the "flaky" test',
      '',
      '--timeout',
      '0',
      '$HOME and `backticks`',
      'two\nlines',
      '--',
    ];
    const run = flowerbox(project, args);
    expect(run.status).toBe(0);
    expect(calls()).toEqual([{ argv: [...dockerRun(project), 'flower-box', ...args], stdinIsTTY: false }]);
  });

  it('off a terminal: no -t, and a note that flower runs unattended', () => {
    const run = flowerbox(path.join(home, 'project'), ['hi']);
    expect(calls()[0]?.argv).not.toContain('-t');
    expect(run.stderr).toContain(
      'standard input is not a terminal, so nobody can answer questions: flower runs unattended',
    );
  });

  it('on a terminal: -t, and no note', () => {
    const project = path.join(home, 'project');
    mkdirSync(project, { recursive: true });
    const run = runInPty({ argv: [script, 'hi'], cwd: project, env: environment(), steps: [] });
    expect(run.status).toBe(0);
    expect(calls()[0]?.argv).toEqual([...dockerRun(project), '-t', 'flower-box', 'hi']);
    expect(calls()[0]?.stdinIsTTY).toBe(true);
    expect(run.output).not.toContain('not a terminal');
  });

  it('outside $HOME on a shared path: probes with a file that exists during the probe and is gone after', () => {
    const elsewhere = path.join(root, 'srv', 'project');
    const run = flowerbox(elsewhere, ['hi'], { DOCKER_STANDIN_SHARED: '1', FLOWER_IMAGE: 'my/flower:1' });
    expect(run.status).toBe(0);
    const [probe, work] = calls();
    expect(probe?.argv.slice(0, 6)).toEqual([
      'run',
      '--rm',
      '-v',
      `${elsewhere}:/work`,
      '--entrypoint',
      'test',
    ]);
    expect(probe?.argv.slice(6, 8)).toEqual(['my/flower:1', '-f']);
    expect(probe?.argv[8]).toMatch(/^\/work\/\.flowerbox-mount-probe\.\d+$/);
    expect(probe?.probeExisted).toBe(true);
    expect(work?.argv.at(-2)).toBe('my/flower:1');
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  it('outside $HOME on a path the engine cannot see: stops with what to do, runs nothing, leaves no probe', () => {
    const elsewhere = path.join(root, 'srv', 'project');
    const run = flowerbox(elsewhere, ['hi']);
    expect(run.status).toBe(1);
    expect(run.stderr).toBe(
      `flowerbox: ${elsewhere} is not a host path the container can see (colima, for one, shares only $HOME by default).\n` +
        `flowerbox: its output would be lost silently: work under $HOME, or share this path (colima start --mount '${elsewhere}:w').\n`,
    );
    expect(calls()).toHaveLength(1);
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  it('outside $HOME when the image cannot start: says to build it rather than blaming the mount', () => {
    const elsewhere = path.join(root, 'srv', 'project');
    const run = flowerbox(elsewhere, ['hi'], { DOCKER_STANDIN_PROBE_EXIT: '125' });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('could not start the image flower-box to check that');
    expect(run.stderr).toContain(
      '(docker exited with 125): build it first (docker/build) or set FLOWER_IMAGE.',
    );
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  it('hands FLOWER_STORE_URL to the container by name only, so the password is on no command line', () => {
    const url = 'postgres://flower:s3cret@db.example:5432/tasks';
    flowerbox(path.join(home, 'project'), ['hi'], { FLOWER_STORE_URL: url });
    const argv = calls()[0]?.argv ?? [];
    expect(argv.slice(argv.indexOf('-e'), argv.indexOf('-e') + 2)).toEqual(['-e', 'FLOWER_STORE_URL']);
    expect(argv.join(' ')).not.toContain('s3cret');
  });

  it("ends with flower's exit code (docker run is exec'd)", () => {
    expect(flowerbox(path.join(home, 'project'), ['hi'], { DOCKER_STANDIN_EXIT: '3' }).status).toBe(3);
  });

  it('finds .env in the checkout it lives in when FLOWER_HOME is not set', () => {
    const checkout = path.join(root, 'checkout');
    mkdirSync(path.join(checkout, 'docker'), { recursive: true });
    copyFileSync(script, path.join(checkout, 'docker', 'flowerbox'));
    chmodSync(path.join(checkout, 'docker', 'flowerbox'), 0o755);
    writeFileSync(path.join(checkout, '.env'), 'ANTHROPIC_API_KEY=sk-test\n');
    const env = environment();
    delete (env as Record<string, string | undefined>).FLOWER_HOME;
    const project = path.join(home, 'project');
    mkdirSync(project, { recursive: true });
    const result = spawnSync(path.join(checkout, 'docker', 'flowerbox'), ['hi'], {
      cwd: project,
      env,
      encoding: 'utf8',
      input: '',
    });
    expect(result.status).toBe(0);
    expect(calls()[0]?.argv.slice(3, 5)).toEqual(['--env-file', `${checkout}/.env`]);
  });
});
