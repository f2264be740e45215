/**
 * The five roles. Each is built the same way: rule text appended to Claude Code's system prompt, a
 * tool set, and guard hooks that enforce what the text asks.
 *
 * Invariants:
 * - The walls are part of the role, not of the workbench: the coordinator always gets the delegate
 *   guard (made with the session's sandbox, `sandboxHooks`), every other role the whitelist guard —
 *   with or without a workbench. (The reference left a coordinator without a workbench unguarded.)
 *   The two guards are never installed together.
 * - Every role has a sandbox role: the walled ones `read-only`; the coordinator `worker`, since its
 *   workers run in its session; its own commands are walled read-only by the delegate guard.
 * - Every walled role also gets the secret-files guard: Read and Grep cannot open a credential
 *   file on its main thread (the glance rules already keep such files from its Bash).
 * - Every role gets the later-turn guard: a wake-up or cron job set from inside a step never fires,
 *   since the step's query ends with its turn (guards/later-turns.ts).
 * - Every role gets the dispatch guard: an Agent call starts only a declared worker, never a
 *   built-in type or a fork (guards/dispatch.ts). The walled roles declare none, so they start none.
 * - A workbench adds the index guard and the spill guard, and — for the roles that plan (coordinator,
 *   oracle) — its index as the preamble of each new session.
 * - The clarifier and the judge run in permission mode `default`, never `acceptEdits`: an extra
 *   layer of protection for roles that must not write.
 */
import type { AgentDefinition, EffortLevel, PermissionMode } from '@anthropic-ai/claude-agent-sdk';
import type { AgentSpec, CompactSetting, HookTable } from '../runtime/agent-spec.js';
import { mergeHooks } from '../runtime/agent-spec.js';
import { delegateGuard } from './guards/delegate.js';
import { dispatchGuard, isForkName } from './guards/dispatch.js';
import { isolateGuard, type OnIsolate } from './guards/isolate.js';
import { laterTurnGuard } from './guards/later-turns.js';
import { secretFilesGuard } from './guards/secret-files.js';
import type { SpillPolicy } from './guards/spill.js';
import { whitelistGuard } from './guards/whitelist.js';
import { workbenchHooks } from './guards/workbench-hooks.js';
import type { HumanChannel } from './human/channel.js';
import { markIsolated, wantsIsolation } from './isolation.js';
import {
  CLARIFIER_RULES,
  COORDINATOR_RULES,
  JUDGE_CAN_RUN,
  JUDGE_CANNOT_RUN,
  JUDGE_RULES,
  ORACLE_RULES,
  WORKER_RULES,
  withRules,
} from './rules.js';
import { COORDINATOR_TOOLS, READ_TOOLS, WEB_TOOLS, WORKER_TOOLS } from './tools.js';
import type { Workbench } from './workbench.js';

/** Settings every main-thread role accepts. */
export interface RoleOptions {
  /** Role name (also the default step name). */
  name?: string;
  /** Task-specific instructions appended after the role's rules. */
  instructions?: string;
  model?: string;
  effort?: EffortLevel;
  maxTurns?: number;
  maxBudgetUsd?: number;
  /** The shared workbench, when the run has one. */
  workbench?: Workbench;
  /** Spill settings (threshold 0 switches spilling off); used only with a workbench. */
  spill?: Partial<SpillPolicy>;
  /** Extra hooks, run after the role's guards. */
  hooks?: HookTable;
  env?: Record<string, string>;
}

export interface CoordinatorOptions extends RoleOptions {
  /** The workers it may dispatch, by `subagent_type` name. */
  workers: Record<string, AgentDefinition>;
  /** Human channel: adds its ask and inbox tools. */
  channel?: HumanChannel;
  /** Keep Read (default true). */
  canRead?: boolean;
  /** Allow glance-only Bash on the main thread (default true). */
  glance?: boolean;
  permissionMode?: PermissionMode;
  compact?: CompactSetting;
  /** Told whenever an Agent call is rewritten to run in its own worktree. */
  onIsolate?: OnIsolate;
  /** Which commands its main thread may run (default: the glance predicate); a seam for tests. */
  mayGlance?: (command: string) => boolean;
}

