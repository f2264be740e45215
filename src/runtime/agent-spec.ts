/**
 * `AgentSpec`: everything that defines one main-thread agent (a role), as plain data.
 *
 * Invariants:
 * - This is a description, not behaviour (`mergeHooks` aside: combining two hook tables is part of
 *   describing one). The role factories in `agents/` produce specs;
 *   `runtime/options` turns a spec into SDK options. Nothing here touches the SDK at run time,
 *   so the type lives below `agents/` and both sides can import it.
 * - `instructions` are *appended* to Claude Code's `claude_code` system prompt preset, never a
 *   replacement: the native tool discipline stays in force and our rules add to it.
 * - `allowedTools` is the list of tools that run without an approval prompt. It is NOT an
 *   exclusive whitelist (the model can still call other tools); exclusivity is enforced by the
 *   guard hooks that the role factories put into `hooks`.
 * - Never use `disallowedTools` to keep the coordinator's hands off Write/Bash: the setting is
 *   session-wide and also disables those tools inside subagents ("... is disabled for this
 *   session, in subagents as well as here").
 */
import type {
  AgentDefinition,
  EffortLevel,
  HookCallbackMatcher,
  HookEvent,
  McpServerConfig,
  PermissionMode,
} from '@anthropic-ai/claude-agent-sdk';
import type { EnvMap } from '../config/paths.js';
import type { SandboxPlaces } from './sandbox/places.js';
import type { SandboxPolicy, SandboxRole } from './sandbox/policy.js';

/** Hook callbacks per event, in the shape the SDK's `hooks` option takes. */
export type HookTable = Partial<Record<HookEvent, HookCallbackMatcher[]>>;

/** How Claude Code's own context compaction is configured for a session. */
export interface CompactSetting {
  /**
   * `auto`: the harness compacts at its own threshold (window − ~33k tokens).
   * `no-summary`: automatic compaction off (flower's handoff replaces it); `/compact` still works.
   * `off`: every form of compaction off.
   */
  mode: 'auto' | 'no-summary' | 'off';
  /** Context window the harness should assume, in tokens (the binary clamps it to 100k–1M). */
  window?: number;
}

export interface AgentSpec {
  /** Role name: the default step name and how guard messages refer to this agent. */
  name: string;
  /**
   * What kind of agent this is (`coordinator`, `judge`, `clarifier`, …), for telling a person who
   * is speaking; the role factories set it, and `name` stands in when it is absent. A judge is
   * still a judge when its `name` is a label such as `work:verdict`.
   */
  role?: string;
  /** Rule text appended after the `claude_code` system prompt preset. May be empty. */
  instructions: string;
  /** Tools that run without an approval prompt (not exclusive — see the module header). */
  allowedTools: string[];
  /** Tools removed for the whole session, subagents included. Rarely what you want. */
  disallowedTools?: string[];
  /** Permission mode for the main thread. `bypassPermissions` is refused when running as root. */
  permissionMode: PermissionMode;
  /** Model alias or id; undefined = the binary's default (from the environment). */
  model?: string;
  /** Reasoning effort for the main thread. */
  effort?: EffortLevel;
  /** Turn cap for one query; undefined = unlimited. Each clarifying question costs a turn. */
  maxTurns?: number;
  /** Dollar cap for one query; undefined = unlimited. */
  maxBudgetUsd?: number;
  /** Subagents the main thread may dispatch with the `Agent` tool, by `subagent_type` name. */
  agents?: Record<string, AgentDefinition>;
  /** MCP servers (including in-process ones such as the human channel), keyed by server name. */
  mcpServers?: Record<string, McpServerConfig>;
  /** Hook callbacks, guards included. Merged by concatenation per event; order is preserved. */
  hooks?: HookTable;
  /** Extra directories the agent may read and write besides `cwd` (e.g. an external workbench). */
  addDirs?: string[];
  /** Extra environment variables for the Claude Code process. */
  env?: Record<string, string>;
  /**
   * Which sandbox the session's Bash runs in (runtime/sandbox/policy.ts): `read-only` for the roles
   * that only look, `worker` for a session whose subagents work (the coordinator's: its own main
   * thread is walled further by a hook). Undefined: `worker`.
   */
  sandboxRole?: SandboxRole;
  /** Working directory; undefined = the runtime's workspace. */
  cwd?: string;
  /** Compaction setting; undefined lets the runtime choose (it turns auto-compact off for handoff). */
  compact?: CompactSetting;
  /**
   * Text placed before the prompt in the FIRST user message of each new session (never on resume),
   * e.g. the workbench index. Called when the session starts so the text is fresh. Kept out of the
   * system prompt on purpose: a changing system prompt breaks the prompt cache on every turn.
   */
  sessionPreamble?: () => string;
  /**
   * Hooks that need the session's sandbox (its policy and places), made when the session starts:
   * `undefined` when the session runs without the sandbox (`--no-sandbox`, or a library caller that
   * gives none). Added after `hooks`. The coordinator's delegate guard is made here, because it runs
   * the coordinator's glances itself inside the read-only wall drawn around these places.
   */
  sandboxHooks?: (sandbox: SessionSandbox | undefined) => HookTable;
}

/** The sandbox a session runs in: what the runtime knows and a role's hooks may need. */
export interface SessionSandbox {
  readonly policy: SandboxPolicy;
  readonly places: SandboxPlaces;
  /** The environment the session's commands start from (secret variables are removed from it). */
  readonly env: EnvMap;
}

/**
 * Combining hook tables: matchers are concatenated per event, in argument order, without removing
 * duplicates (two identical guards both run; order is the caller's decision).
 */
export function mergeHooks(...tables: (HookTable | undefined)[]): HookTable {
  const merged: HookTable = {};
  for (const table of tables) {
    if (!table) continue;
    for (const [event, matchers] of Object.entries(table) as [
      keyof HookTable,
      HookTable[keyof HookTable],
    ][]) {
      if (!matchers || matchers.length === 0) continue;
      merged[event] = [...(merged[event] ?? []), ...matchers];
    }
  }
  return merged;
}
