/**
 * Whitelist guard: a role that was not given a hands-on tool cannot use it on its main thread.
 *
 * Why a hook: `allowedTools` only pre-approves; it does not forbid. Measured in the reference, a
 * judge ran Bash eleven times with no Bash on its list, and a clarifier that was not stopped began
 * writing the code itself. The denial says plainly that the restriction is deliberate, so the
 * model stops looking for another way around it and puts its answer in its reply instead.
 *
 * Never install this together with the delegate guard: the two give contradictory directions.
 */
import type { HookCallbackMatcher } from '@anthropic-ai/claude-agent-sdk';
import { HANDS_ON, toolMatcher } from '../tools.js';
import { deny, onMainThread, PASS, toolUse } from './hook-io.js';

/** The hands-on tools a role with these allowed tools must not use. */
export function bannedHandsOnTools(allowedTools: readonly string[]): string[] {
  return HANDS_ON.filter((tool) => !allowedTools.includes(tool));
}

/** The denial text for `role` reaching for `tool`. */
export function whitelistDenial(role: string, tool: string): string {
  return (
    `${role} has no ${tool} tool. This is intentional, not a missing setting. ` +
    'Put your conclusion in the body of your reply — flower picks it up from there. ' +
    'Do not try other tools or phrasings to get around this.'
  );
}

/**
 * A PreToolUse matcher that denies, on the main thread, every hands-on tool not in `allowedTools`;
 * `undefined` when the role already has them all (nothing to guard).
 */
export function whitelistGuard(
  allowedTools: readonly string[],
  role: string,
): HookCallbackMatcher | undefined {
  const banned = bannedHandsOnTools(allowedTools);
  if (banned.length === 0) return undefined;
  return {
    matcher: toolMatcher(banned),
    hooks: [
      async (input) => {
        const call = toolUse(input);
        if (!call || !onMainThread(input) || !banned.includes(call.toolName)) return PASS;
        return deny(whitelistDenial(role, call.toolName));
      },
    ],
  };
}