export function coordinator(options: CoordinatorOptions): AgentSpec {
  const { workers, channel, workbench } = options;
  const forkNamed = Object.keys(workers).find(isForkName);
  if (forkNamed !== undefined) {
    throw new Error(
      `A worker cannot be called "${forkNamed}": Claude Code runs that name as a copy of the ` +
        "coordinator's whole conversation, not as the worker. Give the worker another name.",
    );
  }
  const canRead = options.canRead ?? true;
  const glance = options.glance ?? true;
  const allowed: string[] = COORDINATOR_TOOLS.filter((tool) => canRead || tool !== 'Read');
  // Pre-approval is session-wide: a worker's tool that needs approval must be approved here, or an
  // unattended worker's call is rejected silently and retried forever (measured in the reference).
  // Bash is safe to approve because the delegate guard still walls the main thread.
  const workerTools = Object.values(workers).flatMap((worker) => worker.tools ?? [...WORKER_TOOLS]);
  if (glance || workerTools.includes('Bash')) allowed.push('Bash');
  if (channel) allowed.push(channel.inboxTool, channel.askTool);
  for (const web of WEB_TOOLS) if (workerTools.includes(web)) allowed.push(web);

  const anyIsolated = Object.values(workers).some((worker) => wantsIsolation(worker));
  const guards: HookTable = {
    PreToolUse: [
      secretFilesGuard(),
      laterTurnGuard(),
      dispatchGuard(Object.keys(workers)),
      ...(anyIsolated ? [isolateGuard(workers, options.onIsolate)] : []),
    ],
  };
  return {
    ...common(options, 'coordinator', COORDINATOR_RULES, 'coordinator'),
    allowedTools: unique(allowed),
    permissionMode: options.permissionMode ?? 'acceptEdits',
    // The session's sandbox is the workers' (the SDK sets one per query); the coordinator's own
    // Bash is walled further by the glance wall, which runs it read-only in flower's bubblewrap.
    sandboxRole: 'worker',
    agents: workers,
    ...(channel ? { mcpServers: channel.mcpServers() } : {}),
    hooks: mergeHooks(guards, workbench && workbenchHooks(workbench, options.spill), options.hooks),
    // Made when the session starts: with a sandbox, the guard runs the allowed glances in the wall.
    sandboxHooks: (sandbox) => ({
      PreToolUse: [
        delegateGuard({
          allowGlance: glance,
          ...(workbench ? { artifactsPath: workbench.show(workbench.artifacts) } : {}),
          ...(sandbox ? { sandbox } : {}),
          ...(options.mayGlance ? { mayGlance: options.mayGlance } : {}),
        }),
      ],
    }),
    ...(workbench ? workbenchReach(workbench) : {}),
    ...(options.compact ? { compact: options.compact } : {}),
  };
}

export interface WorkerOptions {
  /** What the coordinator picks this worker by. */
  description: string;
  /** The worker's own system prompt. */
  prompt: string;
  /** Tools (default: Read, Write, Edit, Bash, Glob, Grep, WebFetch, WebSearch). */
  tools?: string[];
  /** Default `inherit`: split work to save context, not to downgrade the model. */
  model?: string;
  effort?: EffortLevel;
  maxTurns?: number;
  permissionMode?: PermissionMode;
  skills?: string[];
  /** Append the reporting rules (default true). */
  discipline?: boolean;
  /** Dispatch it into its own git worktree (needs a git repository). */
  isolate?: boolean;
}

/** A subagent definition for the coordinator's `workers`. */
export function worker(options: WorkerOptions): AgentDefinition {
  const discipline = options.discipline ?? true;
  const definition: AgentDefinition = {
    description: options.description,
    prompt: discipline ? `${options.prompt}\n\n${WORKER_RULES}`.trim() : options.prompt,
    tools: options.tools ? [...options.tools] : [...WORKER_TOOLS],
    model: options.model ?? 'inherit',
    ...(options.effort ? { effort: options.effort } : {}),
    ...(options.maxTurns !== undefined ? { maxTurns: options.maxTurns } : {}),
    ...(options.permissionMode ? { permissionMode: options.permissionMode } : {}),
    ...(options.skills ? { skills: [...options.skills] } : {}),
  };
  return markIsolated(definition, options.isolate ?? false);
}

