/**
 * SDK option building and the one call to the SDK's `query()`.
 *
 * Invariants (red lines):
 * - This is the only module in flower that imports `query` from the SDK (tests and the mock aside),
 *   so every session flower starts goes through `buildOptions` and gets the same guarantees.
 * - Portable by default: `settingSources: []`, so nothing from the host's `~/.claude` or the
 *   project's `.claude/` (permissions, hooks, model settings) changes what an agent may do. Only a
 *   library caller can pass `portable: false`; no CLI flag reaches it.
 * - The role's instructions are appended to the `claude_code` preset system prompt, never a
 *   replacement: Claude Code's own tool discipline stays in force.
 * - The subprocess environment is flower's defaults, then the parent's, the spec's, and what the
 *   compaction setting writes. The SDK replaces the child's environment wholesale when `env` is given, so the parent's
 *   variables (PATH, HOME, credentials) are always copied in first.
 * - A session given an enabled sandbox policy gets Claude Code's sandbox for its role, and the
 *   spec's `sandboxHooks` are always made (with the sandbox, or with `undefined` without one), so a
 *   guard made there is never left out.
 * - `fork` and `resumeAt` mean nothing without `resume`; they are dropped rather than passed on.
 * - The agent process is started by `spawnAgentProcess`, which ends it when flower ends (even on
 *   SIGKILL) and names an environment variable too large to start it with; a setup's
 *   `beforeSpawn` runs first (where flower starts the process itself, `startsAgentProcess`).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type Options, type Query, query, type SessionStore } from '@anthropic-ai/claude-agent-sdk';
import { CompactPolicy } from '../config/policies.js';
import { packageRoot } from '../version.js';
import { spawnAgentProcess } from './agent-process.js';
import { type AgentSpec, type HookTable, mergeHooks, type SessionSandbox } from './agent-spec.js';
import { fileToolDenials, sdkSandbox } from './sandbox/sdk-settings.js';

/** Where the domain skills shipped with the package live (`plugin/` at the package root). */
export const pluginDirectory: string = join(packageRoot, 'plugin');

/** Everything about one session that is not part of the role itself. */
export interface SessionSetup {
  /** The agent's working directory (the runtime's workspace unless the spec names its own). */
  cwd: string;
  /** Mirror every transcript entry into this store (flushed eagerly, so a kill loses nothing). */
  sessionStore?: SessionStore;
  /** Continue this session. */
  resume?: string;
  /** With `resume`: branch into a new session instead of continuing the old one. */
  fork?: boolean;
  /** With `resume`: roll the conversation back to this message uuid first. */
  resumeAt?: string;
  /** Default true: ignore host and project Claude Code settings. */
  portable?: boolean;
  /** Default true: load the shipped `plugin/` directory when it exists. */
  usePlugin?: boolean;
  /** Hooks to install instead of `spec.hooks` (the runtime passes the spec's merged with its guards). */
  hooks?: HookTable;
  /** Extra directories besides the spec's own (e.g. an external workbench). */
  addDirs?: string[];
  /** The environment the child starts from. Default: this process's environment. */
  baseEnv?: NodeJS.ProcessEnv;
  /** Lets the caller stop the child process. */
  abortController?: AbortController;
  /** Receives the child's stderr (the binary's own diagnostics). */
  stderr?: (data: string) => void;
  /**
   * The sandbox the session's Bash runs in: Claude Code's own, set up from the spec's role
   * (runtime/sandbox/sdk-settings.ts), and what the spec's `sandboxHooks` are made with. Undefined,
   * or a policy that is not enabled: no sandbox.
   */
  sandbox?: SessionSandbox;
  /**
   * Runs just before the agent process starts, with the environment it gets (a resume from a
   * store: the config directory the SDK prepared, see resume-files.ts). Only where flower starts
   * the process itself (`startsAgentProcess`); a throw fails the start.
   */
  beforeSpawn?: (env: Readonly<Record<string, string | undefined>>) => void;
}

/** Whether flower starts the agent process itself (`spawnAgentProcess`: POSIX only). */
export const startsAgentProcess: boolean = process.platform !== 'win32';

/**
 * How long the binary waits for background subagents before killing them. Its own default is 10
 * minutes (`CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS`, measured against the bundled binary: a subagent
 * still running then is killed and no further main turn runs). A worker on a long task routinely
 * runs longer than that, and flower has its own stop paths (interrupt, budget, signals), so the
 * ceiling is raised to a day unless the caller's environment or the spec sets it.
 */
