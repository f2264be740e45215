/**
 * `--budget USD`: one cap for the whole task — every run, round, judge, handoff and side question
 * recorded in its run directory — enforced step by step.
 *
 * How the cap reaches the model: each step gets what is left as the SDK's `maxBudgetUsd`. Measured
 * against the bundled binary (src/testing/README.md): the binary compares the cap with what *this
 * query* spent (not the session's running total, so a resumed session is not stopped by its past),
 * checks after every turn, so it overshoots by at most one turn, and ends the query with an error
 * result "Reached maximum budget ($X)" (subtype `error_max_budget_usd`).
 *
 * Invariants:
 * - What was spent is `taskSpend` (the same figure `status` and `report` show), read fresh before
 *   every step, so rows written by other processes count too.
 * - Nothing is left: the step does not start (StepAbort, no model call, no row).
 * - A step the binary cut off at the cap keeps its session (lineage still names it), and its error
 *   becomes the one budget line, so a later run with a larger budget continues the same sessions.
 * - A cap the step set itself (a role's own `maxBudgetUsd`) is kept when it is smaller.
 */

import type { StepResult } from '../runtime/step-result.js';
import { taskSpend } from '../runtime/task-spend.js';
import { annotateResult, type StepRunner, wrapRunner } from './runner.js';
import { StepAbort } from './step.js';

/** How the budget line starts, so a gate can tell a spent budget from a failed step. */
export const BUDGET_SPENT = 'budget spent:';

/** The binary's words when a query reached its `maxBudgetUsd`. */
const SDK_BUDGET_STOP = /Reached maximum budget|error_max_budget_usd/i;

/** `$4.98` */
function dollars(usd: number): string {
  return `$${usd.toFixed(2)}`;
}

/** A budget worth suggesting: twice the old one, written without needless decimals. */
export function raisedBudget(limitUsd: number): string {
  const doubled = Math.round(limitUsd * 2 * 100) / 100;
  return Number.isInteger(doubled) ? String(doubled) : doubled.toFixed(2);
}

export class TaskBudget {
  /** @param spentUsd what the task has spent so far (read on every call) */
  constructor(
    readonly limitUsd: number,
    private readonly spentUsd: () => number,
  ) {}

  /** The budget of the task whose books are in `runDir`. */
  static forRunDir(limitUsd: number, runDir: string): TaskBudget {
    return new TaskBudget(limitUsd, () => taskSpend(runDir).totalUsd);
  }

  spent(): number {
    return this.spentUsd();
  }

  /** USD left; zero or less means spent. */
  remaining(): number {
    return this.limitUsd - this.spent();
  }

  /** `budget spent: $4.98 of $5.00; run with --budget 10 to continue` */
  spentLine(): string {
    return `${BUDGET_SPENT} ${dollars(this.spent())} of ${dollars(this.limitUsd)}; run with --budget ${raisedBudget(this.limitUsd)} to continue`;
  }
}

/** Whether `result` ended because the task's budget was spent. */
export function isBudgetStop(result: StepResult): boolean {
  return (result.error ?? '').startsWith(BUDGET_SPENT);
}

/** A runner that caps every step at what is left of `budget`, and starts none once it is spent. */
export function budgetedRunner(inner: StepRunner, budget: TaskBudget): StepRunner {
  return wrapRunner(inner, async (spec, prompt, options) => {
    const remaining = budget.remaining();
    if (remaining <= 0) throw new StepAbort(budget.spentLine());
    const cap = Math.min(spec.maxBudgetUsd ?? Number.POSITIVE_INFINITY, remaining);
    const result = await inner.run({ ...spec, maxBudgetUsd: cap }, prompt, options);
    const cutOff = [result.error, ...result.errors].some((text) => text && SDK_BUDGET_STOP.test(text));
    // A step that hit its own smaller cap is that step's business, not the task's budget.
    if (!result.ok && cutOff && budget.remaining() <= 0) {
      if (result.error) result.errors.push(result.error);
      result.error = budget.spentLine();
      // The row was written with the binary's words; write it again with the line people act on.
      annotateResult(inner, result, {});
    }
    return result;
  });
}
