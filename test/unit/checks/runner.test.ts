/**
 * The host check runner with real shells and processes: exit codes, captured output, time limits
 * that end the whole process group, a 50 MB output of which only the tail is read, a syntax error
 * that is a failing check, and an environment without the credentials.
 */
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { checkEnvironment, isWithheldFromChecks } from '../../../src/checks/environment.js';
import { readTail, runCheck, runChecks } from '../../../src/checks/runner.js';
import { describeRun } from '../../../src/workflow/evidence.js';
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

  it('keeps a 50 MB output in its file and reads back only the tail', async () => {
    const cwd = dir();
    const run = await runCheck(
      'item',
      check(`yes 'a line of output' | head -c 52428800; echo; echo 'the last line'; exit 1`),
      { cwd, outputPath: join(cwd, 'big.log') },
    );
    expect(run.outputBytes).toBeGreaterThan(50_000_000);
    expect(statSync(run.outputPath).size).toBe(run.outputBytes);
    expect(run.tail.endsWith('the last line')).toBe(true);
    expect(Buffer.byteLength(run.tail)).toBeLessThanOrEqual(4096);
    expect(run.tail.split('\n').length).toBeLessThanOrEqual(40);
    // What a prompt gets of it stays small.
    expect(describeRun(run, 0).length).toBeLessThan(6000);
  }, 60_000);

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
});

describe('readTail', () => {
  it('drops the partial first line when it starts mid-file and removes escape sequences', () => {
    const cwd = dir();
    const path = join(cwd, 't.log');
    writeFileSync(path, `${'x'.repeat(100)}\n\x1b[31mred\x1b[0m\nend\n`);
    expect(readTail(path, 20, 10).tail).toBe('red\nend');
    expect(readTail(path, 1000, 1).tail).toBe('end');
  });
});
