/**
 * The last turn of a task: a read-only agent writes the bequest (`bequest/document.ts`) and flower
 * places it in `CLAUDE.md` and `AGENTS.md` at the workspace root, inside its managed block.
 *
 * Invariants:
 * - It runs when a task ends — achieved, stopped (brake, nobody answered, a failure) or out of
 *   rounds — and only when work ran in this process: a wake that did nothing leaves the previous
 *   bequest as it was.
 * - The turn is read-only (the oracle role: Read, Glob, Grep) and capped like a side question.
 * - It never fails the task: a failed or thin turn, or a spent budget (no turn at all), gives a
 *   mechanical bequest marked degraded; a file that cannot be written is a warning.
 * - flower's facts (the ending, the checks, the assumptions) come from the context, not the model.
 * - The block names its task: the runner's run directory as the shared store names tasks
 *   (`taskNameOf`: relative to the workspace when inside it, so the committed file holds no machine
 *   path and is the same on every checkout); `runs` for a runner without one.
 * - Whatever the block writer had to do beyond placing the block (flower markers that pair with
 *   nothing, duplicate blocks folded into one) is said as a warning: the user's file changed in a
 *   way they did not ask for, or holds something only they can remove.
 */
import { join } from 'node:path';
import { oracle } from '../agents/roles.js';
import type { Workbench } from '../agents/workbench.js';
import { BEQUEST_HEADINGS, Bequest, bequestPrompt, mechanicalBequest } from '../bequest/document.js';
import { DEFAULT_TASK_KEY, taskKey, writeManagedFile } from '../bequest/managed-block.js';
import type { StepResult } from '../runtime/step-result.js';
import { taskNameOf } from '../store/postgres/task-records.js';
import { BUDGET_SPENT } from './budget.js';
import type { WorkflowContext } from './context.js';
import { outcomeOf } from './evidence.js';
import type { StepRunner } from './runner.js';
import { StepAbort } from './step.js';

/** The step label of the closing turn in the manifest. */
export const BEQUEST_STEP = 'bequest';
/** The files the bequest goes into, at the workspace root. */
export const BEQUEST_FILES = ['CLAUDE.md', 'AGENTS.md'] as const;
/** Subtype of the `system` event that says where the bequest went. */
export const BEQUEST_EVENT = 'bequest';

export interface BequestOptions {
  readonly workspace: string;
  readonly workbench: Workbench;
  /** The step whose ending is the task's ending (the guarded work step). */
  readonly workStep: string;
}

/** flower's own account of how the task ended: the ruling, the checks, the assumptions. */
export function endingFacts(ctx: WorkflowContext, workStep: string): string {
  const lines: string[] = [];
  const verdict = ctx.verdict;
  if (ctx.failedAt === undefined) {
    lines.push(
      verdict?.achieved
        ? 'flower: the judge ruled the goal achieved.'
        : verdict?.cannotVerify
          ? 'flower: the judge could not verify the goal here, and a human accepted the result.'
          : `flower: the step "${workStep}" finished.`,
    );
  } else {
    const why = ctx.aborted ?? ctx.results[ctx.failedAt]?.error ?? 'it failed';
    lines.push(
      `flower: the task stopped at "${ctx.failedAt}" without reaching the goal — ${why.split('\n')[0]}.`,
    );
  }
  if (verdict && !verdict.achieved && verdict.reason)
    lines.push(`The judge's last reason: ${verdict.reason.split('\n')[0]}`);
  const runs = ctx.checkRuns ?? [];
  if (runs.length > 0) {
    lines.push('', 'Checks flower ran on the host after the last round:');
    for (const run of runs)
      lines.push(
        `- ${run.passed ? 'passed' : 'FAILED'}: \`${run.command || run.item}\` (${outcomeOf(run, false)})`,
      );
  }
  if (ctx.assumptions?.length) {
    lines.push('', 'Accepted as unverifiable on this machine (assumptions, not results):');
    for (const item of ctx.assumptions) lines.push(`- ${item}`);
  }
  return lines.join('\n');
}

