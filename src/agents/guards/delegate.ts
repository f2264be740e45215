/**
 * Delegate guard: the coordinator decides and dispatches; it does not do the hands-on work.
 *
 * On the main thread, Write/Edit/NotebookEdit and any Bash command that is not a glance are denied
 * with directions to dispatch a worker instead. Subagent calls (hook input with `agent_id`) pass.
 *
 * Invariant: "may the coordinator run this itself" is decided by `isEphemeral`, the same predicate
 * the session store uses to expire stale results on resume. A command allowed here but not expired
 * would leave stale state in the context; one expired but not allowed would force a whole subagent
 * (~4k tokens of start-up) for an `ls`. One predicate, no copy.
 *
 * Why a hook and not `disallowedTools`: that setting is session-wide and would disable the same
 * tools inside the workers as well.
 *
 * Claude Code runs Bash-matcher hooks for its deferred Monitor tool too (the hook input names
 * Bash), so a command started through Monitor meets the same check (verified with the binary).
 */
import type { HookCallbackMatcher } from '@anthropic-ai/claude-agent-sdk';
import { isEphemeral } from '../../store/glance.js';
import { HANDS_ON, toolMatcher } from '../tools.js';
import { deny, onMainThread, PASS, toolUse } from './hook-io.js';

export interface DelegateGuardOptions {
  /** Let glance-only Bash (`isEphemeral`) run on the main thread. */
  allowGlance?: boolean;
  /** Where workers should put long output, as the model should see it. */
  artifactsPath?: string;
}

/** The denial text for the coordinator reaching for `tool`. */
export function delegateDenial(tool: string, artifactsPath = '.flower/artifacts'): string {
  return (
    `The coordinator does not use ${tool} itself. Dispatch a worker with the Agent tool: state the goal ` +
    `and how to check it is met, and ask it to write any long output into ${artifactsPath}/ and reply with ` +
    'only the paths and its conclusion.'
  );
}

/** True when the coordinator's main thread may make this call itself. */
export function coordinatorMayRun(
  toolName: string,
  toolInput: Record<string, unknown>,
  allowGlance: boolean,
): boolean {
  if (!(HANDS_ON as readonly string[]).includes(toolName)) return true;
  if (toolName !== 'Bash' || !allowGlance) return false;
  const command = toolInput.command;
  return typeof command === 'string' && isEphemeral(command);
}

/** A PreToolUse matcher enforcing the coordinator/worker split. */
export function delegateGuard(options: DelegateGuardOptions = {}): HookCallbackMatcher {
  const allowGlance = options.allowGlance ?? false;
  return {
    matcher: toolMatcher(HANDS_ON),
    hooks: [
      async (input) => {
        const call = toolUse(input);
        if (!call || !onMainThread(input)) return PASS;
        if (coordinatorMayRun(call.toolName, call.toolInput, allowGlance)) return PASS;
        return deny(delegateDenial(call.toolName, options.artifactsPath));
      },
    ],
  };
}
