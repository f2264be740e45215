/**
 * A step: one declared agent run inside a workflow (one `Runtime.run`, one session plus any handoff
 * successors). A step is data; the workflow interprets it and never mutates it, so the same step
 * can run again.
 */
import type { AgentSpec } from '../runtime/agent-spec.js';
import type { StepResult } from '../runtime/step-result.js';
import type { WorkflowContext } from './context.js';

export type Awaitable<T> = T | Promise<T>;

/** Text, or text computed from what earlier steps left in the context. */
export type PromptSource = string | ((ctx: WorkflowContext) => string);

/**
 * What happens when a step finally fails:
 * `stop` ends the workflow (`ctx.failedAt` = the step), `skip` moves on without an output,
 * `continue` moves on with the step's raw text as its output.
 */
export type OnFail = 'stop' | 'skip' | 'continue';

export interface Step {
  /**
   * Stable key: `ctx.outputs`, `ctx.results`, the manifest and cross-process lineage all use it.
   * Renaming a step silently cuts it off from its earlier conversation.
   */
  readonly name: string;
  readonly spec: AgentSpec;
  readonly prompt: PromptSource;
  /** Continue the session of this earlier step (an error if that step has no session). */
  readonly resumeFrom?: string;
  /** With `resumeFrom`: branch off that session instead of continuing it. */
  readonly fork?: boolean;
  /** Extra attempts after a failed or rejected one (0 = a single attempt). */
  readonly retries?: number;
  /**
   * Decides whether an ok attempt passes. Called exactly once per ok attempt (it may have side
   * effects such as freezing a document), never for an attempt that failed. Throw `StepAbort` to
   * stop without using the remaining retries.
   */
  readonly gate?: (result: StepResult, ctx: WorkflowContext) => Awaitable<boolean>;
  readonly onFail?: OnFail;
  /**
   * False skips the step entirely: no run, no result, no output. Throw `StepAbort` to stop the
   * workflow here without running the step (e.g. nothing is left to spend on it).
   */
  readonly when?: (ctx: WorkflowContext) => Awaitable<boolean>;
  /**
   * For a step that works in rounds: which round the next attempt is and how many the task may
   * have. Asked before every attempt; each answer gets a header of its own (`== work · round 2/3`).
   */
  readonly roundOf?: (ctx: WorkflowContext) => { round: number; rounds: number } | undefined;
  /**
   * What to tell the rejected session next. With it, a retry resumes the session the gate just
   * rejected (labelled `#roundN`) instead of starting over (`#retryN`). An empty answer, or an
   * attempt that never got a session, falls back to starting over.
   */
  readonly onReject?: (result: StepResult, ctx: WorkflowContext) => Awaitable<string>;
  /** The prompt used instead of `prompt` when the step continues its own earlier session. */
  readonly resumePrompt?: PromptSource;
  /** What a passed step hands downstream (default: its text). Synchronous by design. */
  readonly reduce?: (result: StepResult, ctx: WorkflowContext) => string;
}

/**
 * Thrown by a gate, a `when` or a runner to stop the step now: no more retries, then `onFail` as for
 * any failure. Its message is the one line that says why and what continues the task.
 */
export class StepAbort extends Error {
  override readonly name = 'StepAbort';
}

/** The prompt for this attempt: the resume prompt when continuing and one is set, else the prompt. */
export function renderPrompt(step: Step, ctx: WorkflowContext, resuming: boolean): string {
  const source = resuming && step.resumePrompt !== undefined ? step.resumePrompt : step.prompt;
  return typeof source === 'function' ? source(ctx) : source;
}

/** The manifest label of an attempt: the name first, then `#roundN` (resuming) or `#retryN` (fresh). */
export function attemptLabel(step: Step, attempt: number): string {
  if (attempt === 0) return step.name;
  return step.onReject ? `${step.name}#round${attempt + 1}` : `${step.name}#retry${attempt}`;
}
