/**
 * `flower status` and `flower report` as a person reads them, through the built CLI against the
 * scripted model (issue 21, polish): during the first step (it said "No task"), the request as
 * typed before there is a brief, the next step after an achieved task and after `once`, long
 * verdicts within 100 columns, and `report --all` over two tasks saying whose each row is.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from './cli-harness.js';
import { look } from './report-harness.js';
import { distRoot, runNode } from './runtime-harness.js';
import {
  ACHIEVED,
  BEQUEST_REPLY,
  echoBrief,
  HELLO_GOAL,
  mainRouter,
  type Scenario,
  startScenario,
} from './scenario-harness.js';

let scenario: Scenario | undefined;

afterEach(async () => {
  await scenario?.close();
  scenario = undefined;
});

const oneSpaced = (text: string) => text.replace(/\s+/g, ' ');

/** A ruling whose reason alone is longer than a terminal line (observed: 160–200 columns). */
const LONG_REASON =
  'hello.py exists in the workspace, python3 hello.py prints exactly hello world followed by a newline, the exit code is 0, and nothing outside the brief was added or changed.';

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('status from the first step to an achieved task', () => {
  it('says a flower is at work with the typed request, then a new task as the next step, within 100 columns; report --all names task and run', async () => {
    const request = 'write hello.py that prints hello world';
    scenario = await startScenario({
      main: mainRouter({
        // The clarifier takes its time: status runs while the first step has recorded nothing.
        clarifier: (req) => ({ ...echoBrief(req), delayMs: 8_000 }),
        'set-goal': () => ({ text: HELLO_GOAL }),
        coordinator: () => ({ text: 'Wrote hello.py.' }),
        verdict: () => ({ text: ACHIEVED.replace('hello.py prints hello world.', LONG_REASON) }),
        bequest: () => ({ text: BEQUEST_REPLY }),
      }),
    });
    const current = scenario;
    let pid = 0;
    const running = current.flower(['--timeout', '0', request], {
      input: '\n',
      onSpawn: (child) => (pid = child.pid ?? 0),
    });
    await until(
      () =>
        current.mock.mainRequests().length >= 1 && existsSync(join(current.workspace, 'runs', 'task.lock')),
      'the clarifier to be asked',
    );
    const during = await current.flower(['status']);
    expect(during.status, during.stderr).toBe(0);
    expect(during.stdout).toContain(`Task: ${request}\n`);
    expect(during.stdout).toMatch(
      new RegExp(`^Now: a flower is working on this task: running · pid ${pid} since \\d\\d:\\d\\d$`, 'm'),
    );
    expect(during.stdout).toMatch(
      /^Next: a flower is working on this task: `flower report` shows it so far/m,
    );

    const run = await running;
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(current.manifest().map((row) => row.step)).toEqual([
      'clarify',
      'set-goal',
      'work',
      'work:verdict#1',
      'bequest',
    ]);

    const after = await current.flower(['status']);
    expect(after.status, after.stderr).toBe(0);
    expect(after.stdout).not.toMatch(/^Now:/m);
    // Achieved, with the bequest written after the verdict: a new task, not "continue where it stopped".
    expect(oneSpaced(after.stdout)).toContain(
      'Next: `flower report` for the details; `flower --new "<request>"` starts a new task here',
    );
    const wide = after.stdout.split('\n').filter((line) => line.length > 100);
    expect(wide, after.stdout).toEqual([]);
    expect(oneSpaced(after.stdout)).toContain(`Last verdict: achieved in round 1/3: ${LONG_REASON}`);

    // A second task in the same directory: --all lists both, and says whose each row is.
    const fresh = await current.flower(['--new', '--timeout', '0', '--no-bequest', 'write goodbye.py'], {
      input: '\n',
    });
    expect(fresh.status, fresh.stderr).toBe(0);
    const all = await current.flower(['report', '--all']);
    expect(all.status, all.stderr).toBe(0);
    const lines = all.stdout.split('\n');
    expect(lines.find((line) => /\boutcome\b/.test(line))).toMatch(/^ {2}task\s+run\s+step\s+outcome/);
    const rows = lines.filter((line) => /^ {2}(archived|this) /.test(line));
    expect(rows.map((line) => line.split(/\s+/).slice(1, 2)[0])).toEqual([
      ...Array(5).fill('archived'),
      ...Array(4).fill('this'),
    ]);
    const runs = new Set(rows.map((line) => line.split(/\s+/)[2]));
    expect(runs.size).toBe(2);
  }, 240_000);
});

describe('status while a flower holds the task and nothing is recorded yet', () => {
  it('says a flower is working on it, not "No task" (the first step before its first write)', async () => {
    const workspace = tempDir('status-first-step');
    // A real flower process's lock, as go, run and once take it before anything else.
    const holder = `
const { lockTask } = await import(${JSON.stringify(join(distRoot, 'runtime', 'task-lock.js'))});
await lockTask({ workspace: process.argv[1], runDir: process.argv[1] + '/runs' });
console.log('locked');
await new Promise((resolve) => setTimeout(resolve, 60_000));
`;
    let child: import('node:child_process').ChildProcess | undefined;
    const holding = runNode(
      ['--input-type=module', '-e', holder, workspace],
      process.env as Record<string, string>,
      {
        onSpawn: (spawned) => (child = spawned),
      },
    );
    try {
      await until(() => existsSync(join(workspace, 'runs', 'task.lock')), 'the lock');
      const status = await look(workspace, 'status');
      expect(status.status, status.stderr).toBe(0);
      expect(status.stdout).toMatch(
        new RegExp(
          `^Now: a flower is working on this task: running · pid ${child?.pid} since \\d\\d:\\d\\d$`,
          'm',
        ),
      );
      expect(status.stdout).toMatch(/^Next: a flower is working on this task/m);
    } finally {
      child?.kill('SIGTERM');
      await holding;
    }
    // Once the holder is gone, the directory holds no task again.
    const after = await look(workspace, 'status');
    expect(after.status).toBe(1);
    expect(after.stderr).toMatch(/^flower: No task in /);
  }, 120_000);
});

describe('status after once', () => {
  it('shows the request as typed and the command that continues the session', async () => {
    scenario = await startScenario({ main: mainRouter({ other: () => ({ text: 'Hello to you.' }) }) });
    const once = await scenario.flower(['once', 'Say hello to the user.']);
    expect(once.status, once.stderr).toBe(0);
    const [row] = scenario.manifest();
    expect(row?.step).toBe('ad-hoc');
    const status = await scenario.flower(['status']);
    expect(status.status, status.stderr).toBe(0);
    expect(status.stdout).toContain('Task: Say hello to the user.\n');
    expect(oneSpaced(status.stdout)).toContain(
      `Next: \`flower once --resume ${row?.session_id} "<what next>"\` to continue it; \`flower log ad-hoc\` shows what it did `,
    );
  }, 120_000);
});
