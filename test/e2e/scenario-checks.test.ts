/**
 * Done means proven (issue 13 §1): flower itself runs the goal's checks on the host after every
 * round, the judge sees the results, a failing check overrides the judge, and the manifest keeps
 * them. The check runner's hard cases (a hang, 100 MB of output left as a capped private log, a
 * syntax error, the credentials) go through the whole CLI. Real SDK, binary, processes and files; only the model is scripted.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lastUserText } from '../../src/testing/index.js';
import { starterFlow } from '../../src/workflow/starter.js';
import { namedProcessesGone } from '../support/named-processes.js';
import { mockedEnv } from './cli-harness.js';
import {
  ACHIEVED,
  BEQUEST_REPLY,
  mainRouter,
  roleOf,
  type Scenario,
  startFrozen,
  toolResultCount,
} from './scenario-harness.js';

let scenario: Scenario | undefined;
afterEach(async () => {
  await scenario?.close();
  scenario = undefined;
});

const goalWith = (...items: string[]) =>
  ['## Statement', 'hello.txt greets.', '## Checklist', ...items.map((item) => `- ${item}`)].join('\n');

const GREETING_CHECK = 'hello.txt says hello — check: `grep -qx hello hello.txt`';

describe('host checks in the goal guard', () => {
  it('(a) the judge says achieved but a check fails: not yet, and round 2 is told what the check printed', async () => {
    scenario = await startFrozen(
      (workspace) => ({
        main: mainRouter({
          coordinator: (request) => {
            const sentBack = JSON.stringify(request.body?.messages).includes(
              'What the failing checks printed',
            );
            if (!sentBack) return { text: 'Done: hello.txt is written.' };
            if (toolResultCount(request) === 0)
              return {
                toolUses: [
                  {
                    name: 'Agent',
                    input: {
                      subagent_type: 'coder',
                      description: 'write hello.txt',
                      prompt: 'Write hello.txt saying hello.',
                    },
                  },
                ],
              };
            return { text: 'The coder wrote hello.txt.' };
          },
          verdict: () => ({ text: ACHIEVED }),
        }),
        agents: {
          coder: [
            {
              toolUses: [
                { name: 'Write', input: { file_path: join(workspace, 'hello.txt'), content: 'hello\n' } },
              ],
            },
            { text: 'Conclusion: done. Output: hello.txt' },
          ],
        },
      }),
      goalWith(GREETING_CHECK, 'the greeting is friendly'),
    );
    const ctx = await starterFlow({ workspace: scenario.workspace, bequest: false }).run(scenario.runtime(), {
      onEvent: scenario.sink,
    });
    expect(ctx.failedAt).toBeUndefined();
    const rows = scenario.manifest();
    expect(rows.map((row) => row.step)).toEqual(['work', 'work:verdict#1', 'work#round2', 'work:verdict#2']);
    const log = join(scenario.workspace, '.flower', 'artifacts', 'checks', '1', 'item-1.log');
    expect(rows[1]).toMatchObject({
      verdict: 'not yet',
      round: 1,
      checks: [{ command: 'grep -qx hello hello.txt', exit_code: 2, passed: false, output_path: log }],
    });
    expect(rows[0]?.rejected).toContain('1 of 1 check flower ran failed');
    expect(rows[3]).toMatchObject({
      verdict: 'achieved',
      round: 2,
      checks: [{ exit_code: 0, passed: true }],
    });
    // The judge saw the failure as evidence; the worker got the failing output and where the rest is.
    const judges = scenario.mock.mainRequests().filter((request) => roleOf(request) === 'verdict');
    expect(lastUserText(judges[0]!)).toContain('[FAILED] `grep -qx hello hello.txt` — exit 2');
    const round2 = scenario.mock
      .mainRequests()
      .find(
        (request) =>
          roleOf(request) === 'coordinator' &&
          lastUserText(request).includes('What the failing checks printed'),
      )!;
    expect(lastUserText(round2)).toContain('No such file or directory');
    expect(lastUserText(round2)).toContain(log);
    expect(readFileSync(log, 'utf8')).toContain('No such file or directory');
    expect(readFileSync(join(scenario.workspace, 'hello.txt'), 'utf8')).toBe('hello\n');
  });

  it('(b) checks pass and the judge agrees: achieved, each check a line on screen before the ruling, all in the manifest', async () => {
    scenario = await startFrozen(
      {
        main: mainRouter({
          coordinator: () => ({ text: 'Nothing to do: node is there.' }),
          verdict: () => ({
            text: '## Conclusion\nachieved\n## Reason\nJUDGE-RULED node runs.\n## Not passed\n',
          }),
          bequest: () => ({ text: BEQUEST_REPLY }),
        }),
      },
      goalWith('node runs — check: `node -e "process.exit(0)"`', 'node prints — check (30s): `node -v`'),
    );
    const run = await scenario.flower(['--timeout', '0'], { input: '\n' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const passed = run.stdout.search(/\+ check passed · exit 0 in [\d.]+ s · node -e "process.exit\(0\)"/);
    expect(passed).toBeGreaterThan(0);
    expect(run.stdout).toMatch(/\+ check passed · exit 0 in [\d.]+ s · node -v/);
    expect(passed).toBeLessThan(run.stdout.indexOf('JUDGE-RULED'));
    const verdictRow = scenario.manifest().find((row) => row.step === 'work:verdict#1');
    expect(verdictRow).toMatchObject({
      verdict: 'achieved',
      reason: 'JUDGE-RULED node runs.',
      round: 1,
      rounds: 3,
    });
    expect(verdictRow?.checks).toEqual([
      expect.objectContaining({
        command: 'node -e "process.exit(0)"',
        exit_code: 0,
        passed: true,
        duration_s: expect.any(Number),
      }),
      expect.objectContaining({ command: 'node -v', exit_code: 0, passed: true }),
    ]);
    for (const check of verdictRow?.checks ?? []) expect(existsSync(check.output_path)).toBe(true);
    expect(readFileSync(verdictRow!.checks![1]!.output_path, 'utf8')).toMatch(/^v\d+\./);
  });

  it('kills a hang with its group, caps 100 MB into a private log kept out of every prompt, fails a syntax error, and hides the key', async () => {
    const secret = 'sk-ant-scenario-secret-4711';
    // Named, not numbered: the check runs in its own PID namespace, where `$!` means nothing here.
    const hang = `flower-scenario-hang-${process.pid}-${Date.now()}`;
    scenario = await startFrozen(
      {
        main: mainRouter({
          coordinator: () => ({ text: 'Done.' }),
          verdict: () => ({ text: ACHIEVED }),
          bequest: () => ({ text: BEQUEST_REPLY }),
        }),
      },
      goalWith(
        `the server stays up — check (2s): \`(exec -a ${hang} sleep 600) & touch bg.started; sleep 600\``,
        'it logs a lot — check: `yes "a line of log output" | head -c 104857600; echo; echo LAST-LINE`',
        'the script parses — check: `if then fi (((`',
        'no credentials leak — check: `env > env.txt; ! printenv ANTHROPIC_API_KEY`',
      ),
    );
    const run = await scenario.flower(['--timeout', '0', '--rounds', '1', '--no-bequest'], {
      input: '\n',
      env: mockedEnv(scenario.mock, { ANTHROPIC_API_KEY: secret }),
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(
      /^flower: the judge ruled not yet after 1\/1 rounds: 2 of 4 checks flower ran failed, so this round is not yet: .*; flower --rounds 2 continues\n$/,
    );
    const checks = scenario.manifest().find((row) => row.step === 'work:verdict#1')?.checks ?? [];
    expect(checks.map((check) => [check.passed, check.exit_code, check.timed_out ?? false])).toEqual([
      [false, null, true],
      [true, 0, false],
      [false, 2, false],
      [true, 0, false],
    ]);
    expect(checks[0]!.duration_s).toBeLessThan(30);
    // The hang's background child went with its wall.
    expect(existsSync(join(scenario.workspace, 'bg.started'))).toBe(true);
    expect(await namedProcessesGone(hang)).toBe(true);
    // The log keeps the start and the end, says what it cut, and is the user's alone; no request
    // the model received carried more than its tail.
    const log = readFileSync(checks[1]!.output_path, 'utf8');
    expect(log.length).toBeLessThan(140_000);
    expect(log).toMatch(/\n\[flower cut \d+ bytes here: the check printed 104857611 bytes/);
    expect(log.endsWith('LAST-LINE\n')).toBe(true);
    expect(statSync(checks[1]!.output_path).mode & 0o777).toBe(0o600);
    expect(statSync(dirname(checks[1]!.output_path)).mode & 0o777).toBe(0o700);
    const judge = scenario.mock.mainRequests().find((request) => roleOf(request) === 'verdict')!;
    expect(lastUserText(judge)).toContain('LAST-LINE');
    for (const request of scenario.mock.mainRequests())
      expect(JSON.stringify(request.body).length).toBeLessThan(400_000);
    // The key flower itself used never reached a check.
    const env = readFileSync(join(scenario.workspace, 'env.txt'), 'utf8');
    expect(env).not.toContain(secret);
    expect(env).not.toMatch(/^(ANTHROPIC|CLAUDE|FLOWER)_/m);
    expect(env).toMatch(/^PATH=/m);
    // --no-bequest: the task ended without a closing turn or a file.
    expect(existsSync(join(scenario.workspace, 'CLAUDE.md'))).toBe(false);
  }, 120_000);
});
