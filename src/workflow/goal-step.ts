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
 * - Deriving the goal again keeps a person's edits of the file it replaces (goal-edits.ts): items
 *   added by hand are carried into the new goal (and named to the judge deriving it, so it does not
 *   write them twice), anything that cannot be carried is kept in a copy, and one line says which.
 *   Carried checks are frozen only if they already were: one never approved is asked about by the
 *   guard on a terminal, and left out (and said) unattended, as any check added after the goal was
 *   set (frozen-checks.ts).
 */
import { relative } from 'node:path';
import type { HumanChannel } from '../agents/human/channel.js';
import { type JudgeOptions, judge } from '../agents/roles.js';
import { CHECK_SYNTAX } from '../checks/syntax.js';
import type { AgentSpec } from '../runtime/agent-spec.js';
import { CLARIFY_STEP } from './clarify-step.js';
import type { WorkflowContext } from './context.js';
import {
  addFrozenChecks,
  checksOf,
  compareChecks,
  type FrozenCheck,
  freezeChecks,
  loadFrozenChecks,
} from './frozen-checks.js';
import { Goal, itemKey } from './goal.js';
import { editsOnDisk, GOAL_EDITS_EVENT, type GoalRewrite, rewriteLine, setGoalAgain } from './goal-edits.js';
import { annotateResult } from './runner.js';
import type { OnFail, Step } from './step.js';
import { triageGoal } from './triage.js';

export const SET_GOAL_STEP = 'set-goal';

export function setGoalPrompt(brief: string, keptItems: readonly string[] = []): string {
  return [
    'Set the goal for the requirement below (task A in your rules). Look at this environment first, so',
    'that every check is one you could verify here.',
    '',
    brief,
    '',
    'Reply with two sections: "## Statement" (what done means) and "## Checklist" (one item per line).',
    `Wherever a shell command can prove an item, end the item with ${CHECK_SYNTAX} (exit code 0 = passed):`,
    "flower runs it on this machine after every round, so that item needs nobody's word.",
    ...(keptItems.length > 0
      ? [
          '',
          'The goal file has these items that a person added by hand. flower keeps them in the new checklist as',
          'they are, so do not write them again:',
          ...keptItems.map((item) => `- ${item}`),
        ]
      : []),
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
    prompt: (ctx) =>
      setGoalPrompt(
        ctx.outputs[briefKey] ?? '(there is no brief)',
        editsOnDisk(options.goalPath, ctx.runtime?.runDir).edits.added,
      ),
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
      const derived = Goal.parse(result.text);
      if (!derived.complete) {
        if (ctx.runtime)
          annotateResult(ctx.runtime, result, {
            rejected: 'the reply is not a complete goal',
            missing: derived.missing(),
          });
        return false;
      }
      const runDir = ctx.runtime?.runDir;
      const frozenBefore = runDir ? loadFrozenChecks(runDir, options.goalPath) : undefined;
      const rewrite = setGoalAgain(derived, options.goalPath, runDir);
      sayRewrite(ctx, rewrite);
      pourGoal(ctx, name, rewrite.goal);
      const triaged = await triageGoal(ctx, rewrite.goal, rewrite.path, options.channel);
      if (runDir) freezeChecks(runDir, rewrite.path, toFreeze(triaged.checks, rewrite.carried, frozenBefore));
      pourGoal(ctx, name, triaged);
      return true;
    },
    reduce: (result, ctx) => ctx.goal?.promptBlock() ?? result.text,
  };
}

/**
 * The items whose checks the set-goal step freezes: all of the goal's, except carried items whose
 * checks were not frozen before — a person's edit of goal.md cannot be told from an agent's, so
 * those wait for the guard's question (frozen-checks.ts: changed checks run only once a human says so).
 */
function toFreeze(
  items: readonly string[],
  carried: readonly string[],
  frozenBefore: readonly FrozenCheck[] | undefined,
): string[] {
  const carriedKeys = new Set(carried.map(itemKey));
  return items.filter(
    (item) => !carriedKeys.has(itemKey(item)) || compareChecks([item], frozenBefore ?? []).added.length === 0,
  );
}

/** Says, in one line, what became of a person's edits when the goal was derived again. */
function sayRewrite(ctx: WorkflowContext, rewrite: GoalRewrite): void {
  const workspace = ctx.runtime?.workspace;
  const near = (path: string) => {
    const inside = workspace === undefined ? '' : relative(workspace, path);
    return inside && !inside.startsWith('..') ? inside : path;
  };
  const line = rewriteLine(rewrite, near);
  if (!line) return;
  ctx.onEvent?.({
    kind: 'system',
    text: line,
    payload: {
      subtype: GOAL_EDITS_EVENT,
      data: {
        path: rewrite.path,
        carried: [...rewrite.carried],
        conflicts: [...rewrite.conflicts],
        ...(rewrite.keptAt === undefined ? {} : { kept_at: rewrite.keptAt }),
      },
      ...(rewrite.keptAt === undefined ? { notice: 'info' as const } : { warning: true }),
    },
  });
}
