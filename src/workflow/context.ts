/**
 * The state a workflow run shares between its steps.
 *
 * Invariants:
 * - `outputs[name]` is what a finished step hands downstream: written when the step passes
 *   (its `reduce`, else its text) or when it fails with `onFail: 'continue'` (its raw text). It is
 *   never written for a skipped (`when` false) or a failed-and-skipped step, so downstream code
 *   notices instead of reading stale text.
 * - `results` holds every step that ran, pass or fail; `sessions` every step that got a session.
 * - A workflow run succeeded when `failedAt` is unset, not when the last step produced text.
 * - Running the same workflow again reuses the same context object: keys from the previous run
 *   (including `failedAt`) remain unless the caller passes a fresh context.
 */

import type { CheckRun } from '../checks/runner.js';
import type { EventSink } from '../runtime/events.js';
import type { Lineage } from '../runtime/lineage.js';
import type { StepResult } from '../runtime/step-result.js';
import type { Brief } from './brief.js';
import type { Goal } from './goal.js';
import type { StepRunner } from './runner.js';
import type { Verdict } from './verdict.js';

export interface WorkflowContext {
  /** Step name → what the step handed downstream. */
  outputs: Record<string, string>;
  /** Step name → the result of its last attempt. */
  results: Record<string, StepResult>;
  /** Step name → the session it ran in (poured in from lineage in continuous mode). */
  sessions: Record<string, string>;
  /** Free-form values supplied by the caller for prompts and gates. */
  data: Record<string, unknown>;
  /** The runner of the current run, so a gate can run an agent of its own (the judge). */
  runtime?: StepRunner;
  /** The current run's event sink, for gates that report (e.g. the goal's triage, check results). */
  onEvent?: EventSink;
  /** Cross-process step → session record (continuous mode only). */
  lineage?: Lineage;
  /** How many times this workspace has been woken (1 on the first run). */
  woke?: number;
  /** Why a gate stopped the step without retrying (StepAbort message). */
  aborted?: string;
  /** The step at which the workflow stopped. */
  failedAt?: string;
  /** The brief, once clarified or loaded. */
  brief?: Brief;
  /** Brief sections the clarifier left empty in its last reply. */
  briefMissing?: string[];
  /** The goal, once set or loaded. */
  goal?: Goal;
  /** The judge's latest ruling. */
  verdict?: Verdict;
  /** How many verdict rounds have been judged against the current goal (earlier processes included). */
  goalRounds?: number;
  /** The host checks of the latest judged round. */
  checkRuns?: CheckRun[];
  /** Goal items a human (or nobody, unattended) accepted as unverifiable here: reported, never proven. */
  assumptions?: string[];
}

/** A context with empty tables, optionally seeded by the caller. */
export function newContext(seed: Partial<WorkflowContext> = {}): WorkflowContext {
  return { outputs: {}, results: {}, sessions: {}, data: {}, ...seed };
}
