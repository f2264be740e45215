/**
 * The goal guard runs its checks inside the runner's sandbox: a check cannot write outside the
 * workspace by default (a runner that says nothing about the sandbox gets the default wall, and a
 * wrapper keeps the runner's policy), and runs on the host only under an explicit `enabled: false`.
 */
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HumanChannel } from '../../../src/agents/human/channel.js';
import { sandboxAvailability } from '../../../src/runtime/sandbox/availability.js';
import { defaultSandboxPolicy, type SandboxPolicy } from '../../../src/runtime/sandbox/policy.js';
import { Goal } from '../../../src/workflow/goal.js';
import { type StepRunner, wrapRunner } from '../../../src/workflow/runner.js';
import type { Step } from '../../../src/workflow/step.js';
import { withGoal } from '../../../src/workflow/with-goal.js';
import { Workflow } from '../../../src/workflow/workflow.js';
import { FakeRunner, fakeSpec } from './fake-runner.js';

const work: Step = { name: 'work', spec: fakeSpec('coordinator'), prompt: 'build it' };
const ACHIEVED = '## Conclusion\nachieved\n## Reason\nlooks done\n## Not passed\n';

/** A task whose one check writes into the workspace and outside it. */
function task(sandbox?: SandboxPolicy) {
  const root = mkdtempSync(join(tmpdir(), 'flower-guard-wall-'));
  const workspace = join(root, 'ws');
  const outside = join(root, 'outside');
  mkdirSync(workspace, { recursive: true });
  mkdirSync(outside);
  const goalPath = join(workspace, '.flower', 'notes', 'goal.md');
  new Goal({
    statement: 'it builds',
    checks: [`writes — check: \`touch inside && touch ${outside}/escaped\``],
  }).write(goalPath);
  const fake = new FakeRunner(() => ({ text: ACHIEVED }), workspace, join(workspace, 'runs'));
  const runner: StepRunner = sandbox === undefined ? fake : Object.assign(fake, { sandbox });
  return { runner, goalPath, workspace, outside };
}

describe.runIf(sandboxAvailability().available)('the goal guard runs its checks walled', () => {
  it('by default, and through a wrapper', async () => {
    for (const runner of ['plain', 'wrapped'] as const) {
      const made = task(runner === 'wrapped' ? defaultSandboxPolicy : undefined);
      const used =
        runner === 'wrapped' ? wrapRunner(made.runner, made.runner.run.bind(made.runner)) : made.runner;
      const ctx = await new Workflow([
        withGoal(work, {
          channel: new HumanChannel({ timeoutSeconds: 0 }),
          goalPath: made.goalPath,
          rounds: 1,
        }),
      ]).run(used);
      expect(ctx.checkRuns?.[0]?.passed).toBe(false);
      expect(existsSync(join(made.workspace, 'inside'))).toBe(true);
      expect(existsSync(join(made.outside, 'escaped'))).toBe(false);
    }
  });

  it('on the host only when the policy is off (--no-sandbox)', async () => {
    const { runner, goalPath, outside } = task({ ...defaultSandboxPolicy, enabled: false });
    const ctx = await new Workflow([
      withGoal(work, { channel: new HumanChannel({ timeoutSeconds: 0 }), goalPath, rounds: 1 }),
    ]).run(runner);
    expect(ctx.checkRuns?.[0]?.passed).toBe(true);
    expect(existsSync(join(outside, 'escaped'))).toBe(true);
  });
});
