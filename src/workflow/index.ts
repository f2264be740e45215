/**
 * The workflow layer's public surface, re-exported by the package root.
 */
export { BRIEF_HEADINGS, Brief, type BriefSection } from './brief.js';
export { CLARIFY_RESUME, CLARIFY_STEP, type ClarifyStepOptions, clarifyStep } from './clarify-step.js';
export { newContext, type WorkflowContext } from './context.js';
export { Goal } from './goal.js';
export { type GoalStepOptions, goalStep, SET_GOAL_STEP, UNVERIFIABLE_CHECKS_EVENT } from './goal-step.js';
export type { StepRunner, StepRunOptions } from './runner.js';
export {
  DEFAULT_WORKER_PROMPT,
  StarterError,
  type StarterFlowOptions,
  type StarterLocation,
  type StarterPaths,
  starterFlow,
  starterPaths,
  startOver,
  WAKE_LABEL,
  type WakeState,
  WORK_STEP,
  wakeState,
} from './starter.js';
export { type Awaitable, type OnFail, type PromptSource, type Step, StepAbort } from './step.js';
export { Verdict, type VerdictState } from './verdict.js';
export { CANNOT_VERIFY_CHOICES, type WithGoalOptions, withGoal } from './with-goal.js';
export {
  GATE_REJECTED,
  Workflow,
  type WorkflowFactory,
  type WorkflowLocation,
  type WorkflowOptions,
  type WorkflowRunOptions,
} from './workflow.js';
