/**
 * Scenario 8 (flower-guides §15): the clarifier and the judge are walled. Their hands-on tool
 * calls are denied by the whitelist guard (the model reads the "intentional" denial as the tool's
 * result); a judge that may run commands gets Bash but still not Write; a truncated brief is
 * rejected; a frozen brief skips clarifying without a single model call. Real Runtime, SDK and
 * binary; only the model is scripted.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HumanChannel } from '../../src/agents/human/channel.js';
import { Brief } from '../../src/workflow/brief.js';
import { goalStep } from '../../src/workflow/goal-step.js';
import { starterFlow } from '../../src/workflow/starter.js';
import { Workflow } from '../../src/workflow/workflow.js';
import {
  HELLO_BRIEF,
  HELLO_GOAL,
  mainRouter,
  type RoleHandler,
  roleOf,
  type Scenario,
  startScenario,
  toolResultTexts,
} from './scenario-harness.js';

let scenario: Scenario | undefined;
afterEach(async () => {
  await scenario?.close();
  scenario = undefined;
});

/** First turn: try to write a file and to run a command; second turn: `reply`. */
function tryHandsOn(workspace: string, reply: string): RoleHandler {
  return (_request, turn) =>
    turn === 0
      ? {
          toolUses: [
            {
              name: 'Write',
              input: { file_path: join(workspace, 'written.txt'), content: 'should not exist\n' },
            },
            {
              name: 'Bash',
              input: { command: `touch ${join(workspace, 'ran.txt')}`, description: 'touch a file' },
            },
          ],
        }
      : { text: reply };
}

/** The tool results the role saw after its hands-on attempt. */
function handsOnResults(current: Scenario, role: 'clarifier' | 'set-goal'): string {
  const second = current.mock.mainRequests().filter((request) => roleOf(request) === role)[1];
  return second ? toolResultTexts(second) : '';
}

describe('scenario 8: clarifier and judge walls', () => {
  it('denies the clarifier Write and Bash with the "intentional" message', async () => {
    scenario = await startScenario((workspace) => ({
      main: mainRouter({ clarifier: tryHandsOn(workspace, HELLO_BRIEF) }),
    }));
    const { workspace } = scenario;
    const ctx = await starterFlow({ workspace, request: 'write hello.py', clarifyOnly: true }).run(
      scenario.runtime(),
    );
    expect(ctx.failedAt).toBeUndefined();
    const results = handsOnResults(scenario, 'clarifier');
    expect(results).toContain('clarify has no Write tool. This is intentional');
    expect(results).toContain('clarify has no Bash tool. This is intentional');
    expect(existsSync(join(workspace, 'written.txt'))).toBe(false);
    expect(existsSync(join(workspace, 'ran.txt'))).toBe(false);
  });

  it('denies a judge without canRun both tools; a judge with canRun runs its command, in a read-only sandbox, and no Write', async () => {
    scenario = await startScenario((workspace) => ({
      main: mainRouter({ 'set-goal': tryHandsOn(workspace, HELLO_GOAL) }),
    }));
    const { workspace } = scenario;
    const brief = {
      outputs: { clarify: Brief.parse(HELLO_BRIEF).promptBlock() },
      results: {},
      sessions: {},
      data: {},
    };
    const goalPath = join(workspace, '.flower/notes/goal.md');
    const channel = new HumanChannel();

    // Not continuous: the second judge must start its own session, not continue the first one.
    await new Workflow([goalStep({ channel, goalPath })], { context: { ...brief }, continuous: false }).run(
      scenario.runtime(),
    );
    const walled = handsOnResults(scenario, 'set-goal');
    expect(walled).toContain('set-goal has no Write tool. This is intentional');
    expect(walled).toContain('set-goal has no Bash tool. This is intentional');
    expect(existsSync(join(workspace, 'ran.txt'))).toBe(false);

    const before = scenario.mock.mainRequests().length;
    await new Workflow([goalStep({ channel, goalPath, alwaysSet: true, role: { canRun: true } })], {
      context: { ...brief, outputs: { ...brief.outputs } },
      continuous: false,
    }).run(scenario.runtime());
    const second = scenario.mock.mainRequests().filter((request) => request.index >= before)[1]!;
    const canRun = toolResultTexts(second);
    expect(canRun).toContain('set-goal has no Write tool. This is intentional');
    expect(canRun).not.toContain('no Bash tool');
    // The command ran, and the sandbox of a read-only role refused its write (issue 19).
    expect(canRun).toContain('Read-only file system');
    expect(existsSync(join(workspace, 'ran.txt'))).toBe(false);
    expect(existsSync(join(workspace, 'written.txt'))).toBe(false);
  });

  it('rejects a brief cut off inside an unclosed code fence and stops the flow', async () => {
    const truncated = '## Goal\nhello.py\n## Acceptance\nprints hello\n```python\nprint("hel';
    scenario = await startScenario({ main: mainRouter({ clarifier: () => ({ text: truncated }) }) });
    const { workspace } = scenario;
    const ctx = await starterFlow({ workspace, request: 'write hello.py' }).run(scenario.runtime());
    expect(ctx.failedAt).toBe('clarify');
    expect(ctx.briefMissing).toEqual(['Boundaries', 'Unknowns & assumptions']);
    expect(existsSync(join(workspace, '.flower/notes/brief.md'))).toBe(false);
    expect(scenario.manifest().map((row) => [row.step, row.ok])).toEqual([['clarify', true]]);
  });

  it('skips clarifying with a frozen brief: context filled, no model call, no manifest', async () => {
    scenario = await startScenario({ main: mainRouter({}) });
    const { workspace } = scenario;
    Brief.parse(HELLO_BRIEF).write(join(workspace, '.flower/notes/brief.md'));
    const ctx = await starterFlow({ workspace, clarifyOnly: true }).run(scenario.runtime());
    expect(ctx.failedAt).toBeUndefined();
    expect(ctx.outputs.clarify).toContain('## Goal');
    expect(ctx.brief?.complete).toBe(true);
    expect(scenario.mock.requests).toHaveLength(0);
    expect(existsSync(join(workspace, 'runs', 'manifest.json'))).toBe(false);
    expect(readFileSync(join(workspace, 'runs', 'lineage.json'), 'utf8')).toContain('"woke": 1');
  });
});
