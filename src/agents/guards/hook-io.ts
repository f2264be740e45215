/**
 * Small helpers for reading hook inputs and writing hook outputs, so every guard speaks the SDK's
 * hook protocol the same way.
 *
 * "Main thread" means the hook input has no `agent_id`: the SDK sets it only for calls made inside
 * a subagent. The guards wall the main thread and let subagents work.
 */
import type { HookInput, HookJSONOutput } from '@anthropic-ai/claude-agent-sdk';

/** A tool-use hook input narrowed to what the guards read. */
export interface ToolHookInput {
  agentId: string | undefined;
  toolName: string;
  toolInput: Record<string, unknown>;
}

/** The tool-use view of a PreToolUse / PostToolUse input; `undefined` for other events. */
export function toolUse(input: HookInput): ToolHookInput | undefined {
  if (input.hook_event_name !== 'PreToolUse' && input.hook_event_name !== 'PostToolUse') return undefined;
  const toolInput = input.tool_input;
  return {
    agentId: input.agent_id || undefined,
    toolName: input.tool_name,
    toolInput: toolInput && typeof toolInput === 'object' ? (toolInput as Record<string, unknown>) : {},
  };
}

/** True when the call comes from the main thread (no subagent id on the hook input). */
export function onMainThread(input: HookInput): boolean {
  return !input.agent_id;
}

/** No opinion: the call proceeds as it would without this hook. */
export const PASS: HookJSONOutput = {};

/** Refuses a tool call; the model receives `reason` as the call's result. */
export function deny(reason: string): HookJSONOutput {
  return {
    hookSpecificOutput: {
      hookEventName: 'PreToolUse',
      permissionDecision: 'deny',
      permissionDecisionReason: reason,
    },
  };
}

/** Lets a tool call run with a rewritten input. */
export function allowWithInput(updatedInput: Record<string, unknown>): HookJSONOutput {
  return { hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'allow', updatedInput } };
}

/** Replaces a tool's output before the model sees it. */
export function replaceOutput(updatedToolOutput: unknown): HookJSONOutput {
  return { hookSpecificOutput: { hookEventName: 'PostToolUse', updatedToolOutput } };
}
