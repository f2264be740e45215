/**
 * How a walled command ends and what its outcome says (runtime/sandbox/walled-run.ts): the time
 * limit asks every process of the wall to end (SIGTERM to its process group) and kills what is left
 * after a grace (SIGKILL); reaching the output cap ends the command, once; a wall that cannot start
 * is an outcome, never an exception, and touches no file but its own; the secret variables stay out.
 *
 * The walls that must react to signals in a chosen way are stand-ins: a `bwrap` script on PATH
 * (runWalled starts `bwrap` from the caller's PATH), as the check runner's tests do for a wall
 * that refuses to start. The cap and the exit codes are checked with the real bubblewrap.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { chmodSync, closeSync, fstatSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sandboxAvailability } from '../../../../src/runtime/sandbox/availability.js';
import type { WallPlan } from '../../../../src/runtime/sandbox/bubblewrap.js';
import { runWalled, walledEnvironment } from '../../../../src/runtime/sandbox/walled-run.js';
import { processesNamed } from '../../../support/named-processes.js';
import { cleanUp, tempDir } from '../../../support/scratch.js';

// The real spawn, except where a test makes it fail the way only an exhausted machine does.
vi.mock('node:child_process', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:child_process')>();
  return { ...actual, spawn: vi.fn(actual.spawn) };
});

const strays: string[] = [];
afterEach(async () => {
  // A test that failed may leave its named processes behind; they must not outlive it, nor what
  // they started (a wall leads its own process group).
  for (const token of strays.splice(0))
    for (const pid of processesNamed(token))
      for (const target of [-pid, pid]) {
        try {
          process.kill(target, 'SIGKILL');
        } catch {
          // Not a group's leader, or gone.
        }
      }
  await cleanUp();
});

const wall: WallPlan = { writable: [], hidden: [], network: false, cwd: '/' };

/**
 * A directory whose `bwrap` is `script` (bash), which ignores bubblewrap's arguments. Its processes
 * that do not end by themselves are named after the directory, so none outlives its test.
 */
function fakeBwrap(script: string): string {
  const bin = tempDir('walled-run-bwrap-');
  strays.push(bin);
  writeFileSync(join(bin, 'bwrap'), `#!/bin/bash\n${script}\n`);
  chmodSync(join(bin, 'bwrap'), 0o755);
  return bin;
}

function run(
  command: string,
  options: { timeoutMs?: number; maxBytes?: number; env?: Record<string, string | undefined> } = {},
) {
  const outputPath = join(tempDir('walled-run-out-'), 'out');
  const started = Date.now();
  return runWalled(wall, command, {
    outputPath,
    timeoutMs: options.timeoutMs ?? 30_000,
    maxBytes: options.maxBytes ?? 1024 * 1024,
    env: options.env ?? { PATH: process.env.PATH },
  }).then((outcome) => ({
    ...outcome,
    output: readFileSync(outputPath, 'utf8'),
    elapsedMs: Date.now() - started,
  }));
}

describe('the environment of a walled command', () => {
  it("is the caller's minus every secret variable, and nothing that is unset", () => {
    const environment = walledEnvironment({
      PATH: '/usr/bin',
      HOME: '/home/u',
      ANTHROPIC_API_KEY: 'sk-ant-0123456789',
      GITHUB_TOKEN: 'ghp-secret',
      UNSET: undefined,
    });
    expect(Object.entries(environment)).toEqual([
      ['PATH', '/usr/bin'],
      ['HOME', '/home/u'],
    ]);
  });
});

describe('a walled command at its time limit', () => {
  it('every process in the wall gets SIGTERM first, and the outcome says the limit ended it', async () => {
    // Both the wall and a process it started say when they get SIGTERM, then end.
    const bin = fakeBwrap(
      [
        `trap 'echo "the wall got SIGTERM"; exit 0' TERM`,
        `bash -c 'trap "echo \\"its child got SIGTERM\\"; exit 0" TERM; sleep 300 & wait' &`,
        'wait',
      ].join('\n'),
    );
    const result = await run('true', { timeoutMs: 1000, env: { PATH: `${bin}:${process.env.PATH}` } });
    expect(result).toMatchObject({ exitCode: 124, timedOut: true, cut: false });
    expect(result.output).toContain('the wall got SIGTERM');
    expect(result.output).toContain('its child got SIGTERM');
    expect(result.output.endsWith('\n[the command was ended after 1 s]\n')).toBe(true);
  }, 15_000);

  it('a wall that ignores SIGTERM is killed after a grace, with every process in it', async () => {
    const token = `walled-run-deaf-${process.pid}-${Date.now()}`;
    strays.push(token);
    // SIGTERM ignored by the wall and, inherited, by the process it started, which holds the output.
    const bin = fakeBwrap([`trap '' TERM`, `(exec -a ${token} sleep 300) &`, 'wait'].join('\n'));
    const result = await run('true', { timeoutMs: 300, env: { PATH: `${bin}:${process.env.PATH}` } });
    expect(result).toMatchObject({ exitCode: 124, timedOut: true });
    expect(result.elapsedMs).toBeGreaterThanOrEqual(1000);
    expect(processesNamed(token)).toEqual([]);
  }, 15_000);
});