function situation(ctx: WorkflowContext, facts: string): string {
  const goal = ctx.goal?.promptBlock();
  return [goal ? `# The goal\n${goal}` : '', `# How it ended\n${facts}`].filter(Boolean).join('\n\n');
}

/** Runs the closing turn (unless the budget is spent) and writes the bequest into both files. */
export async function leaveBequest(
  runner: StepRunner,
  ctx: WorkflowContext,
  options: BequestOptions,
): Promise<Bequest> {
  const facts = endingFacts(ctx, options.workStep);
  const workbenchPath = options.workbench.show(options.workbench.root);
  const what = ctx.goal?.statement ?? ctx.brief?.goal;
  let bequest: Bequest;
  if (ctx.aborted?.startsWith(BUDGET_SPENT)) {
    bequest = mechanicalBequest({ what, workbench: workbenchPath, why: 'the task budget was spent' });
  } else {
    let result: StepResult | undefined;
    let refused: string | undefined;
    try {
      result = await runner.run(
        // The oracle's walls, but it speaks as what it is: the screen labels it `bequest:`, not `aside:`.
        { ...oracle({ name: BEQUEST_STEP, workbench: options.workbench }), role: BEQUEST_STEP },
        bequestPrompt(situation(ctx, facts)),
        { stepName: BEQUEST_STEP, ...(ctx.onEvent ? { onEvent: ctx.onEvent } : {}) },
      );
    } catch (error) {
      if (!(error instanceof StepAbort)) throw error;
      refused = error.message;
    }
    const written = result?.ok ? Bequest.parse(result.text) : undefined;
    bequest = written?.complete
      ? written
      : mechanicalBequest({
          what,
          workbench: workbenchPath,
          why:
            refused ??
            (result?.ok
              ? `its reply lacked ${(written?.missing() ?? []).map((key) => `"${BEQUEST_HEADINGS[key]}"`).join(' and ')}`
              : `the turn failed: ${(result?.error ?? 'no reason recorded').split('\n')[0]}`),
        });
  }
  const task = runner.runDir
    ? taskKey(taskNameOf({ workspace: options.workspace, runDir: runner.runDir }).runDir)
    : DEFAULT_TASK_KEY;
  write(ctx, options.workspace, task, bequest.body(facts), bequest.degraded);
  return bequest;
}

function write(ctx: WorkflowContext, workspace: string, task: string, body: string, degraded: boolean): void {
  const say = (text: string, warning: boolean, data: Record<string, unknown>) =>
    ctx.onEvent?.({
      kind: 'system',
      text,
      payload: {
        subtype: BEQUEST_EVENT,
        data,
        ...(warning ? { warning: true } : { notice: 'info' as const }),
      },
    });
  const written: string[] = [];
  for (const name of BEQUEST_FILES) {
    const path = join(workspace, name);
    try {
      const placed = writeManagedFile(path, body, task);
      written.push(name);
      if (placed.folded)
        say(
          `${path} held ${placed.folded + 1} of flower's blocks (an earlier flower appended one per task); they were folded into one`,
          true,
          { path, folded: placed.folded },
        );
      if (placed.brokenMarkers)
        say(
          `${path} has flower markers that pair with nothing (${placed.brokenMarkers}); they were left as they are and the bequest was ${placed.placement === 'appended' ? 'appended at the end' : 'written in its block'}; delete those markers to silence this`,
          true,
          { path, brokenMarkers: placed.brokenMarkers },
        );
    } catch (error) {
      say(`could not write the bequest to ${path}: ${(error as Error).message}`, true, { path });
    }
  }
  if (written.length > 0)
    say(
      `bequest${degraded ? ' (degraded: assembled by flower)' : ''} written to ${written.join(' and ')} for the next tool`,
      degraded,
      { files: written, degraded },
    );
}
