/**
 * flower's public library API (`import { ... } from 'flower-agent'`).
 *
 * The surface is deliberately layered the same way as the source tree: configuration, the session
 * store, the runtime that runs one step, the roles and guards, and the workflows built from steps.
 * The mock model for tests is a separate entry point: `flower-agent/testing`.
 */

// Roles, guards, the workbench and the human channel.
export * from './agents/index.js';
export { BLOCK_BEGIN, BLOCK_END, placeBlock, readBlock } from './bequest/managed-block.js';
// Host-run checks and the bequest's managed block.
export type { CheckLogPolicy } from './checks/capped-log.js';
export {
  type CheckPolicy,
  type CheckPolicyOverrides,
  type CheckRun,
  defaultCheckPolicy,
  runChecks,
} from './checks/runner.js';
export { type CheckSpec, formatCheck, type ItemCheck, readCheck } from './checks/syntax.js';
// Configuration: the .env lookup chain, credentials, the probe, the context window and policies.
export {
  type AtomicWriteOptions,
  writeFileAtomic,
} from './config/atomic-file.js';
export {
  activeCredentialKey,
  CREDENTIAL_KEYS,
  checkCredentials,
  DEFAULT_BASE_URL,
  type DescribedSetting,
  describe as describeSettings,
  maskSecret,
} from './config/credentials.js';
export {
  type DotenvEntry,
  type DotenvPitfall,
  type ParsedDotenv,
  parseDotenv,
} from './config/dotenv-parser.js';
export {
  applyEnvChain,
  chainWarnings,
  type EnvChainContext,
  type EnvChainReport,
  type EnvSetting,
  KNOWN_KEYS,
  type KnownKey,
  loadEnvironment,
  resolveEnvChain,
} from './config/env-chain.js';
export {
  CompactPolicy,
  type CompactPolicyOptions,
  HandoffPolicy,
  type HandoffPolicyOptions,
} from './config/policies.js';
export { type ProbeResult, type ProbeVerdict, probeCredentials } from './config/probe.js';
export { checkReachable, endpointOf, type Reachability } from './config/reachability.js';
export {
  DEFAULT_STORE_SCHEMA,
  isPostgresUrl,
  maskStoreUrl,
  type PostgresTarget,
  parseStoreTarget,
  type SqliteTarget,
  type StoreTarget,
  StoreUrlError,
} from './config/store-url.js';
export { defaultWindow, rememberOverflow, resolveWindow } from './config/window.js';
// The runtime: one agent spec run as one step, with resilience, handoff, manifest and lineage.
export type { AgentSpec, CompactSetting, HookTable } from './runtime/agent-spec.js';
export {
  type DispatchPayload,
  describeEvent,
  type ErrorPayload,
  type EventSink,
  type FlowerEvent,
  type FlowerEventKind,
  type HandoffPayload,
  type HandoffSections,
  type MessageMeta,
  messageMetaOf,
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
export { HandoffDocument, isContextOverflow } from './runtime/handoff-document.js';
export { Lineage, type LineageRecord } from './runtime/lineage.js';
export { readManifest } from './runtime/manifest.js';
export { buildOptions, type SessionSetup } from './runtime/options.js';
export {
  backoffDelay,
  classifyFailure,
  defaultResiliencePolicy,
  type FailureKind,
  type ResiliencePolicy,
  resiliencePolicy,
  waitOnline,
} from './runtime/resilience.js';
export { INTERRUPT_NOTE, type RunOptions, Runtime, type RuntimeOptions } from './runtime/runtime.js';
// Task state shared through PostgreSQL: loaded only when openSharedTask is called.
export { openSharedTask } from './runtime/shared/open.js';
export type { PullOptions, PullReport } from './runtime/shared/pull.js';
export type { SharedTask, SharedTaskOptions } from './runtime/shared/shared-task.js';
export type { RuntimeSharing } from './runtime/shared/sharing.js';
export {
  CONTEXT_FULL_HANDOFF,
  INTERRUPTED_BY_HUMAN,
  KILLED_BY_SIGNAL,
  type ManifestCheck,
  type ManifestRow,
  type RowAnnotations,
  type StepResult,
} from './runtime/step-result.js';
export {
  type HeldTaskLock,
  type LockHolder,
  lockTask,
  TaskBusyError,
  type TaskLocks,
  type TaskRef,
} from './runtime/task-lock.js';
// The session store: backends keep entries, the rewriting layer decides what a resume is fed.
export type { SessionBackend, StoredTranscript, UnreadableRow } from './store/backend.js';
export { totalCostOf } from './store/cost-state.js';
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
export { type RewriteOptions, type RewritePolicies, rewriteForResume } from './store/rewrite.js';
export { RewritingSessionStore, type RewritingSessionStoreOptions } from './store/rewriting-store.js';
export { projectKeyFor } from './store/session-key.js';
export {
  SessionStoreError,
  SqliteSessionStore,
  type SqliteSessionStoreOptions,
} from './store/sqlite-session-store.js';
export { defaultTrimPolicy, type TrimPolicy } from './store/trim.js';
export { packageVersion } from './version.js';
// Steps, workflows, the brief / goal / verdict documents and the starter flow.
export * from './workflow/index.js';