describe('a walled command past its output cap', () => {
  it('is asked to end once, however much more it sends, then killed', async () => {
    const terms = join(tempDir('walled-run-terms-'), 'terms');
    // Counts its SIGTERMs and keeps flooding (the flood ignores SIGTERM) until SIGKILL.
    const bin = fakeBwrap(
      [
        `trap 'echo term >> "$TERMS_SEEN"' TERM`,
        `(trap '' TERM; exec -a "$0-flood" yes flood) &`,
        'while :; do wait; done',
      ].join('\n'),
    );
    const result = await run('true', {
      maxBytes: 64 * 1024,
      env: { PATH: `${bin}:${process.env.PATH}`, TERMS_SEEN: terms },
    });
    expect(result).toMatchObject({ cut: true, timedOut: false });
    expect(result.output).toBe(
      `${'flood\n'.repeat(11_000).slice(0, 64 * 1024)}\n[output cut at 65536 bytes; the command was ended]\n`,
    );
    expect(readFileSync(terms, 'utf8')).toBe('term\n');
  }, 15_000);

  describe.runIf(sandboxAvailability().available)('(real bubblewrap)', () => {
    it('output that reaches the cap exactly ends the command, which reads as ended by SIGTERM', async () => {
      const result = await run('printf 0123456789; sleep 300', { maxBytes: 10, timeoutMs: 5000 });
      expect(result).toMatchObject({ exitCode: 143, cut: true, timedOut: false });
      expect(result.output).toBe('0123456789\n[output cut at 10 bytes; the command was ended]\n');
    }, 15_000);

    it('output written in pieces is cut where the pieces together reach the cap', async () => {
      const pieces = 'printf aaaa; sleep 0.2; printf bbbb; sleep 0.2; printf cccc; sleep 0.2; echo dddd';
      const result = await run(pieces, { maxBytes: 10 });
      expect(result).toMatchObject({ cut: true, timedOut: false });
      expect(result.output).toBe('aaaabbbbcc\n[output cut at 10 bytes; the command was ended]\n');
    }, 15_000);
  });
});

describe('a wall that cannot start', () => {
  it("because bubblewrap refuses to build it ends with bubblewrap's exit code and words in the output", async () => {
    // What bubblewrap says in a container without user namespaces, on its stderr.
    const bin = fakeBwrap('echo "bwrap: Creating new namespace failed: Operation not permitted" >&2\nexit 1');
    const result = await run('true', { env: { PATH: `${bin}:${process.env.PATH}` } });
    expect(result).toMatchObject({ exitCode: 1, timedOut: false, cut: false });
    expect(result.output).toBe('bwrap: Creating new namespace failed: Operation not permitted\n');
  });

  it('because bubblewrap is not on PATH is exit code 126 with the reason, and closes no file but its own', async () => {
    const result = await run('true', { env: { PATH: tempDir('walled-run-no-bwrap-') } });
    expect(result).toMatchObject({ exitCode: 126, timedOut: false, cut: false });
    expect(result.output).toBe('The sandbox could not start (spawn bwrap ENOENT).\n');
    // Files opened right after the outcome take the numbers it freed; the failed start's last
    // events (Node reports a failed spawn twice: 'error', then 'close') must leave them open.
    const files = Array.from({ length: 8 }, () => openSync('/dev/null', 'r'));
    await new Promise((resolve) => setTimeout(resolve, 200));
    try {
      for (const fd of files) expect(() => fstatSync(fd)).not.toThrow();
    } finally {
      for (const fd of files) closeSync(fd);
    }
  });

  it('because the machine is out of file descriptors is an outcome too, not an exception', async () => {
    // What Node's spawn does then: no stdio streams at all, and an 'error' event.
    vi.mocked(spawn).mockImplementationOnce(() => {
      const child = new ChildProcess();
      process.nextTick(() =>
        child.emit('error', Object.assign(new Error('spawn bwrap EMFILE'), { code: 'EMFILE' })),
      );
      return child;
    });
    const result = await run('true');
    expect(result).toMatchObject({ exitCode: 126, timedOut: false, cut: false });
    expect(result.output).toBe('The sandbox could not start (spawn bwrap EMFILE).\n');
  });
});
