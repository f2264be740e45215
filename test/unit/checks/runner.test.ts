/**
 * The host check runner with real shells and processes: exit codes, captured output in the order
 * it came, time limits that end the whole process group, a 100 MB output that leaves a capped
 * private log of which only the tail is read, a syntax error that is a failing check, and an
 * environment without the credentials.
 */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { cutNotice } from '../../../src/checks/capped-log.js';
import { checkEnvironment, isWithheldFromChecks } from '../../../src/checks/environment.js';
import {
  checkedItems,
  checkPolicy,
  defaultCheckPolicy,
  runCheck,
  runChecks,
  tailOf,
} from '../../../src/checks/runner.js';
import { describeRun } from '../../../src/workflow/evidence.js';
import { HOSTILE_ESCAPES, HOSTILE_SECRETS, RAW_CONTROL, secretCore } from '../../support/hostile-payloads.js';
import { processGone } from '../../support/processes.js';

const dir = () => mkdtempSync(join(tmpdir(), 'flower-checks-'));

function check(command: string, timeoutMs?: number) {
  return { description: 'it works', command, ...(timeoutMs === undefined ? {} : { timeoutMs }) };
}

describe('runCheck', () => {
  it('passes on exit 0 and fails on any other code, with the output in its file', async () => {
    const cwd = dir();
    const ok = await runCheck('item', check('echo hello; echo oops >&2'), {
      cwd,
      outputPath: join(cwd, 'out/1.log'),
    });
    expect(ok).toMatchObject({ passed: true, exitCode: 0, timedOut: false, tail: 'hello\noops' });
    expect(readFileSync(ok.outputPath, 'utf8')).toBe('hello\noops\n');
    const failed = await runCheck('item', check('echo no; exit 3'), {
      cwd,
      outputPath: join(cwd, 'out/2.log'),
    });
    expect(failed).toMatchObject({ passed: false, exitCode: 3, tail: 'no' });
  });

  it('runs in the workspace', async () => {
    const cwd = dir();
    const run = await runCheck('item', check('pwd'), { cwd, outputPath: join(cwd, 'pwd.log') });
    expect(run.tail).toBe(cwd);
  });

  it('reports a command with a syntax error as a failing check, not a crash', async () => {
    const cwd = dir();
    const run = await runCheck('item', check('if then fi ((('), { cwd, outputPath: join(cwd, 'x.log') });
    expect(run.passed).toBe(false);
    expect(run.exitCode).toBe(2);
    expect(run.tail).toMatch(/syntax error/);
  });

  it('kills a check that hangs at its time limit, with its whole process group', async () => {
    const cwd = dir();
    const pidFile = join(cwd, 'child.pid');
    const run = await runCheck('item', check(`sleep 300 & echo $! > ${pidFile}; sleep 300`, 500), {
      cwd,
      outputPath: join(cwd, 'hang.log'),
    });
    expect(run).toMatchObject({ passed: false, timedOut: true, exitCode: null });
    expect(run.durationS).toBeLessThan(30);
    const child = Number(readFileSync(pidFile, 'utf8'));
    expect(await processGone(child)).toBe(true);
  });

  it('ends a check that ignores SIGTERM with SIGKILL after the grace period', async () => {
    const cwd = dir();
    const run = await runCheck('item', check(`trap '' TERM; sleep 300 & wait`, 300), {
      cwd,
      outputPath: join(cwd, 'stubborn.log'),
      policy: { killGraceMs: 300 },
    });
    expect(run).toMatchObject({ timedOut: true, passed: false });
    expect(run.durationS).toBeLessThan(30);
  });

  it('a check ended at its time limit fails even when it exits 0 on SIGTERM', async () => {
    const cwd = dir();
    const run = await runCheck('item', check(`trap 'exit 0' TERM; sleep 300 & wait`, 300), {
      cwd,
      outputPath: join(cwd, 'polite.log'),
    });
    expect(run).toMatchObject({ timedOut: true, exitCode: 0, passed: false });
  });

  it.each([
    ['flower exits', () => 'exit' as const],
    ['flower is told to stop (SIGTERM)', () => 'SIGTERM' as const],
  ])('ends a running check with its group when %s', async (_label, eventOf) => {
    const cwd = dir();
    const pidFile = join(cwd, 'child.pid');
    const event = eventOf();
    const before = new Set(process.listeners('exit'));
    // Something else in the process also listens, so the signal does not end the test's process.
    const bystander = () => {};
    if (event === 'SIGTERM') process.on('SIGTERM', bystander);
    try {
      const running = runCheck('item', check(`sleep 300 & echo $! > ${pidFile}; wait`, 10_000), {
        cwd,
        outputPath: join(cwd, 'long.log'),
      });
      for (let tries = 0; tries < 100 && !existsSync(pidFile); tries += 1) await sleep(50);
      if (event === 'exit') {
        // What process.exit runs, without ending the test's process: the handlers the check added.
        for (const listener of process.listeners('exit').filter((l) => !before.has(l)))
          listener.call(process, 0);
      } else {
        process.emit('SIGTERM', 'SIGTERM');
      }
      const run = await running;
      expect(run).toMatchObject({ passed: false, timedOut: false, signal: 'SIGKILL' });
      expect(run.durationS).toBeLessThan(5);
      expect(await processGone(Number(readFileSync(pidFile, 'utf8')))).toBe(true);
    } finally {
      process.off('SIGTERM', bystander);
    }
  });

  it('ends what a finished check left running in the background (it would hold its port next round)', async () => {
    const cwd = dir();
    const pidFile = join(cwd, 'server.pid');
    const run = await runCheck('item', check(`(sleep 300 & echo $! > ${pidFile}); echo started`), {
      cwd,
      outputPath: join(cwd, 'bg.log'),
    });
    expect(run.passed).toBe(true);
    expect(await processGone(Number(readFileSync(pidFile, 'utf8')))).toBe(true);
  });

  it('caps the log of a 100 MB output at its head and tail, says what was cut, and reads back only the tail', async () => {
    const cwd = dir();
    const run = await runCheck(
      'item',
      check(
        `echo 'the first line'; yes 'a line of output' | head -c 104857600; echo; echo 'the last line'; exit 1`,
      ),
      { cwd, outputPath: join(cwd, 'big.log') },
    );
    expect(run).toMatchObject({ passed: false, exitCode: 1 });
    expect(run.outputBytes).toBe(104_857_600 + 'the first line\n\nthe last line\n'.length);
    const { headBytes, tailBytes } = defaultCheckPolicy.log;
    const size = statSync(run.outputPath).size;
    expect(size).toBeLessThan(headBytes + tailBytes + 1024);
    expect(run.cutBytes).toBeGreaterThan(run.outputBytes - headBytes - tailBytes - 1);
    const log = readFileSync(run.outputPath, 'utf8');
    expect(log.startsWith('the first line\na line of output\n')).toBe(true);
    expect(log).toContain(
      `\n${cutNotice(run.cutBytes, run.outputBytes, defaultCheckPolicy.log)}\na line of output\n`,
    );
    expect(log.endsWith('a line of output\na \nthe last line\n')).toBe(true);
    expect(run.tail.endsWith('the last line')).toBe(true);
    expect(Buffer.byteLength(run.tail)).toBeLessThanOrEqual(4096);
    expect(run.tail.split('\n').length).toBeLessThanOrEqual(40);
    // What a prompt gets of it stays small.
    expect(describeRun(run, 0).length).toBeLessThan(6000);
  }, 60_000);

  it('keeps stdout and stderr in the order they came (one pipe, joined by the shell)', async () => {
    const cwd = dir();
    const run = await runCheck('item', check('for i in $(seq 1 200); do echo out$i; echo err$i >&2; done'), {
      cwd,
      outputPath: join(cwd, 'order.log'),
    });
    const expected = Array.from({ length: 200 }, (_, index) => `out${index + 1}\nerr${index + 1}\n`).join('');
    expect(readFileSync(run.outputPath, 'utf8')).toBe(expected);
  });

  it('runs the command as written: its own line numbers and $0', async () => {
    const cwd = dir();
    const run = await runCheck('item', check('echo "$LINENO $0"\nif then fi'), {
      cwd,
      outputPath: join(cwd, 'lines.log'),
    });
    const log = readFileSync(run.outputPath, 'utf8');
    expect(log.split('\n')[0]).toMatch(/^1 .*(bash|sh)$/);
    expect(log).toMatch(/line 2: syntax error/);
  });

  it('does not wait for ever on a process that left the group holding the output open', async () => {
    const cwd = dir();
    const pidFile = join(cwd, 'escaped.pid');
    // perl is part of every Debian base system; setpgrp takes it out of the check's process group.
    const leaver = `perl -e 'setpgrp(0, 0); open(my $f, ">", "${pidFile}"); print $f $$; close $f; sleep 60' &`;
    const run = await runCheck(
      'item',
      check(`${leaver} while [ ! -s ${pidFile} ]; do sleep 0.05; done; echo left`),
      {
        cwd,
        outputPath: join(cwd, 'escaped.log'),
      },
    );
    const escaped = Number(readFileSync(pidFile, 'utf8'));
    try {
      expect(run).toMatchObject({ passed: true, tail: 'left' });
      expect(run.durationS).toBeLessThan(10);
    } finally {
      process.kill(escaped, 'SIGKILL');
    }
  });

  it("runs without flower's or Anthropic's credentials in its environment", async () => {
    const cwd = dir();
    const env = {
      PATH: process.env.PATH,
      ANTHROPIC_API_KEY: 'sk-ant-secret-1',
      ANTHROPIC_AUTH_TOKEN: 'secret-2',
      anthropic_api_key: 'secret-3',
      CLAUDE_CODE_OAUTH_TOKEN: 'secret-4',
      FLOWER_STORE_URL: 'postgres://user:secret-5@db/flower',
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:1',
      KEEP_ME: 'visible',
    };
    const run = await runCheck('item', check('env; printenv ANTHROPIC_API_KEY'), {
      cwd,
      outputPath: join(cwd, 'env.log'),
      env,
    });
    const output = readFileSync(run.outputPath, 'utf8');
    expect(output).toContain('KEEP_ME=visible');
    expect(output).not.toMatch(/secret|127\.0\.0\.1:1/);
    // printenv exits 1 when the variable is not set.
    expect(run.exitCode).toBe(1);
    expect(isWithheldFromChecks('Anthropic_Api_Key')).toBe(true);
    expect(checkEnvironment({ HOME: '/h', FLOWER_ENV: '/x/.env' })).toEqual({ HOME: '/h' });
  });

  it('says why when it cannot start at all', async () => {
    const cwd = dir();
    const run = await runCheck('item', check('true'), {
      cwd: join(cwd, 'missing'),
      outputPath: join(cwd, 'no.log'),
    });
    expect(run).toMatchObject({ passed: false, problem: expect.stringContaining('does not exist') });
    expect(readFileSync(run.outputPath, 'utf8')).toContain('does not exist');
  });
});

