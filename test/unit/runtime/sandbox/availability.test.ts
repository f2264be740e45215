import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { onPath, sandboxAvailability } from '../../../../src/runtime/sandbox/availability.js';
import { cleanUp, tempDir } from '../../../support/scratch.js';

afterEach(cleanUp);

/** Writes an executable shell script `name` into `dir`. */
function script(dir: string, name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

/**
 * A PATH directory holding stand-ins for the sandbox's tools: a `socat` that does nothing, and a
 * `bwrap` that records the arguments and PATH of its trial run, prints `stderr` and exits `status`.
 */
function tools(options: { bwrap?: boolean; socat?: boolean; status?: number; stderr?: string } = {}) {
  const bin = tempDir('sandbox-tools-');
  const seen = join(tempDir('sandbox-trial-'), 'seen');
  if (options.socat ?? true) script(bin, 'socat', 'exit 0');
  if (options.bwrap ?? true) {
    script(
      bin,
      'bwrap',
      [
        `printf '%s\\n' "$@" > '${seen}.args'`,
        `printf '%s' "$PATH" > '${seen}.path'`,
        `printf '%s' '${options.stderr ?? ''}' >&2`,
        `exit ${options.status ?? 0}`,
      ].join('\n'),
    );
  }
  return {
    bin,
    /** The arguments the trial run gave bwrap, one per element. */
    args: () => readFileSync(`${seen}.args`, 'utf8').split('\n').slice(0, -1),
    /** The PATH the trial run saw. */
    path: () => readFileSync(`${seen}.path`, 'utf8'),
  };
}

describe('sandbox availability', () => {
  it('an unsupported platform is said as such, with where flower runs', () => {
    expect(sandboxAvailability({}, 'win32')).toEqual({
      available: false,
      problem: 'the sandbox does not run on win32 (Linux and macOS only)',
      fix: 'run flower on Linux, macOS or WSL 2',
    });
  });

  it('on Linux with bwrap and socat on PATH and a trial run that works, the sandbox is bubblewrap', () => {
    const found = tools();
    const path = ['', join(found.bin, 'nowhere'), found.bin].join(':');
    expect(sandboxAvailability({ PATH: path }, 'linux')).toEqual({ available: true, engine: 'bubblewrap' });
  });

  it('the trial run asks bubblewrap for the namespaces the wall uses, over a read-only root, with the PATH it was given', () => {
    const found = tools();
    sandboxAvailability({ PATH: found.bin, ANTHROPIC_API_KEY: 'sk-not-for-the-trial' }, 'linux');
    expect(found.args()).toEqual(['--unshare-user', '--unshare-net', '--ro-bind', '/', '/', '--', 'true']);
    expect(found.path()).toBe(found.bin);
  });

  it('names the one tool that is missing', () => {
    expect(sandboxAvailability({ PATH: tools({ socat: false }).bin }, 'linux')).toMatchObject({
      available: false,
      problem: 'socat not found on PATH',
    });
    expect(sandboxAvailability({ PATH: tools({ bwrap: false }).bin }, 'linux')).toMatchObject({
      available: false,
      problem: 'bubblewrap (bwrap) not found on PATH',
    });
  });

  it('a trial run that fails (no user namespaces in this container) is an answer quoting the first line bwrap said, with the fix', () => {
    const found = tools({
      status: 1,
      stderr:
        '  bwrap: No permissions to creating new namespace, likely because the kernel does not allow it\nsecond line\n',
    });
    expect(sandboxAvailability({ PATH: found.bin }, 'linux')).toEqual({
      available: false,
      problem:
        'bubblewrap cannot create its namespaces here (bwrap: No permissions to creating new namespace, likely because the kernel does not allow it)',
      fix: 'allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1), or run the container with --privileged or a seccomp profile that permits them',
    });
  });

  it('a trial run that fails silently says its exit status', () => {
    const found = tools({ status: 3 });
    expect(sandboxAvailability({ PATH: found.bin }, 'linux')).toMatchObject({
      available: false,
      problem: 'bubblewrap cannot create its namespaces here (exit 3)',
    });
  });

  it('a bwrap that cannot be started at all is an answer saying why, not an exception', () => {
    const bin = tools({ bwrap: false }).bin;
    writeFileSync(join(bin, 'bwrap'), '#!/nonexistent/interpreter\n');
    chmodSync(join(bin, 'bwrap'), 0o755);
    const answer = sandboxAvailability({ PATH: bin }, 'linux');
    expect(answer).toMatchObject({ available: false });
    expect((answer as { problem: string }).problem).toBe(
      `bubblewrap cannot create its namespaces here (spawnSync ${join(bin, 'bwrap')} ENOENT)`,
    );
  });
});

describe('finding a tool on PATH', () => {
  it('returns the first executable of that name, skipping directories without one', () => {
    const first = tempDir('path-first-');
    const second = tempDir('path-second-');
    writeFileSync(join(first, 'tool'), 'not executable\n');
    const tool = script(second, 'tool', 'exit 0');
    const later = tempDir('path-third-');
    script(later, 'tool', 'exit 0');
    expect(onPath('tool', { PATH: [first, second, later].join(':') })).toBe(tool);
    expect(onPath('tool', { PATH: first })).toBeUndefined();
    expect(onPath('tool', {})).toBeUndefined();
  });

  it('an empty PATH entry is skipped, not read as the working directory', () => {
    const dir = tempDir('path-cwd-');
    mkdirSync(join(dir, 'sub'));
    script(join(dir, 'sub'), 'tool', 'exit 0');
    // A name that resolves from the working directory: found only if '' were taken for it.
    const fromCwd = relative(process.cwd(), join(dir, 'sub', 'tool'));
    expect(onPath(fromCwd, { PATH: '' })).toBeUndefined();
    expect(onPath(fromCwd, { PATH: ':' })).toBeUndefined();
  });
});
