/**
 * Checks inside flower's bubblewrap wall, with real shells, real bubblewrap and real processes: a
 * check cannot read a credential store (flower's user `.env` under a fake HOME, the run directory),
 * cannot write outside the workspace and its own TMPDIR, has no network (a local listener is
 * refused), gets no key; the wall's time limit ends every process in it; a 100 MB output leaves a
 * capped log; a wall that cannot be built is a failing check with a clear problem, not an exception.
 */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultCheckPolicy, runCheck, runChecks } from '../../../src/checks/runner.js';
import { maskSecret } from '../../../src/config/credentials.js';
import { sandboxAvailability } from '../../../src/runtime/sandbox/availability.js';
import { sandboxPlaces } from '../../../src/runtime/sandbox/places.js';
import { defaultSandboxPolicy, type SandboxPolicy } from '../../../src/runtime/sandbox/policy.js';
import { namedProcessesGone, processesNamed } from '../../support/named-processes.js';

const KEY = 'sk-ant-walled-check-0123456789';

/** A workspace with a run directory, and a fake HOME holding flower's user `.env`. */
function task() {
  const root = mkdtempSync(join(tmpdir(), 'flower-walled-check-'));
  const workspace = join(root, 'ws');
  const home = join(root, 'home');
  mkdirSync(join(workspace, 'runs'), { recursive: true });
  writeFileSync(join(workspace, 'runs', 'sessions.db'), `transcript with ${KEY}`);
  mkdirSync(join(home, '.config', 'flower'), { recursive: true });
  writeFileSync(join(home, '.config', 'flower', '.env'), `ANTHROPIC_API_KEY=${KEY}\n`);
  const outside = join(root, 'outside');
  mkdirSync(outside);
  const env = { PATH: process.env.PATH, HOME: home, ANTHROPIC_API_KEY: KEY, GITHUB_TOKEN: 'ghp-secret' };
  const places = sandboxPlaces({ env, workspace, runDir: join(workspace, 'runs') });
  return { root, workspace, home, outside, env, places };
}

function check(command: string, timeoutMs?: number) {
  return { description: 'it works', command, ...(timeoutMs === undefined ? {} : { timeoutMs }) };
}

const servers: Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