describe('runChecks', () => {
  it('runs the checked items in order, one file per item, and fails an unreadable check', async () => {
    const cwd = dir();
    const out = join(cwd, 'round');
    const seen: string[] = [];
    const runs = await runChecks(
      [
        'a judgement item',
        'greets — check: `echo hi`',
        'broken — check: `echo unclosed',
        'last — check (5s): `false`',
      ],
      { cwd, dir: out, onResult: (run) => seen.push(run.item) },
    );
    expect(runs.map((run) => [run.passed, run.outputPath])).toEqual([
      [true, join(out, 'item-2.log')],
      [false, join(out, 'item-3.log')],
      [false, join(out, 'item-4.log')],
    ]);
    expect(runs[1]?.problem).toContain('cannot be read');
    expect(seen).toHaveLength(3);
    expect(existsSync(join(out, 'item-1.log'))).toBe(false);
  });

  it('keeps the logs private: 0600 files in a 0700 round directory, whatever was there before', async () => {
    const cwd = dir();
    const out = join(cwd, 'checks', '1');
    mkdirSync(out, { recursive: true, mode: 0o755 });
    chmodSync(out, 0o755);
    writeFileSync(join(out, 'item-1.log'), 'an old log', { mode: 0o644 });
    const runs = await runChecks(['prints — check: `echo secret-looking`', 'broken — check: `oops'], {
      cwd,
      dir: out,
    });
    expect(runs).toHaveLength(2);
    expect(statSync(out).mode & 0o777).toBe(0o700);
    for (const run of runs) expect(statSync(run.outputPath).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(out, 'item-1.log'), 'utf8')).toBe('secret-looking\n');
  });

  it('fails every check, running none, when the round directory cannot be made private', async () => {
    const cwd = dir();
    const blocker = join(cwd, 'not-a-directory');
    writeFileSync(blocker, '');
    const marker = join(cwd, 'ran');
    const runs = await runChecks([`runs — check: \`touch ${marker}\``], { cwd, dir: join(blocker, '1') });
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ passed: false, command: `touch ${marker}` });
    expect(runs[0]?.problem).toMatch(/could not be made private .*then run flower again/);
    expect(existsSync(marker)).toBe(false);
  });
});

