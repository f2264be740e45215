/**
 * Dispatch guard: an `Agent` call may start only a worker the role declared.
 *
 * Seen (issue 19, observation 4): Claude Code offers built-in subagent types besides the declared
 * ones (`general-purpose`, `Explore`, `Plan`, `statusline-setup`, `claude`, …) and `fork`, a copy of
 * the caller with its whole conversation. A coordinator that dispatched `fork` and `general-purpose`
 * had both write into the main workspace, past `--isolate` (the isolate guard rewrites only declared,
 * marked workers), and the fork cost about 5× the input tokens of a declared worker. The declared
 * workers are the only ones flower shaped (prompt, tools, reporting rules, isolation), so the rule is
 * an allow-list: a built-in added by a later binary is refused without a change here.
 *
 * Invariants:
 * - Refused on every thread, subagents included: a worker given the Agent tool must not reach past
 *   the declared set either.
 * - An omitted `subagent_type` is refused: the schema marks it optional and the binary then starts
 *   `general-purpose` (read in the bundled binary: `subagent_type ?? "general-purpose"`).
 * - A name is allowed only when it equals a declared name exactly. The binary also resolves near
 *   misses (case, spaces, `-` and `_` ignored), so an inexact name could land on a built-in; the
 *   refusal names the declared workers, and the model retries with the exact one.
 * - `fork` is never allowed, even when declared: the binary turns any name that normalises to
 *   "fork" into a fork before it looks at the declared agents. `coordinator()` refuses such a name.
 * - The tool is `Agent` in this SDK; `Task` is its older name, which the binary still accepts as an
 *   alias, so both are matched.
 */
import type { HookCallbackMatcher } from '@anthropic-ai/claude-agent-sdk';
import { toolMatcher } from '../tools.js';
import { deny, PASS, toolUse } from './hook-io.js';

/** The tool that starts a subagent, under its current and its older name. */
export const DISPATCH_TOOLS = ['Agent', 'Task'] as const;

/** What the binary starts when a call names no subagent type. */
export const DEFAULT_SUBAGENT_TYPE = 'general-purpose';

/** The binary's name matching: case, white space, dashes and underscores do not count. */
export function normalisedAgentName(name: string): string {
  return name.toLowerCase().replace(/[\p{White_Space}\p{Pd}_]+/gu, '');
}

/** True for a name the binary would run as a fork of the caller, whatever was declared. */
export function isForkName(name: string): boolean {
  return normalisedAgentName(name) === 'fork';
}

/** The names an Agent call may use: the declared ones, minus any the binary would run as a fork. */
export function dispatchableNames(declared: Iterable<string>): string[] {
  return [...declared].filter((name) => !isForkName(name));
}

/**
 * The refusal for this `subagent_type` (`undefined` when omitted), or `undefined` when the call
 * names a declared worker and may go ahead.
 */
export function dispatchRefusal(subagentType: unknown, declared: readonly string[]): string | undefined {
  if (typeof subagentType === 'string' && declared.includes(subagentType)) return undefined;
  const asked =
    subagentType === undefined
      ? `An Agent call without subagent_type starts "${DEFAULT_SUBAGENT_TYPE}", which is not declared here.`
      : typeof subagentType === 'string' && isForkName(subagentType)
        ? `"${subagentType}" would start a copy of this whole conversation, not a worker.`
        : `"${String(subagentType)}" is not a declared worker.`;
  if (declared.length === 0) {
    return (
      `${asked} This role has no workers to dispatch, so the Agent tool cannot start anything. ` +
      'Do what your own tools allow and put the rest in your reply.'
    );
  }
  const names = declared.map((name) => `"${name}"`).join(', ');
  return (
    `${asked} Only the declared workers can be dispatched: ${names}. ` +
    'Call Agent again with subagent_type set to one of these names exactly.'
  );
}

/** A PreToolUse matcher that refuses every Agent call not naming one of `declared`. */
export function dispatchGuard(declared: Iterable<string>): HookCallbackMatcher {
  const names = dispatchableNames(declared);
  const tools: readonly string[] = DISPATCH_TOOLS;
  return {
    matcher: toolMatcher(DISPATCH_TOOLS),
    hooks: [
      async (input) => {
        const call = toolUse(input);
        if (!call || !tools.includes(call.toolName)) return PASS;
        const refusal = dispatchRefusal(call.toolInput.subagent_type, names);
        return refusal === undefined ? PASS : deny(refusal);
      },
    ],
  };
}
