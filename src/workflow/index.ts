/**
 * The workflow layer's public surface, re-exported by the package root.
 */

export { BEQUEST_FILES, leaveBequest } from './bequest-turn.js';
export { BRIEF_HEADINGS, Brief, type BriefSection } from './brief.js';
export { BUDGET_SPENT, budgetedRunner, TaskBudget } from './budget.js';
export { CLARIFY_RESUME, CLARIFY_STEP, type ClarifyStepOptions, clarifyStep } from './clarify-step.js';
export { newContext, type WorkflowContext } from './context.js';
export { type ChecklistItem, Goal, type ItemKind } from './goal.js';
export { type GoalStepOptions, goalStep, SET_GOAL_STEP } from './goal-step.js';
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
export { GOAL_TRIAGE_EVENT, TRIAGE_CHOICES } from './triage.js';
export { Verdict, type VerdictState } from './verdict.js';
export { CANNOT_VERIFY_CHOICES, STALL_CHOICES, type WithGoalOptions, withGoal } from './with-goal.js';
export {
  GATE_REJECTED,
  Workflow,
  type WorkflowFactory,
  type WorkflowLocation,
  type WorkflowOptions,
  type WorkflowRunOptions,
} from './workflow.js';