describe('tailOf', () => {
  it('drops the partial first line when it starts mid-text and removes escape sequences', () => {
    const raw = `${'x'.repeat(100)}\n\x1b[31mred\x1b[0m\nend\n`;
    expect(tailOf(raw, 20, 10)).toBe('red\nend');
    expect(tailOf(raw, 1000, 1)).toBe('end');
  });

  it('masks secrets, even a key block whose first line is outside the window, and leaves no raw control', () => {
    const raw = [
      HOSTILE_SECRETS.pem,
      ...Object.values(HOSTILE_SECRETS).map((secret) => `printed ${secret}`),
      ...Object.values(HOSTILE_ESCAPES).map((payload) => `escape ${payload} here`),
      'the last line',
    ].join('\n');
    const secondLine = HOSTILE_SECRETS.pem!.split('\n')[1]!;
    // A window that starts just after the key block's first line.
    const tail = tailOf(raw, Buffer.byteLength(raw) - 10, 1000);
    expect(tail).not.toContain(secondLine);
    for (const secret of Object.values(HOSTILE_SECRETS)) expect(tail).not.toContain(secretCore(secret));
    expect(tail).not.toMatch(RAW_CONTROL);
    expect(tail.endsWith('the last line')).toBe(true);
  });
});

describe('runCheck: the rest of its promises', () => {
  it('a shell that cannot start is a failing check that says why, in its log too', async () => {
    const cwd = dir();
    // A directory named bash on PATH passes the executable test and cannot be run.
    mkdirSync(join(cwd, 'bin', 'bash'), { recursive: true });
    const run = await runCheck('item', check('true'), {
      cwd,
      outputPath: join(cwd, 'cannot.log'),
      env: { PATH: join(cwd, 'bin') },
    });
    const problem = run.problem ?? '';
    expect(problem).toMatch(/^it could not start: .*EACCES/);
    expect(run).toEqual({
      item: 'item',
      description: 'it works',
      command: 'true',
      outputPath: join(cwd, 'cannot.log'),
      exitCode: null,
      signal: null,
      timedOut: false,
      passed: false,
      durationS: 0,
      outputBytes: Buffer.byteLength(`${problem}\n`),
      cutBytes: 0,
      tail: problem,
      problem,
    });
    expect(readFileSync(run.outputPath, 'utf8')).toBe(`${problem}\n`);
  });

  it('a log that cannot be created is a failing check that says why', async () => {
    const cwd = dir();
    writeFileSync(join(cwd, 'a-file'), '');
    const run = await runCheck('item', check('true'), { cwd, outputPath: join(cwd, 'a-file', 'x.log') });
    expect(run).toMatchObject({ passed: false, exitCode: null });
    expect(run.problem).toMatch(/^its log could not be created: /);
  });

  it('runs in the POSIX shell where PATH has no bash', async () => {
    const cwd = dir();
    const run = await runCheck('item', check('echo "$0"'), {
      cwd,
      outputPath: join(cwd, 'sh.log'),
      env: { PATH: `:${join(cwd, 'nothing')}` },
    });
    expect(run).toMatchObject({ passed: true, tail: '/bin/sh' });
  });

  it("skips PATH's empty entry: a bash in flower's own directory is not the checks' shell", async () => {
    const cwd = dir();
    // An empty entry would mean the current directory, where anyone may have left a `bash`.
    const planted = join(process.cwd(), 'bash');
    writeFileSync(planted, '#!/bin/sh\necho planted\n', { mode: 0o755 });
    try {
      const run = await runCheck('item', check('echo "$0"'), {
        cwd,
        outputPath: join(cwd, 'sh.log'),
        env: { PATH: `:${join(cwd, 'nothing')}` },
      });
      expect(run).toMatchObject({ passed: true, tail: '/bin/sh' });
    } finally {
      rmSync(planted, { force: true });
    }
  });

  it('a check without its own limit gets the policy’s', async () => {
    const cwd = dir();
    const run = await runCheck('item', check('sleep 300'), {
      cwd,
      outputPath: join(cwd, 'limit.log'),
      policy: { timeoutMs: 300, killGraceMs: 100 },
    });
    expect(run).toMatchObject({ passed: false, timedOut: true });
    expect(run.durationS).toBeGreaterThan(0.2);
    expect(run.durationS).toBeLessThan(30);
  });

  it('reads the tail the policy asks for, and says how long the check took in hundredths of a second', async () => {
    const cwd = dir();
    const run = await runCheck('item', check('printf "one\\ntwo\\nthree\\nfour\\n"; sleep 0.3'), {
      cwd,
      outputPath: join(cwd, 'tail.log'),
      policy: { tailLines: 2, tailBytes: 100 },
    });
    expect(run).toMatchObject({ passed: true, tail: 'three\nfour', outputBytes: 19, cutBytes: 0 });
    expect(run.durationS).toBeGreaterThanOrEqual(0.3);
    expect(Math.round(run.durationS * 100)).toBeCloseTo(run.durationS * 100, 6);
  });
});

