/**
 * flower's public library API (`import { ... } from 'flower-agent'`), chosen on purpose (issue 24):
 * what a library user composes a run from and reads back, as the README's Library section shows it.
 * It follows the reference's public surface (the runtime, steps and workflows, the roles and their
 * rules, the hooks, the workbench, the documents, the session stores and their policies,
 * resilience, events and the human channel, lineage) plus what flower added that a user drives
 * from code (the PostgreSQL store, shared tasks). The types of every exported function's and
 * class's options are exported beside it. Everything else is internal and may change.
 *
 * Invariant: test/unit/architecture/public-api.test.ts holds the list of names and their kinds;
 * a name added or dropped here fails it until the snapshot is updated on purpose. The mock model
 * for tests is a separate entry point: `flower-agent/testing`.
 */

// Roles and their rules, the guards (hooks), the workbench and the human channel.
export { type DelegateGuardOptions, delegateGuard } from './agents/guards/delegate.js';
export { dispatchGuard } from './agents/guards/dispatch.js';
export { indexGuard } from './agents/guards/index-refresh.js';
export { isolateGuard, type OnIsolate } from './agents/guards/isolate.js';
export { type SpillPolicy, spillGuard } from './agents/guards/spill.js';
export { whitelistGuard } from './agents/guards/whitelist.js';
export { workbenchHooks } from './agents/guards/workbench-hooks.js';
export type { Ask, AskState } from './agents/human/ask.js';
export { type ChannelTexts, HumanChannel, type HumanChannelOptions } from './agents/human/channel.js';
export { markIsolated, wantsIsolation } from './agents/isolation.js';
export {
  type ClarifierOptions,
  type CoordinatorOptions,
  clarifier,
  coordinator,
  type JudgeOptions,
  judge,
  oracle,
  type RoleOptions,
  type WorkerOptions,
  worker,
} from './agents/roles.js';
export {
  CLARIFIER_RULES,
  COORDINATOR_RULES,
  JUDGE_RULES,
  ORACLE_RULES,
  WORKER_RULES,
} from './agents/rules.js';
export { IsolationError, Workbench, type WorkbenchOptions } from './agents/workbench.js';
// Configuration: the .env lookup chain, credentials, the probe, reachability, the context window.
export { checkCredentials } from './config/credentials.js';
export { loadEnvironment } from './config/env-chain.js';
export {
  CompactPolicy,
  type CompactPolicyOptions,
  HandoffPolicy,
  type HandoffPolicyOptions,
} from './config/policies.js';
export { type ProbeResult, type ProbeVerdict, probeCredentials } from './config/probe.js';
export { checkReachable, endpointOf, type Reachability } from './config/reachability.js';
export { StoreUrlError } from './config/store-url.js';
export { defaultWindow } from './config/window.js';
// The runtime: one agent spec run as one step, with resilience, handoff, manifest and lineage.
export { type AgentSpec, type CompactSetting, type HookTable, mergeHooks } from './runtime/agent-spec.js';
export {
  type DispatchPayload,
  describeEvent,
  type ErrorPayload,
  type EventSink,
  type FlowerEvent,
  type FlowerEventKind,
  type HandoffPayload,
  type HandoffSections,
  normalize,
  type ResetPayload,
  type ResultPayload,
  type RetryPayload,
  type StepPayload,
  type SystemPayload,
  type TaskPayload,
  type ToolCallPayload,
  type ToolResultPayload,
} from './runtime/events.js';
export { HandoffDocument } from './runtime/handoff-document.js';
export { Lineage, type LineageRecord } from './runtime/lineage.js';
export { readManifest } from './runtime/manifest.js';
export { buildOptions, type SessionSetup } from './runtime/options.js';
export {
  classifyFailure,
  defaultResiliencePolicy,
  type FailureKind,
  type ResiliencePolicy,
  resiliencePolicy,
} from './runtime/resilience.js';
export { INTERRUPT_NOTE, type RunOptions, Runtime, type RuntimeOptions } from './runtime/runtime.js';
// Task state shared through PostgreSQL: loaded only when openSharedTask is called.
export { openSharedTask } from './runtime/shared/open.js';
export type { PullReport } from './runtime/shared/pull.js';
export type { SharedTask, SharedTaskOptions } from './runtime/shared/shared-task.js';
export type { RuntimeSharing } from './runtime/shared/sharing.js';
export {
  CONTEXT_FULL_HANDOFF,
  INTERRUPTED_BY_HUMAN,
  KILLED_BY_SIGNAL,
  type ManifestRow,
  type StepResult,
} from './runtime/step-result.js';
// The session store: backends keep entries, the rewriting layer decides what a resume is fed.
export type { SessionBackend, StoredTranscript, UnreadableRow } from './store/backend.js';
export { defaultEphemeralPolicy, type EphemeralPolicy } from './store/expire.js';
export { isEphemeral } from './store/glance.js';
export { describeLoadReport, type LoadReport } from './store/load-report.js';
export {
  type OpenedSessionStore,
  type OpenSessionStoreOptions,
  openSessionStore,
} from './store/open-session-store.js';
// Types only: the PostgreSQL backend (and pg) load when openSessionStore is given a postgres:// URL.
export type { PostgresPoolPolicy } from './store/postgres/connection.js';
export { PostgresStoreError } from './store/postgres/errors.js';
export type { PostgresSessionStore, PostgresSessionStoreOptions } from './store/postgres/session-store.js';
export { defaultPrunePolicy, type PrunePolicy } from './store/prune.js';
export type { RewriteOptions } from './store/rewrite.js';
export { RewritingSessionStore, type RewritingSessionStoreOptions } from './store/rewriting-store.js';
export { projectKeyFor } from './store/session-key.js';
export { type LockHolder, TaskBusyError } from './store/shared/task-lock-types.js';
export {
  SessionStoreError,
  SqliteSessionStore,
  type SqliteSessionStoreOptions,
} from './store/sqlite-session-store.js';
export { defaultTrimPolicy, type TrimPolicy } from './store/trim.js';
export { packageVersion } from './version.js';
// Steps, workflows, the brief / goal / verdict documents and the starter flow.
export { Brief } from './workflow/brief.js';
export { CLARIFY_RESUME, type ClarifyStepOptions, clarifyStep } from './workflow/clarify-step.js';
export type { WorkflowContext } from './workflow/context.js';
export { type ChecklistItem, Goal, type ItemKind } from './workflow/goal.js';
export { type GoalStepOptions, goalStep } from './workflow/goal-step.js';
export type { StepRunner, StepRunOptions } from './workflow/runner.js';
export {
  StarterError,
  type StarterFlowOptions,
  type StarterLocation,
  starterFlow,
  type WakeState,
  wakeState,
} from './workflow/starter.js';
export { type Awaitable, type OnFail, type PromptSource, type Step, StepAbort } from './workflow/step.js';
export { Verdict, type VerdictState } from './workflow/verdict.js';
export { type WithGoalOptions, withGoal } from './workflow/with-goal.js';
export {
  GATE_REJECTED,
  Workflow,
  type WorkflowFactory,
  type WorkflowLocation,
  type WorkflowOptions,
  type WorkflowRunOptions,
} from './workflow/workflow.js';