export const BACKGROUND_TASK_WAIT_MS = 24 * 60 * 60 * 1000;
const BACKGROUND_WAIT_VARIABLE = 'CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS';

/**
 * The environment the Claude Code process gets: flower's defaults, then the parent's, then the
 * spec's, then compaction's.
 */
export function childEnvironment(
  spec: AgentSpec,
  baseEnv: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const env: Record<string, string> = { [BACKGROUND_WAIT_VARIABLE]: String(BACKGROUND_TASK_WAIT_MS) };
  for (const [key, value] of Object.entries(baseEnv)) if (value !== undefined) env[key] = value;
  Object.assign(env, spec.env ?? {});
  if (spec.compact) Object.assign(env, new CompactPolicy(spec.compact).env());
  return env;
}

/** Translate a role and a session setup into the SDK's options. Pure apart from one `existsSync`. */
export function buildOptions(spec: AgentSpec, setup: SessionSetup): Options {
  const options: Options = {
    cwd: spec.cwd ?? setup.cwd,
    systemPrompt: { type: 'preset', preset: 'claude_code', append: spec.instructions },
    allowedTools: [...spec.allowedTools],
    permissionMode: spec.permissionMode,
    settingSources: setup.portable === false ? ['project'] : [],
    env: childEnvironment(spec, setup.baseEnv),
  };
  if (spec.disallowedTools?.length) options.disallowedTools = [...spec.disallowedTools];
  if ((setup.usePlugin ?? true) && existsSync(pluginDirectory)) {
    options.plugins = [{ type: 'local', path: pluginDirectory }];
  }
  const addDirs = [...(spec.addDirs ?? []), ...(setup.addDirs ?? [])];
  if (addDirs.length > 0) options.additionalDirectories = [...new Set(addDirs)];
  if (setup.sessionStore) {
    options.sessionStore = setup.sessionStore;
    options.sessionStoreFlush = 'eager';
  }
  if (spec.model) options.model = spec.model;
  if (spec.effort) options.effort = spec.effort;
  if (spec.maxTurns !== undefined) options.maxTurns = spec.maxTurns;
  if (spec.maxBudgetUsd !== undefined) options.maxBudgetUsd = spec.maxBudgetUsd;
  if (spec.agents && Object.keys(spec.agents).length > 0) options.agents = spec.agents;
  if (spec.mcpServers && Object.keys(spec.mcpServers).length > 0) options.mcpServers = spec.mcpServers;
  const sandbox = setup.sandbox?.policy.enabled ? setup.sandbox : undefined;
  if (sandbox) {
    // Stryker disable next-line StringLiteral: sdkSandbox singles out 'read-only' only, so any other role reads as 'worker'
    options.sandbox = sdkSandbox(spec.sandboxRole ?? 'worker', sandbox.policy, sandbox.places, sandbox.env);
    options.settings = { permissions: { deny: fileToolDenials(sandbox.places) } }; // the sandbox covers Bash only
  }
  const hooks = mergeHooks(setup.hooks ?? spec.hooks, spec.sandboxHooks?.(sandbox));
  if (Object.keys(hooks).length > 0) options.hooks = hooks;
  if (setup.resume) {
    options.resume = setup.resume;
    if (setup.fork) options.forkSession = true;
    if (setup.resumeAt) options.resumeSessionAt = setup.resumeAt;
  }
  if (setup.abortController) options.abortController = setup.abortController;
  if (setup.stderr) options.stderr = setup.stderr;
  if (startsAgentProcess) {
    // The agent must not outlive flower (see agent-process.ts).
    const { stderr: onStderr, beforeSpawn } = setup;
    options.spawnClaudeCodeProcess = (spawnOptions) => {
      beforeSpawn?.(spawnOptions.env);
      return spawnAgentProcess(spawnOptions, onStderr ? { onStderr } : {});
    };
    // What the SDK's own spawn does with MCP server settings, said explicitly: left unset with a
    // spawner of our own, the SDK prints a deprecation warning to the user's terminal.
    options.mcpServersDelivery = 'argv';
  }
  return options;
}

/** Start one SDK query. The returned iterator streams the session's messages. */
export function startQuery(prompt: string, options: Options): Query {
  return query({ prompt, options });
}