describe.runIf(sandboxAvailability().available)('a walled check (real bubblewrap)', () => {
  const wall = (places: ReturnType<typeof task>['places'], policy: SandboxPolicy = defaultSandboxPolicy) => ({
    policy,
    places,
  });

  it('cannot read the user .env or the run directory, and gets no key', async () => {
    const { workspace, home, env, places } = task();
    const run = await runCheck(
      'item',
      check(
        [
          `cat ${home}/.config/flower/.env && echo READ-ENV`,
          'cat runs/sessions.db && echo READ-RUNS',
          'ls runs && echo LISTED-RUNS',
          'printenv ANTHROPIC_API_KEY; printenv GITHUB_TOKEN',
          'echo done',
        ].join('\n'),
      ),
      { cwd: workspace, outputPath: join(workspace, 'read.log'), env, wall: wall(places) },
    );
    const log = readFileSync(run.outputPath, 'utf8');
    expect(run.passed).toBe(true);
    expect(log).toMatch(/Permission denied/);
    expect(log).not.toContain(KEY);
    expect(log).not.toMatch(/READ-ENV|READ-RUNS|LISTED-RUNS|ghp-secret/);
    expect(log.trim().endsWith('done')).toBe(true);
  });

  it('writes the workspace and its own TMPDIR, nothing else; the TMPDIR is private and gone afterwards', async () => {
    const { workspace, outside, env, places } = task();
    const run = await runCheck(
      'item',
      check(
        [
          'echo built > built.txt',
          `touch ${outside}/escaped || echo OUTSIDE-REFUSED`,
          'touch /tmp/flower-walled-escape-$$ || echo TMP-REFUSED',
          'echo "tmp=$TMPDIR"; stat -c %a "$TMPDIR"',
          'echo scratch > "$TMPDIR/file" && cat "$TMPDIR/file"',
        ].join('\n'),
      ),
      { cwd: workspace, outputPath: join(workspace, 'write.log'), env, wall: wall(places) },
    );
    const log = readFileSync(run.outputPath, 'utf8');
    expect(run.passed).toBe(true);
    expect(readFileSync(join(workspace, 'built.txt'), 'utf8')).toBe('built\n');
    expect(existsSync(join(outside, 'escaped'))).toBe(false);
    expect(log).toContain('OUTSIDE-REFUSED');
    expect(log).toContain('TMP-REFUSED');
    const scratch = /tmp=(.*)/.exec(log)?.[1] ?? '';
    expect(scratch).toMatch(/flower-check-/);
    expect(log).toMatch(/\n700\n/);
    expect(log).toContain('scratch');
    expect(existsSync(scratch)).toBe(false);
  });

  it('has no network: a listener on this machine refuses it, and never sees a connection', async () => {
    const { workspace, env, places } = task();
    let connections = 0;
    const server = createServer((socket) => {
      connections += 1;
      // The host check closes at once; a reset is its goodbye.
      socket.on('error', () => {});
      socket.end('hello\n');
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    // The host side sees the listener work, so the refusal below is the wall's.
    const host = await runCheck('item', check(`exec 3<>/dev/tcp/127.0.0.1/${port}`), {
      cwd: workspace,
      outputPath: join(workspace, 'host.log'),
      env,
    });
    expect(host.passed).toBe(true);
    const seen = connections;
    const run = await runCheck('item', check(`exec 3<>/dev/tcp/127.0.0.1/${port}`), {
      cwd: workspace,
      outputPath: join(workspace, 'net.log'),
      env,
      wall: wall(places),
    });
    expect(run.passed).toBe(false);
    expect(readFileSync(run.outputPath, 'utf8')).toMatch(/refused|unreachable/i);
    expect(connections).toBe(seen);
  });

  it('ends a hanging check at its time limit, every process in the wall with it', async () => {
    const { workspace, env, places } = task();
    const token = `flower-walled-hang-${process.pid}-${Date.now()}`;
    // One process leaves the group and even the session: the PID namespace still takes it along.
    const command = `(exec -a ${token}-a sleep 300) & setsid bash -c 'exec -a ${token}-b sleep 300' & wait`;
    const running = runCheck('item', check(command, 1500), {
      cwd: workspace,
      outputPath: join(workspace, 'hang.log'),
      env,
      wall: wall(places),
    });
    // While it runs, its processes are there (so their absence later means something).
    let during: number[] = [];
    for (let tries = 0; tries < 40 && during.length < 2; tries += 1) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      during = processesNamed(token);
    }
    const run = await running;
    expect(during.length).toBeGreaterThanOrEqual(2);
    expect(run).toMatchObject({ passed: false, timedOut: true });
    expect(run.durationS).toBeLessThan(10);
    expect(await namedProcessesGone(token)).toBe(true);
  });

  it('ends a running walled check with everything in it when flower exits', async () => {
    const { workspace, env, places } = task();
    const token = `flower-walled-exit-${process.pid}-${Date.now()}`;
    const before = new Set(process.listeners('exit'));
    const running = runCheck('item', check(`(exec -a ${token} sleep 300) & wait`, 60_000), {
      cwd: workspace,
      outputPath: join(workspace, 'exit.log'),
      env,
      wall: wall(places),
    });
    for (let tries = 0; tries < 100 && processesNamed(token).length === 0; tries += 1)
      await new Promise((resolve) => setTimeout(resolve, 25));
    expect(processesNamed(token).length).toBeGreaterThan(0);
    // What process.exit runs, without ending the test's process: the handlers the check added.
    for (const listener of process.listeners('exit').filter((l) => !before.has(l))) listener.call(process, 0);
    const run = await running;
    expect(run).toMatchObject({ passed: false, timedOut: false });
    expect(run.durationS).toBeLessThan(5);
    expect(await namedProcessesGone(token)).toBe(true);
  });

  it('caps the log of a 100 MB output', async () => {
    const { workspace, env, places } = task();
    const run = await runCheck(
      'item',
      check(`echo 'the first line'; yes 'a line of output' | head -c 104857600; echo; echo 'the last line'`),
      { cwd: workspace, outputPath: join(workspace, 'big.log'), env, wall: wall(places) },
    );
    expect(run.passed).toBe(true);
    expect(run.outputBytes).toBe(104_857_600 + 'the first line\n\nthe last line\n'.length);
    const { headBytes, tailBytes } = defaultCheckPolicy.log;
    expect(statSync(run.outputPath).size).toBeLessThan(headBytes + tailBytes + 1024);
    expect(statSync(run.outputPath).mode & 0o777).toBe(0o600);
    expect(run.tail.endsWith('the last line')).toBe(true);
  }, 60_000);

  it('runs on the host only when the policy is off (--no-sandbox)', async () => {
    const { workspace, home, env, places } = task();
    const run = await runCheck('item', check(`cat ${home}/.config/flower/.env`), {
      cwd: workspace,
      outputPath: join(workspace, 'host.log'),
      env,
      wall: wall(places, { ...defaultSandboxPolicy, enabled: false }),
    });
    expect(run.passed).toBe(true);
    // It did read the user's .env (no wall); its log, which people read, shows the key masked.
    const log = readFileSync(run.outputPath, 'utf8');
    expect(log).toContain(`ANTHROPIC_API_KEY=${maskSecret(KEY)}`);
    expect(log).not.toContain(KEY);
  });

  it('runChecks passes the wall to every check', async () => {
    const { workspace, outside, env, places } = task();
    const runs = await runChecks(
      [`escapes — check: \`touch ${outside}/one\``, 'builds — check: `touch two`'],
      { cwd: workspace, dir: join(workspace, 'round'), env, wall: wall(places) },
    );
    expect(runs.map((run) => run.passed)).toEqual([false, true]);
    expect(existsSync(join(outside, 'one'))).toBe(false);
    expect(existsSync(join(workspace, 'two'))).toBe(true);
  });
});

describe('a wall that cannot be built', () => {
  /**
   * A directory whose `bwrap` prints `stderr` (a printf format) and fails; by default what
   * bubblewrap says in a container without user namespaces.
   */
  function refusingBwrap(
    stderr = 'bwrap: Creating new namespace failed: Operation not permitted\\n',
  ): string {
    const bin = mkdtempSync(join(tmpdir(), 'flower-fake-bwrap-'));
    const fake = join(bin, 'bwrap');
    writeFileSync(fake, `#!/bin/sh\nprintf "${stderr}" >&2\nexit 1\n`);
    chmodSync(fake, 0o755);
    return bin;
  }

  /** A directory holding only the shells, for a PATH on which `bwrap` is whatever the test adds. */
  function shellsOnly(): string {
    const bin = mkdtempSync(join(tmpdir(), 'flower-shells-only-'));
    for (const tool of ['bash', 'sh']) symlinkSync(`/bin/${tool}`, join(bin, tool));
    return bin;
  }

  it('is a failing check saying so, not an exception', async () => {
    const { workspace, env, places } = task();
    const marker = join(workspace, 'ran');
    const run = await runCheck('item', check(`touch ${marker}`), {
      cwd: workspace,
      outputPath: join(workspace, 'refused.log'),
      env: { ...env, PATH: `${refusingBwrap()}:${process.env.PATH}` },
      wall: { policy: defaultSandboxPolicy, places },
    });
    expect(run).toMatchObject({ passed: false, exitCode: null });
    expect(run.problem).toMatch(/the sandbox could not start it \(bwrap: Creating new namespace failed/);
    expect(run.problem).toMatch(/did not run.*--no-sandbox/);
    expect(readFileSync(run.outputPath, 'utf8')).toContain('Creating new namespace failed');
    expect(existsSync(marker)).toBe(false);
  });

  it('finds the complaint with blanks around it, and shows it without them', async () => {
    const { workspace, env, places } = task();
    const bin = refusingBwrap(
      'warming up\\n\\tbwrap: Creating new namespace failed: Operation not permitted \\r\\n',
    );
    const run = await runCheck('item', check('true'), {
      cwd: workspace,
      outputPath: join(workspace, 'blanks.log'),
      env: { ...env, PATH: `${bin}:${process.env.PATH}` },
      wall: { policy: defaultSandboxPolicy, places },
    });
    expect(run).toMatchObject({ passed: false, exitCode: null });
    expect(run.problem).toContain(
      '(bwrap: Creating new namespace failed: Operation not permitted), so it did not run',
    );
  });

  it('a scratch directory that cannot be made is a failing check saying why, and the command does not run', async () => {
    const { root, workspace, env, places } = task();
    const marker = join(workspace, 'ran');
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = join(root, 'no-such-directory');
    let run: Awaited<ReturnType<typeof runCheck>>;
    try {
      run = await runCheck('item', check(`touch ${marker}`), {
        cwd: workspace,
        outputPath: join(workspace, 'scratch.log'),
        env,
        wall: { policy: defaultSandboxPolicy, places },
      });
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
    expect(run).toMatchObject({ passed: false, exitCode: null, signal: null, timedOut: false });
    expect(run.problem).toMatch(
      /^the sandbox could not start it \(ENOENT: no such file or directory, mkdtemp .*no-such-directory.*\), so it did not run/,
    );
    expect(readFileSync(run.outputPath, 'utf8')).toBe(`${run.problem}\n`);
    expect(existsSync(marker)).toBe(false);
  });

  it('says why bubblewrap could not be started when it is there but cannot be run', async () => {
    const { workspace, env, places } = task();
    const bin = shellsOnly();
    // A directory named bwrap is found on PATH and cannot be executed.
    mkdirSync(join(bin, 'bwrap'));
    const run = await runCheck('item', check('true'), {
      cwd: workspace,
      outputPath: join(workspace, 'unrunnable.log'),
      env: { ...env, PATH: bin },
      wall: { policy: defaultSandboxPolicy, places },
    });
    expect(run.passed).toBe(false);
    expect(run.problem).toMatch(/^the sandbox could not start it \(spawn bwrap EACCES\), so it did not run/);
  });

  it('names bubblewrap when it is not on PATH', async () => {
    const { workspace, env, places } = task();
    const bin = shellsOnly();
    const run = await runCheck('item', check('true'), {
      cwd: workspace,
      outputPath: join(workspace, 'missing.log'),
      env: { ...env, PATH: bin },
      wall: { policy: defaultSandboxPolicy, places },
    });
    expect(run.passed).toBe(false);
    expect(run.problem).toMatch(/bubblewrap \(bwrap\) is not on PATH/);
  });
});
