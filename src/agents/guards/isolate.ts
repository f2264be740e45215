/**
 * Isolate guard: when the coordinator dispatches a worker that was marked for isolation, the
 * Agent call gets `isolation: "worktree"` so that worker edits its own git worktree.
 *
 * A hook, not a prompt rule: measured in the reference, the injection took effect even with a
 * system prompt telling the model not to use worktrees. The model's own choice is respected: a
 * call that already sets `isolation` or `cwd` (the two exclude each other) is left alone. A
 * subagent dispatching a marked worker is rewritten the same way as the coordinator.
 */
import type { AgentDefinition, HookCallbackMatcher } from '@anthropic-ai/claude-agent-sdk';
import { wantsIsolation } from '../isolation.js';
import { allowWithInput, PASS, toolUse } from './hook-io.js';

/** Called when an Agent call was rewritten (e.g. to tell the human a worktree is being made). */
export type OnIsolate = (subagentType: string, description: string) => void;

/** The rewritten Agent input, or `undefined` when this call must be left as it is. */
export function isolatedAgentInput(
  toolInput: Record<string, unknown>,
  agents: Readonly<Record<string, AgentDefinition>>,
): Record<string, unknown> | undefined {
  if (toolInput.cwd !== undefined || toolInput.isolation !== undefined) return undefined;
  const type = toolInput.subagent_type;
  if (typeof type !== 'string' || !Object.hasOwn(agents, type) || !wantsIsolation(agents[type]))
    return undefined;
  return { ...toolInput, isolation: 'worktree' };
}

export function isolateGuard(
  agents: Readonly<Record<string, AgentDefinition>>,
  onIsolate?: OnIsolate,
): HookCallbackMatcher {
  return {
    matcher: 'Agent',
    hooks: [
      async (input) => {
        const call = toolUse(input);
        if (call?.toolName !== 'Agent') return PASS;
        const rewritten = isolatedAgentInput(call.toolInput, agents);
        if (!rewritten) return PASS;
        onIsolate?.(String(rewritten.subagent_type), String(rewritten.description ?? ''));
        return allowWithInput(rewritten);
      },
    ],
  };
}
