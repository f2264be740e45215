/**
 * Side questions (`? where are we`): answered by the read-only oracle while the run goes on.
 *
 * Invariants:
 * - The oracle runs in its own Runtime under `<run dir>/aside/` (own session store and manifest),
 *   so the main run's manifest, lineage and accounting never change because someone asked.
 * - No resilience retries: an aside that fails says so in one line and is not tried again.
 * - The oracle sees the question, the recent-events window and where the workbench is; it reads
 *   files itself if it needs more. It never talks to the running session.
 * - A failure is printed, never thrown: a side question must not be able to hurt the run.
 * - Under `--budget` an aside is one more step of the task: capped at what is left, and not asked
 *   at all once the budget is spent (its cost counts toward the task, see `task-spend.ts`).
 */
import { join } from 'node:path';
import { oracle } from '../../agents/roles.js';
import type { Workbench } from '../../agents/workbench.js';
import type { EnvMap } from '../../config/paths.js';
import type { EventSink } from '../../runtime/events.js';
import { Runtime } from '../../runtime/runtime.js';
import type { SandboxPolicy } from '../../runtime/sandbox/policy.js';
import { ASIDE_RUN_DIR } from '../../runtime/task-spend.js';
import { budgetedRunner, type TaskBudget } from '../../workflow/budget.js';
import { neutralise, oneLine, wrap } from '../terminal/terminal-text.js';

export interface AsidePaint {
  magenta(text: string): string;
  dim(text: string): string;
  red(text: string): string;
}

export interface AsideOptions {
  readonly workspace: string;
  /** The main run directory; the oracle's own lives in its `aside/` subdirectory. */
  readonly runDir: string;
  readonly workbench: Workbench | undefined;
  /** The main run's sandbox policy (its `--no-sandbox` holds for the oracle too); default sandboxed. */
  readonly sandbox?: SandboxPolicy;
  readonly env?: EnvMap;
  /** The recent-events window at the moment of asking, oldest first. */
  readonly recent: () => string[];
  readonly print: (lines: string[]) => void;
  readonly width: () => number;
  readonly paint: AsidePaint;
  /** With `-v`: the oracle's own events. */
  readonly onEvent?: EventSink;
  /** The task's `--budget`, when it has one. */
  readonly budget?: TaskBudget;
}

/** The step name of every aside in the aside manifest. */
export const ASIDE_STEP = 'aside';

export function asidePrompt(
  question: string,
  recent: readonly string[],
  workbench: Workbench | undefined,
): string {
  const where = workbench
    ? `The run's workbench is ${workbench.root} (notes/ holds the brief, the goal and the Q&A log).`
    : 'This run has no workbench.';
  return [
    'Someone watching a long-running agent asks you a side question. Answer it briefly from what you',
    'can see; do not change anything.',
    '',
    `Question: ${question}`,
    '',
    `Recent events of the run (oldest first):\n${recent.length > 0 ? recent.join('\n') : '(none yet)'}`,
    '',
    where,
  ].join('\n');
}

/** Ask the oracle and print its answer (or why there is none). Never throws. */
export async function answerAside(question: string, options: AsideOptions): Promise<void> {
  const { paint, print } = options;
  let runtime: Runtime | undefined;
  try {
    runtime = new Runtime({
      workspace: options.workspace,
      runDir: join(options.runDir, ASIDE_RUN_DIR),
      endpointHistoryDir: options.runDir,
      resilience: false,
      ...(options.sandbox ? { sandbox: options.sandbox } : {}),
      ...(options.env ? { env: options.env } : {}),
      ...(options.workbench?.external ? { addDirs: [options.workbench.root] } : {}),
    });
    const runner = options.budget ? budgetedRunner(runtime, options.budget) : runtime;
    const result = await runner.run(
      oracle(options.workbench ? { workbench: options.workbench } : {}),
      asidePrompt(question, options.recent(), options.workbench),
      { stepName: ASIDE_STEP, ...(options.onEvent ? { onEvent: options.onEvent } : {}) },
    );
    if (!result.ok) throw new Error(result.error ?? 'the oracle did not finish');
    const answer = neutralise(result.text).trim();
    print([
      '',
      paint.magenta(`# aside: ${oneLine(question)}`),
      ...(answer ? wrap(answer, options.width(), { firstPrefix: '  ' }) : ['  (no answer)']),
      paint.dim(`  ($${result.costUsd.toFixed(4)}; the run was not disturbed)`),
    ]);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    print([paint.red(`# aside failed: ${oneLine(reason)}`)]);
  } finally {
    runtime?.close();
  }
}
