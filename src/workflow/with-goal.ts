/**
 * `withGoal`: puts a step under the goal guard. After every round of work a judge — a different
 * role, in a fresh session — rules achieved / not yet / cannot verify here.
 *
 * Invariants:
 * - The judge runs directly on the runner, never as a step: a new session every round (no resume),
 *   labelled `<step>:verdict#<round>`, so it never enters lineage and never judges with the
 *   memory of its earlier rulings (otherwise the guard degrades into self-audit).
 * - Only "achieved" passes. A vague ruling counts as not yet, with a reason saying so.
 * - "not yet" sends the judge's gaps back into the same work session (`#roundN`), never a fix.
 * - "cannot verify here" is a human's call: accept and move on, change the goal, or tell the judge
 *   it was wrong. When nobody answers, the step stops (StepAbort): the goal file and the manifest
 *   stay on disk for the human to decide later, and no more rounds are spent.
 * - `rounds` is the total number of work rounds (0 and 1 both mean one).
 * - The wrapped step is copied with its other fields intact (a field-by-field rebuild once lost the
 *   resume prompt); its own gate and onReject are replaced.
 */
import type { HumanChannel } from '../agents/human/channel.js';
import { type JudgeOptions, judge } from '../agents/roles.js';
import type { AgentSpec } from '../runtime/agent-spec.js';
import type { StepResult } from '../runtime/step-result.js';
import type { WorkflowContext } from './context.js';
import { Goal } from './goal.js';
import { type Step, StepAbort } from './step.js';
import { UNCLEAR_VERDICT_REASON, Verdict } from './verdict.js';

/** The choices offered when the judge cannot verify the goal here, in this order. */
export const CANNOT_VERIFY_CHOICES = [
  'Accept this result and move on',
  'Change the goal',
  'The judge is wrong: keep working',
] as const;

export interface WithGoalOptions {
  channel: HumanChannel;
  /** The frozen goal (normally `<workbench>/notes/goal.md`). */
  goalPath: string;
  /** The judge agent; default: the judge role on `channel`. */
  spec?: AgentSpec;
  /** Total rounds of work, judged after each (default 3). */
  rounds?: number;
  instructions?: string;
  /** Let the judge run commands (it still may not write files). */
  canRun?: boolean;
  /** Judge label; default `<step>:verdict`. */
  name?: string;
  /** Further judge settings. */
  role?: Omit<JudgeOptions, 'channel' | 'name' | 'instructions' | 'canRun'>;
}

export function verifyPrompt(goal: string, report: string): string {
  return [
    'Judge this round of work against the goal below (task B in your rules). Look at the artifacts',
    'yourself; the report is a claim, not evidence.',
    '',
    '# The goal',
    goal,
    '',
    '# What the worker reported',
    report,
    '',
    'Reply with three sections: "## Conclusion" (exactly one of: achieved / not yet / cannot verify here),',
    '"## Reason", and "## Not passed" (the failed checks, one per line).',
  ].join('\n');
}

export function withGoal(step: Step, options: WithGoalOptions): Step {
  const label = options.name ?? `${step.name}:verdict`;
  const judgeSpec =
    options.spec ??
    judge({
      ...options.role,
      name: label,
      channel: options.channel,
      instructions: options.instructions ?? '',
      canRun: options.canRun ?? false,
    });

  const gate = async (result: StepResult, ctx: WorkflowContext): Promise<boolean> => {
    const runner = ctx.runtime;
    if (!runner)
      throw new StepAbort('No runtime is available to run the judge, so the goal cannot be checked.');
    const round = (ctx.goalRounds ?? 0) + 1;
    ctx.goalRounds = round;
    const goal = currentGoal(ctx, options.goalPath);
    const ruling = await runner.run(
      judgeSpec,
      verifyPrompt(
        goal.promptBlock() || '(there is no goal)',
        result.text || '(the worker said nothing this round)',
      ),
      { stepName: `${label}#${round}`, ...(ctx.onEvent ? { onEvent: ctx.onEvent } : {}) },
    );
    const verdict = readRuling(ruling);
    ctx.verdict = verdict;
    if (verdict.achieved) return true;
    if (!verdict.cannotVerify) return false;
    return askHuman(ctx, verdict, goal, options);
  };

  return {
    ...step,
    retries: Math.max(0, (options.rounds ?? 3) - 1),
    gate,
    onReject: (_result, ctx) => ctx.verdict?.feedback() ?? '',
  };
}

/**
 * The verdict of a judge run. A run that failed rules nothing, whatever text it left behind, and
 * an unreadable ruling says so in its reason (it is what the worker is told).
 */
function readRuling(ruling: StepResult): Verdict {
  if (!ruling.ok) {
    return new Verdict({
      reason: `${UNCLEAR_VERDICT_REASON} (The judge's own run failed: ${ruling.error ?? 'no reason recorded'}.)`,
    });
  }
  const verdict = Verdict.parse(ruling.text);
  if (verdict.parsed) return verdict;
  return verdict.withReason(
    verdict.reason ? `${UNCLEAR_VERDICT_REASON} It wrote:\n${verdict.reason}` : UNCLEAR_VERDICT_REASON,
  );
}

/** The complete goal in the context, else the one on disk, else an empty one. */
function currentGoal(ctx: WorkflowContext, goalPath: string): Goal {
  if (ctx.goal?.complete) return ctx.goal;
  return Goal.load(goalPath) ?? new Goal();
}

/** The judge could not verify: the human decides. Returns whether the step passes. */
async function askHuman(
  ctx: WorkflowContext,
  verdict: Verdict,
  goal: Goal,
  options: WithGoalOptions,
): Promise<boolean> {
  const { channel, goalPath } = options;
  const question = await channel.ask(
    `The judge says the goal cannot be verified here: ${verdict.reason || '(no reason given)'}\nWhat now?`,
    [...CANNOT_VERIFY_CHOICES],
  );
  if (question.state !== 'answered') {
    throw new StepAbort(
      `The judge could not verify the goal in this environment and nobody answered. Decide, then run flower ` +
        `again: change ${goalPath}, or read the verdict in runs/manifest.json.`,
    );
  }
  const answer = question.answer.trim();
  const [accept, change] = CANNOT_VERIFY_CHOICES;
  if (startsWithChoice(answer, accept)) return true;
  if (startsWithChoice(answer, change)) {
    const newGoal = await channel.ask(
      'What should the goal be now? It is added to the current goal; the checklist stays as it is.',
    );
    const text = newGoal.state === 'answered' ? newGoal.answer.trim() : '';
    if (text) {
      const amended = goal.amend(text);
      amended.write(goalPath);
      ctx.goal = amended;
      ctx.verdict = verdict.withReason(`A human changed the goal. The new goal: ${text}`);
    }
    return false;
  }
  ctx.verdict = verdict.withReason(
    `A human says the goal can be reached here and the judge was wrong. In their words: ${answer}`,
  );
  return false;
}

/** The option itself, or an answer that starts with its first word ("accept", "change"). */
function startsWithChoice(answer: string, choice: string): boolean {
  const lowered = answer.toLowerCase();
  const firstWord = choice.split(' ')[0]?.toLowerCase() ?? choice;
  return lowered === choice.toLowerCase() || lowered.startsWith(firstWord);
}
