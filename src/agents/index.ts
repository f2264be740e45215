/**
 * The agents layer: role factories and their rule texts, the guard hooks, the workbench and the
 * human channel. Everything a workflow or a library user composes a run from.
 */

export { mergeHooks } from '../runtime/agent-spec.js';
export { type DelegateGuardOptions, delegateDenial, delegateGuard } from './guards/delegate.js';
export { dispatchGuard, dispatchRefusal } from './guards/dispatch.js';
export { indexGuard } from './guards/index-refresh.js';
export { isolatedAgentInput, isolateGuard, type OnIsolate } from './guards/isolate.js';
export {
  DEFAULT_SPILL_POLICY,
  type SpillPolicy,
  spillGuard,
  spillName,
  spillPointer,
} from './guards/spill.js';
export { whitelistDenial, whitelistGuard } from './guards/whitelist.js';
export { workbenchHooks } from './guards/workbench-hooks.js';
export {
  type Ask,
  type AskEvent,
  type AskState,
  type Mail,
  type MailEvent,
  type QuestionEvent,
  resolveReply,
  waitedSeconds,
} from './human/ask.js';
export {
  AMEND_LABEL,
  type ChannelTexts,
  DEFAULT_CHANNEL_TEXTS,
  HumanChannel,
  type HumanChannelOptions,
} from './human/channel.js';
export { markIsolated, wantsIsolation } from './isolation.js';
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
} from './roles.js';
export {
  BRIEF_SECTIONS,
  CLARIFIER_RULES,
  COORDINATOR_RULES,
  GOAL_SECTIONS,
  JUDGE_RULES,
  ORACLE_RULES,
  VERDICT_OUTCOMES,
  VERDICT_SECTIONS,
  WORKER_RULES,
} from './rules.js';
export {
  BULKY,
  COORDINATOR_TOOLS,
  HANDS_ON,
  READ_TOOLS,
  WEB_TOOLS,
  WORKER_TOOLS,
  WRITE_ONLY,
} from './tools.js';
export {
  IsolationError,
  requireGitRepository,
  Workbench,
  type WorkbenchEntry,
  type WorkbenchOptions,
} from './workbench.js';