export interface ClarifierOptions extends RoleOptions {
  channel: HumanChannel;
  /** Let it read the repository and the web (default true). */
  canRead?: boolean;
}

/**
 * Asks the human until the four-section brief is complete. Leave `maxTurns` unset: every question
 * costs a turn, so a turn cap silently caps the questions.
 */
export function clarifier(options: ClarifierOptions): AgentSpec {
  const canRead = options.canRead ?? true;
  const allowed = [options.channel.askTool, ...(canRead ? [...READ_TOOLS, ...WEB_TOOLS] : [])];
  return walledRole(options, 'clarify', CLARIFIER_RULES, allowed, options.channel, 'clarifier');
}

export interface JudgeOptions extends RoleOptions {
  /** For asking the human when something cannot be verified here. */
  channel?: HumanChannel;
  /** Let it run commands (Bash) to exercise the artifact; it still may not write files. */
  canRun?: boolean;
}

/** Sets goals and rules on rounds of work: achieved / not yet / cannot verify here. */
export function judge(options: JudgeOptions): AgentSpec {
  const canRun = options.canRun ?? false;
  const allowed = [
    ...(options.channel ? [options.channel.askTool] : []),
    ...READ_TOOLS,
    ...(canRun ? ['Bash'] : []),
  ];
  const rules = `${JUDGE_RULES}\n${canRun ? JUDGE_CAN_RUN : JUDGE_CANNOT_RUN}`;
  return walledRole(options, 'judge', rules, allowed, options.channel, 'judge');
}

/** Answers a human's side question about a run; read-only and braked (12 turns, $0.50 by default). */
export function oracle(options: RoleOptions = {}): AgentSpec {
  const spec = walledRole(
    { maxTurns: 12, maxBudgetUsd: 0.5, ...options },
    'aside',
    ORACLE_RULES,
    [...READ_TOOLS],
    undefined,
    'aside',
  );
  return options.workbench ? { ...spec, ...workbenchReach(options.workbench) } : spec;
}

/** A role walled by the whitelist guard: no hands-on tool beyond `allowed`. */
function walledRole(
  options: RoleOptions,
  defaultName: string,
  rules: string,
  allowed: string[],
  channel: HumanChannel | undefined,
  role: string,
): AgentSpec {
  const base = common(options, defaultName, rules, role);
  const wall = whitelistGuard(allowed, base.name);
  const { workbench } = options;
  return {
    ...base,
    allowedTools: unique(allowed),
    permissionMode: 'default',
    sandboxRole: 'read-only',
    ...(channel ? { mcpServers: channel.mcpServers() } : {}),
    hooks: mergeHooks(
      wall && { PreToolUse: [wall, secretFilesGuard()] },
      { PreToolUse: [laterTurnGuard()] },
      { PreToolUse: [dispatchGuard([])] },
      workbench && workbenchHooks(workbench, options.spill),
      options.hooks,
    ),
  };
}

/** The fields shared by every main-thread role. */
function common(
  options: RoleOptions,
  defaultName: string,
  rules: string,
  role: string,
): Omit<AgentSpec, 'allowedTools' | 'permissionMode'> {
  return {
    name: options.name ?? defaultName,
    role,
    instructions: withRules(rules, options.instructions ?? ''),
    ...(options.model ? { model: options.model } : {}),
    ...(options.effort ? { effort: options.effort } : {}),
    ...(options.maxTurns !== undefined ? { maxTurns: options.maxTurns } : {}),
    ...(options.maxBudgetUsd !== undefined ? { maxBudgetUsd: options.maxBudgetUsd } : {}),
    ...(options.env ? { env: { ...options.env } } : {}),
  };
}

/** What a planning role gets from the workbench: its index up front, and access when it is external. */
function workbenchReach(workbench: Workbench): Pick<AgentSpec, 'sessionPreamble' | 'addDirs'> {
  return {
    sessionPreamble: () => {
      workbench.refresh();
      return workbench.promptBlock();
    },
    ...(workbench.external ? { addDirs: [workbench.root] } : {}),
  };
}

function unique(items: string[]): string[] {
  return [...new Set(items)];
}