describe('checkPolicy', () => {
  it('applies overrides over the defaults, the log’s fields one by one', () => {
    expect(checkPolicy()).toEqual(defaultCheckPolicy);
    expect(checkPolicy({ tailLines: 3, log: { headBytes: 10 } })).toEqual({
      ...defaultCheckPolicy,
      tailLines: 3,
      log: { ...defaultCheckPolicy.log, headBytes: 10 },
    });
  });
});

describe('tailOf: escape sequences', () => {
  it('removes every CSI, OSC and two-character escape and the controls a terminal acts on, leaving the text', () => {
    const raw = [
      'x\x1b[1;31mred\x1b[0m \x1b[?25lcur\x1b[2 q\x1b[@a\x1b[~b\x1b[0;?/!~c',
      '\x1b]0;title\x07osc\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\',
      '\x1bMup\x1b@\x1b_\x1b7\x00\x01\x08\x0b\x0c\x1f\x7fend\tTab',
    ].join('\n');
    expect(tailOf(raw, 1000, 10)).toBe('xred curabc\nosclink\nup7end Tab');
  });
});

describe('tailOf: line ends', () => {
  it('reads CR and CRLF line ends as newlines, and leaves out the trailing blank lines', () => {
    expect(tailOf('a\r\nb\rc\n\n\n', 1000, 10)).toBe('a\nb\nc');
    expect(tailOf('a\nb\nc\n', 1000, 2)).toBe('b\nc');
    expect(tailOf('whole\n', 6, 10)).toBe('whole');
  });
});

