/**
 * The set-goal step: the judge reads the brief and writes what "done" means — a statement and a
 * checklist — which is frozen to `notes/goal.md` and used by every verdict round.
 *
 * Invariants:
 * - The step passes only with a non-empty statement and at least one check.
 * - A complete goal on disk skips the step (a restart does not re-derive it) but fills the
 *   context, unless `alwaysSet` (a wake with a new remark changed the brief).
 * - Checks the judge marks `[cannot verify here: …]` are reported the moment the goal is set, as a
 *   warning, not a block: finding out now costs nothing, finding out after a round of work costs
 *   the whole round.
 * - No resume prompt: deriving the goal again needs the full brief, so it is always resent.
 */
import type { HumanChannel } from '../agents/human/channel.js';
import { type JudgeOptions, judge } from '../agents/roles.js';
import type { AgentSpec } from '../runtime/agent-spec.js';
import { CLARIFY_STEP } from './clarify-step.js';
import type { WorkflowContext } from './context.js';
import { Goal } from './goal.js';
import type { OnFail, Step } from './step.js';

export const SET_GOAL_STEP = 'set-goal';

/** Subtype of the `system` event that warns about checks this environment cannot verify. */
export const UNVERIFIABLE_CHECKS_EVENT = 'unverifiable-checks';

export function setGoalPrompt(brief: string): string {
  return [
    'Set the goal for the requirement below (task A in your rules). Look at this environment first, so',
    'that every check is one you could verify here.',
    '',
    brief,
    '',
    'Reply with two sections: "## Statement" (what done means) and "## Checklist" (one check per line).',
  ].join('\n');
}

export interface GoalStepOptions {
  channel: HumanChannel;
  /** Where the goal is frozen (normally `<workbench>/notes/goal.md`). */
  goalPath: string;
  /** The step whose output is the brief. */
  briefKey?: string;
  name?: string;
  spec?: AgentSpec;
  instructions?: string;
  /** Derive the goal again even when a complete one is on disk. */
  alwaysSet?: boolean;
  onFail?: OnFail;
  retries?: number;
  /** Further judge settings, e.g. `canRun: true` so it can look at the machine. */
  role?: Omit<JudgeOptions, 'channel' | 'name' | 'instructions'>;
}

function pourGoal(ctx: WorkflowContext, name: string, goal: Goal): void {
  ctx.goal = goal;
  ctx.outputs[name] = goal.promptBlock();
}

export function goalStep(options: GoalStepOptions): Step {
  const name = options.name ?? SET_GOAL_STEP;
  const briefKey = options.briefKey ?? CLARIFY_STEP;
  const spec =
    options.spec ??
    judge({ ...options.role, name, channel: options.channel, instructions: options.instructions ?? '' });
  return {
    name,
    spec,
    prompt: (ctx) => setGoalPrompt(ctx.outputs[briefKey] ?? '(there is no brief)'),
    retries: options.retries ?? 0,
    onFail: options.onFail ?? 'stop',
    when: (ctx) => {
      if (options.alwaysSet) return true;
      const onDisk = Goal.load(options.goalPath);
      if (!onDisk?.complete) return true;
      pourGoal(ctx, name, onDisk);
      return false;
    },
    gate: (result, ctx) => {
      const goal = Goal.parse(result.text);
      if (!goal.complete) return false;
      const path = goal.write(options.goalPath);
      pourGoal(ctx, name, goal);
      warnUnverifiable(ctx, goal, path);
      return true;
    },
    reduce: (result, ctx) => ctx.goal?.promptBlock() ?? result.text,
  };
}

function warnUnverifiable(ctx: WorkflowContext, goal: Goal, path: string): void {
  const unverifiable = goal.unverifiable;
  if (unverifiable.length === 0 || !ctx.onEvent) return;
  const text = [
    `${unverifiable.length}/${goal.checks.length} checks of the goal cannot be verified here. They will fail at`,
    `judging time and the run will stop to ask you. You can still edit ${path} now:`,
    ...unverifiable.map((check) => `  - ${check}`),
  ].join('\n');
  ctx.onEvent({
    kind: 'system',
    text,
    payload: {
      subtype: UNVERIFIABLE_CHECKS_EVENT,
      data: { unverifiable, total: goal.checks.length, path },
      warning: true,
    },
  });
}
