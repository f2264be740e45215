/**
 * The set-goal step: the judge reads the brief and writes what "done" means — a statement and a
 * checklist — which is frozen to `notes/goal.md` and used by every verdict round.
 *
 * Invariants:
 * - The step passes only with a non-empty statement and at least one check.
 * - A complete goal on disk skips the step (a restart does not re-derive it) but fills the
 *   context, unless `alwaysSet` (a wake with a new remark changed the brief).
 * - The goal is triaged the moment it is set, and again when one on disk still has undecided items
 *   (a hand edit, a process that died before the human answered): items that cannot be verified
 *   here go to the human before any work is spent (see `triage.ts`). Finding out now costs nothing;
 *   finding out after a round of work costs the whole round.
 * - The prompt asks for a check command wherever a command can prove an item: flower runs those
 *   itself, so they are the items nobody has to take on trust.
 * - No resume prompt: deriving the goal again needs the full brief, so it is always resent.
 * - The checks of the goal it sets are frozen in the run directory (frozen-checks.ts), after triage,
 *   so the human's answers are part of them; a goal found on disk adds to the frozen checks only
 *   what the human's triage answers bring in (anything else in the file was written by somebody
 *   flower cannot tell from an agent), and is frozen as it is only when it has no record at all.
 */
import type { HumanChannel } from '../agents/human/channel.js';
import { type JudgeOptions, judge } from '../agents/roles.js';
import { CHECK_SYNTAX } from '../checks/syntax.js';
import type { AgentSpec } from '../runtime/agent-spec.js';
import { CLARIFY_STEP } from './clarify-step.js';
import type { WorkflowContext } from './context.js';
import { addFrozenChecks, checksOf, compareChecks, freezeChecks, loadFrozenChecks } from './frozen-checks.js';
import { Goal } from './goal.js';
import type { OnFail, Step } from './step.js';
import { triageGoal } from './triage.js';

export const SET_GOAL_STEP = 'set-goal';

export function setGoalPrompt(brief: string): string {
  return [
    'Set the goal for the requirement below (task A in your rules). Look at this environment first, so',
    'that every check is one you could verify here.',
    '',
    brief,
    '',
    'Reply with two sections: "## Statement" (what done means) and "## Checklist" (one item per line).',
    `Wherever a shell command can prove an item, end the item with ${CHECK_SYNTAX} (exit code 0 = passed):`,
    "flower runs it on this machine after every round, so that item needs nobody's word.",
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
    when: async (ctx) => {
      if (options.alwaysSet) return true;
      const onDisk = Goal.load(options.goalPath);
      if (!onDisk?.complete) return true;
      const runDir = ctx.runtime?.runDir;
      // A goal from before frozen checks existed, or written by hand before the first run.
      if (runDir && loadFrozenChecks(runDir, options.goalPath) === undefined)
        freezeChecks(runDir, options.goalPath, onDisk.checks);
      pourGoal(ctx, name, onDisk);
      ctx.assumptions = onDisk.assumptions;
      if (onDisk.undecided.length > 0) {
        const triaged = await triageGoal(ctx, onDisk, options.goalPath, options.channel);
        // Only triage's own additions are the human's: they replaced items flower asked about.
        const answered = compareChecks(triaged.checks, checksOf(onDisk.checks)).added;
        if (runDir && answered.length > 0)
          addFrozenChecks(
            runDir,
            options.goalPath,
            answered.map((check) => check.item),
          );
        pourGoal(ctx, name, triaged);
      }
      return false;
    },
    gate: async (result, ctx) => {
      const goal = Goal.parse(result.text);
      if (!goal.complete) return false;
      const path = goal.write(options.goalPath);
      pourGoal(ctx, name, goal);
      const triaged = await triageGoal(ctx, goal, path, options.channel);
      const runDir = ctx.runtime?.runDir;
      if (runDir) freezeChecks(runDir, path, triaged.checks);
      pourGoal(ctx, name, triaged);
      return true;
    },
    reduce: (result, ctx) => ctx.goal?.promptBlock() ?? result.text,
  };
}