describe('runCheck and runChecks: what they leave behind', () => {
  it('an environment the shell cannot be started with is a failing check, not an exception', async () => {
    const cwd = dir();
    const run = await runCheck('item', check('true'), {
      cwd,
      outputPath: join(cwd, 'nul.log'),
      env: { PATH: process.env.PATH, BROKEN: 'a\0b' },
    });
    expect(run).toMatchObject({ passed: false, exitCode: null, timedOut: false });
    expect(run.problem).toMatch(/^it could not start: /);
  });

  it('ends what a finished check left running even when it ignores SIGTERM', async () => {
    const cwd = dir();
    const pidFile = join(cwd, 'stubborn.pid');
    const run = await runCheck(
      'item',
      check(
        `sh -c "trap '' TERM; echo \\$\\$ > ${pidFile}; exec sleep 300" & while [ ! -s ${pidFile} ]; do sleep 0.05; done; sleep 0.1; echo started`,
      ),
      {
        cwd,
        outputPath: join(cwd, 'stubborn-bg.log'),
      },
    );
    expect(run.passed).toBe(true);
    expect(await processGone(Number(readFileSync(pidFile, 'utf8')))).toBe(true);
  });

  it('leaves no exit listener behind once a check has ended', async () => {
    const cwd = dir();
    const before = process.listenerCount('exit');
    await runCheck('item', check('true'), { cwd, outputPath: join(cwd, 'a.log') });
    await runCheck('item', check('exit 1'), { cwd, outputPath: join(cwd, 'b.log') });
    expect(process.listenerCount('exit')).toBe(before);
  });

  it('makes no log directory for a checklist without checks', async () => {
    const cwd = dir();
    const out = join(cwd, 'round');
    expect(await runChecks(['a judgement item', 'another'], { cwd, dir: out })).toEqual([]);
    expect(existsSync(out)).toBe(false);
  });

  it('an unreadable check has no command, whether or not its log could be kept private', async () => {
    const cwd = dir();
    const [readable] = await runChecks(['broken — check: `echo unclosed'], { cwd, dir: join(cwd, 'round') });
    expect(readable?.command).toBe('');
    const blocker = join(cwd, 'not-a-directory');
    writeFileSync(blocker, '');
    const [unsafe] = await runChecks(['broken — check: `echo unclosed'], { cwd, dir: join(blocker, '1') });
    expect(unsafe).toMatchObject({ command: '', passed: false });
  });
});

