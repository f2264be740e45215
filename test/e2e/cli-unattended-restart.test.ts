/**
 * An unattended restart (issue 18, observation 7): a task is started, its flower is killed with
 * SIGKILL in the middle of the work step, and a restart with standard input on /dev/null — as cron,
 * nohup and systemd give it — continues the task in the same work session and finishes, instead of
 * stopping at the "continue from last time?" prompt with "cancelled". Both `flower go --timeout 0`
 * and a bare `flower`, and a bare `flower` under `nohup` (standard input unreadable: each read
 * fails, which once crashed flower with an unhandled 'error' event) and on a pipe that stays open
 * and silent, as a CI runner gives (carried on after the prompt's short wait). Real binary (dist/, `npm run build` first), real SDK and Claude Code; only the
 * model is scripted.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { CONTINUING_NOTICE } from '../../src/cli/interaction/request-prompt.js';
import type { RecordedRequest } from '../../src/testing/index.js';
import { mockedEnv, runFlower } from './cli-harness.js';
import {
  ACHIEVED,
  BEQUEST_REPLY,
  HELLO_BRIEF,
  HELLO_GOAL,
  mainRouter,
  roleOf,
  type Scenario,
  startScenario,
} from './scenario-harness.js';

/** Said by the coordinator in the turn before the kill: proof that a later request carries it. */
const EARLIER_TURN = 'EARLIER-TURN-b41c: read the layout before writing hello.py.';

let scenario: Scenario | undefined;
afterEach(async () => {
  await scenario?.close();
  scenario = undefined;
});

/** Polls the session store until an entry contains `text` (the mirror flushes behind the work). */
async function storedText(database: string, text: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const db = new Database(database, { readonly: true, fileMustExist: true });
      try {
        if (db.prepare('SELECT 1 FROM entries WHERE instr(payload, ?) > 0 LIMIT 1').get(text)) return;
      } finally {
        db.close();
      }
    } catch {
      // Not created yet.
    }
    if (Date.now() > deadline) throw new Error(`"${text}" never reached ${database}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const coordinatorRequests = (mock: Scenario['mock'], after: number): RecordedRequest[] =>
  mock
    .mainRequests()
    .slice(after)
    .filter((request) => roleOf(request) === 'coordinator');

describe.each([
  { label: 'flower go --timeout 0 </dev/null', args: ['go', '--timeout', '0'], input: { stdin: 'devnull' } },
  { label: 'a bare flower </dev/null', args: [], input: { stdin: 'devnull' } },
  // nohup started from a terminal: /dev/null opened write-only, so every read fails (EBADF).
  { label: 'a bare flower under nohup', args: [], input: { stdin: 'unreadable' } },
  // A CI runner: a pipe that stays open and never speaks; carried on after the prompt's wait.
  { label: 'a bare flower on an open, silent pipe', args: [], input: { keepStdinOpen: true } },
] as const)('an unattended restart after a crash ($label)', ({ args, input }) => {
  it('continues the killed work session without asking, says so in one line, and exits 0', async () => {
    let killed = false;
    scenario = await startScenario((workspace) => ({
      main: mainRouter({
        clarifier: () => ({ text: HELLO_BRIEF }),
        'set-goal': () => ({ text: HELLO_GOAL }),
        // One turn (a Read) before the kill; then the first process waits for a reply it never gets.
        coordinator: (_request, turn) =>
          turn === 0
            ? {
                text: EARLIER_TURN,
                toolUses: [{ name: 'Read', input: { file_path: join(workspace, 'layout.txt') } }],
              }
            : killed
              ? { text: 'Wrote hello.py; it prints hello world.' }
              : { text: 'still thinking', delayMs: 60_000 },
        verdict: () => ({ text: ACHIEVED }),
        bequest: () => ({ text: BEQUEST_REPLY }),
      }),
    }));
    const { workspace, mock } = scenario;
    writeFileSync(join(workspace, 'layout.txt'), 'one file: hello.py\n');
    // One machine: the same HOME and Claude Code config directory for every start.
    const env = mockedEnv(mock);

    let first: ChildProcess | undefined;
    const firstRun = runFlower(['-w', workspace, '--timeout', '0', 'write hello.py'], {
      env,
      onSpawn: (child) => {
        first = child;
      },
    });
    await mock.waitForRequest(
      (request) =>
        roleOf(request) === 'coordinator' &&
        JSON.stringify(request.body?.messages).includes('one file: hello.py'),
      90_000,
    );
    await storedText(join(workspace, 'runs', 'sessions.db'), 'EARLIER-TURN-b41c');
    first!.kill('SIGKILL');
    expect((await firstRun).signal).toBe('SIGKILL');
    killed = true;
    const workSession = JSON.parse(readFileSync(join(workspace, 'runs', 'lineage.json'), 'utf8')).steps
      .work as string;
    expect(workSession).toBeTruthy();

    const before = mock.mainRequests().length;
    const restart = await runFlower(['-w', workspace, ...args], {
      env,
      ...input,
      timeoutMs: 150_000,
    });
    expect(restart.stderr).toBe('');
    expect(restart.status).toBe(0);
    expect(restart.stdout).not.toContain('cancelled');
    expect(restart.stdout.split('\n').filter((line) => line === CONTINUING_NOTICE)).toHaveLength(1);
    expect(restart.stdout).toMatch(
      /<- continuing in .* {2}brief confirmed · goal: 3 items( · .*)? · wake 2$/m,
    );

    // The same session: the coordinator's next request carries the turn from before the kill.
    const resumed = coordinatorRequests(mock, before);
    expect(resumed.length).toBeGreaterThan(0);
    expect(JSON.stringify(resumed[0]?.body?.messages)).toContain(EARLIER_TURN);
    const work = (
      JSON.parse(readFileSync(join(workspace, 'runs', 'manifest.json'), 'utf8')) as {
        step: string;
        session_id: string;
        error?: string;
      }[]
    ).filter((row) => row.step === 'work');
    expect(work.at(-1)?.session_id).toBe(workSession);
    expect(work.at(-1)?.error ?? null).toBeNull();
    // Nothing was asked again: no clarifier, no new goal.
    const roles = mock.mainRequests().slice(before).map(roleOf);
    expect(roles).not.toContain('clarifier');
    expect(roles).not.toContain('set-goal');
  }, 240_000);
});
