/**
 * Issue 9 §2: one flower per task. Real `flower` processes in one directory: the second one is
 * refused with one line naming the first while the first works (observed before: the second resumed
 * the first one's live session), a dead holder's lock is taken over, a lock is gone when its holder
 * ends (also by SIGTERM), and of many processes racing for it exactly one wins.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CLARIFIER_RULES } from '../../src/agents/rules.js';
import { TASK_LOCK_FILE } from '../../src/runtime/task-lock.js';
import { contentText, mock, type RecordedRequest, systemText } from '../../src/testing/index.js';
import { cleanUp, startMock } from '../support/scratch.js';
import { type FlowerRun, mockedEnv, runFlower, tempDir } from './cli-harness.js';
import { distRoot } from './runtime-harness.js';

afterEach(cleanUp);

/** The busy line names the holder's host, this machine's too (a host name is letters, digits, - and .). */
const BUSY = new RegExp(
  `^flower: another flower \\(pid (\\d+), on host ${hostname().replaceAll('.', '\\.')}, since \\d\\d:\\d\\d\\) is working on this task; wait for it, or use -w for another directory\\n$`,
);

async function until(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A pid that belonged to a process and no longer does. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.on('close', resolve));
  return child.pid!;
}

function writeLock(runDir: string, fields: Record<string, unknown>): string {
  mkdirSync(runDir, { recursive: true });
  const path = join(runDir, TASK_LOCK_FILE);
  writeFileSync(path, JSON.stringify({ startedAt: new Date().toISOString(), token: 'by-hand', ...fields }));
  return path;
}

describe('one flower per task', () => {
  it('refuses a second `once` while the first works, naming it, and the first finishes untouched', async () => {
    const model = await startMock([mock.text('First, slowly.', { delayMs: 4_000 }), mock.text('Second.')]);
    const workspace = tempDir('lock-once');
    const env = mockedEnv(model);
    let firstPid = 0;
    const first = runFlower(['once', 'Answer slowly.', '-w', workspace], {
      env,
      onSpawn: (child) => {
        firstPid = child.pid!;
      },
    });
    await until(() => existsSync(join(workspace, 'runs', TASK_LOCK_FILE)), 'the first lock');
    const started = Date.now();
    const second = await runFlower(['once', 'Answer quickly.', '-w', workspace], { env });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(second.status).toBe(1);
    expect(second.stderr).toMatch(BUSY);
    expect(Number(BUSY.exec(second.stderr)?.[1])).toBe(firstPid);
    expect(second.stdout).toBe('');

    const done: FlowerRun = await first;
    expect(done.status, done.stderr).toBe(0);
    expect(done.stdout).toContain('First, slowly.');
    expect(model.mainRequests()).toHaveLength(1);
    // Held for the life of the process, and gone with it.
    expect(existsSync(join(workspace, 'runs', TASK_LOCK_FILE))).toBe(false);
  });

  it('refuses a second `flower go` started 2 s after the first, so it cannot take over its session', async () => {
    const clarifier = CLARIFIER_RULES.split('\n')[0]!;
    const brief = (request: RecordedRequest) => {
      if (!systemText(request.body).includes(clarifier)) return mock.text('not scripted');
      const asked = contentText(request.body?.messages?.[0]?.content ?? '')
        .trim()
        .split('\n')
        .at(-1);
      return mock.text(
        `## Goal\nDo this: ${asked}\n\n## Acceptance\n- done\n\n## Boundaries\n- none\n\n## Unknowns & assumptions\n- none`,
        { delayMs: 4_000 },
      );
    };
    const model = await startMock({ main: [brief, brief] });
    const workspace = tempDir('lock-go');
    const env = mockedEnv(model);
    const go = (request: string) =>
      runFlower(['-w', workspace, '--clarify-only', '--timeout', '0', request], { env });
    const first = go('count the words');
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const second = await go('count the lines');
    expect(second.status).toBe(1);
    expect(second.stderr).toMatch(BUSY);

    expect((await first).status).toBe(0);
    const written = readFileSync(join(workspace, '.flower', 'notes', 'brief.md'), 'utf8');
    expect(written).toContain('count the words');
    expect(written).not.toContain('count the lines');
    expect(model.mainRequests()).toHaveLength(1);
  });

  it('takes over the lock of a holder that died', async () => {
    const model = await startMock([mock.text('Carried on.')]);
    const workspace = tempDir('lock-dead');
    writeLock(join(workspace, 'runs'), { pid: await deadPid(), host: hostname() });
    const run = await runFlower(['once', 'Go on.', '-w', workspace], { env: mockedEnv(model) });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('Carried on.');
    expect(existsSync(join(workspace, 'runs', TASK_LOCK_FILE))).toBe(false);
  });

  it("never judges another host's lock: says which host holds it", async () => {
    const model = await startMock([mock.text('never reached')]);
    const workspace = tempDir('lock-host');
    const path = writeLock(join(workspace, 'runs'), { pid: 4242, host: 'build-7.example' });
    const run = await runFlower(['once', 'Go on.', '-w', workspace], { env: mockedEnv(model) });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('another flower (pid 4242, on host build-7.example, since ');
    expect(model.requests).toHaveLength(0);
    expect(existsSync(path)).toBe(true);
  });

  it('a holder ended by SIGTERM leaves no lock behind', async () => {
    const model = await startMock([mock.text('too late', { delayMs: 20_000 })]);
    const workspace = tempDir('lock-term');
    let child: { kill(signal: NodeJS.Signals): boolean } | undefined;
    const run = runFlower(['once', 'Take long.', '-w', workspace], {
      env: mockedEnv(model),
      onSpawn: (spawned) => {
        child = spawned;
      },
    });
    const lock = join(workspace, 'runs', TASK_LOCK_FILE);
    await until(() => existsSync(lock) && model.mainRequests().length > 0, 'the first request');
    child?.kill('SIGTERM');
    const ended = await run;
    expect(ended.signal).toBe('SIGTERM');
    expect(existsSync(lock)).toBe(false);
  });

  it.each([
    ['a fresh task', false],
    ["a dead holder's lock", true],
  ])('of eight processes racing for %s, exactly one gets it', async (_name, stale) => {
    const runDir = join(tempDir('lock-race'), 'runs');
    if (stale) writeLock(runDir, { pid: await deadPid(), host: hostname() });
    // Each contender waits for the same moment, tries once, and holds what it got for a second.
    const startAt = Date.now() + 1_500;
    const contender = `
const { lockTask } = await import(${JSON.stringify(join(distRoot, 'runtime', 'task-lock.js'))});
await new Promise((resolve) => setTimeout(resolve, ${startAt} - Date.now()));
try {
  await lockTask({ workspace: ${JSON.stringify(runDir)}, runDir: ${JSON.stringify(runDir)} });
  console.log('won');
  await new Promise((resolve) => setTimeout(resolve, 1_000));
} catch (error) {
  console.log(error.name);
}`;
    const outcomes = await Promise.all(
      Array.from(
        { length: 8 },
        () =>
          new Promise<string>((resolve, reject) => {
            const child = spawn(process.execPath, ['--input-type=module', '-e', contender]);
            let out = '';
            child.stdout.on('data', (chunk) => {
              out += chunk;
            });
            child.on('error', reject);
            child.on('close', () => resolve(out.trim()));
          }),
      ),
    );
    expect(outcomes.filter((outcome) => outcome === 'won')).toHaveLength(1);
    expect(outcomes.filter((outcome) => outcome === 'TaskBusyError')).toHaveLength(7);
    expect(existsSync(join(runDir, TASK_LOCK_FILE))).toBe(false);
  });
});