describe('checkedItems', () => {
  it('lists only the items that carry a check, readable or not, with their place in the list', () => {
    const items = checkedItems(['a judgement item', 'greets — check: `echo hi`', 'broken — check: `oops']);
    expect(items.map(({ index, item, check }) => [index, item, check.kind])).toEqual([
      [1, 'greets — check: `echo hi`', 'check'],
      [2, 'broken — check: `oops', expect.not.stringMatching(/^(check|none)$/)],
    ]);
  });
});

describe('runCheck: its input and its last output', () => {
  it('gives the command no input: a check that reads it gets end-of-file at once, not a wait to its limit', async () => {
    const cwd = dir();
    const run = await runCheck('item', check('cat; echo read-all', 3000), {
      cwd,
      outputPath: join(cwd, 'stdin.log'),
    });
    // A command left waiting on an open input would be ended at its limit: timedOut, not passed.
    expect(run).toMatchObject({ passed: true, timedOut: false, tail: 'read-all' });
  });

  it('waits for output still coming after the shell exits (up to a bound) before it closes the log', async () => {
    const cwd = dir();
    const pidFile = join(cwd, 'late.pid');
    // The writer leaves the group first, so ending the group at the shell's exit does not end it.
    const late = `setsid sh -c 'echo $$ > ${pidFile}; sleep 0.2; echo late' &`;
    const run = await runCheck(
      'item',
      check(`${late} while [ ! -s ${pidFile} ]; do sleep 0.05; done; echo early`),
      { cwd, outputPath: join(cwd, 'late.log') },
    );
    expect(run).toMatchObject({ passed: true, tail: 'early\nlate' });
    expect(readFileSync(run.outputPath, 'utf8')).toBe('early\nlate\n');
  });
});
