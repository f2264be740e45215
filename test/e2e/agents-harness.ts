/**
 * Shared set-up for the agents e2e tests (roles, guards, human channel): a fresh workspace, the
 * mock model, and one real SDK query (real Claude Code binary) built from an AgentSpec by
 * `runtime/options` — the same path every flower session takes. Only the model is scripted.
 */
import type { SDKMessage } from '@anthropic-ai/claude-agent-sdk';
import type { AgentSpec, SessionSandbox } from '../../src/runtime/agent-spec.js';
import { buildOptions, startQuery } from '../../src/runtime/options.js';
import { type MockModel, mockModelEnv, type RecordedRequest } from '../../src/testing/index.js';
import { tempDir } from '../support/scratch.js';

export { cleanUp, startMock, tempDir } from '../support/scratch.js';

export interface Outcome {
  messages: SDKMessage[];
  thrown: unknown;
}

/** Runs `spec` once on `prompt` in `workspace` against `server`, collecting every message. */
export async function runSpec(
  server: MockModel,
  spec: AgentSpec,
  workspace: string,
  prompt = 'Do the scripted thing.',
  {
    usePlugin = false,
    extraEnv,
    sandbox,
  }: {
    usePlugin?: boolean;
    extraEnv?: Record<string, string>;
    /** The session's sandbox, made from the environment the session gets. */
    sandbox?: (env: Record<string, string>) => SessionSandbox;
  } = {},
): Promise<Outcome> {
  const baseEnv = mockModelEnv(server, {
    configDir: tempDir('flower-config-'),
    ...(extraEnv ? { extra: extraEnv } : {}),
  });
  const options = buildOptions(spec, {
    cwd: workspace,
    usePlugin,
    baseEnv,
    ...(sandbox ? { sandbox: sandbox(baseEnv) } : {}),
  });
  const preamble = spec.sessionPreamble?.();
  const messages: SDKMessage[] = [];
  try {
    for await (const message of startQuery(preamble ? `${preamble}\n\n${prompt}` : prompt, options)) {
      messages.push(message);
    }
    return { messages, thrown: undefined };
  } catch (error) {
    return { messages, thrown: error };
  }
}

/** Every tool_result block the request carries, by the id of the tool_use it answers. */
export function allToolResults(request: RecordedRequest | undefined): Map<string, string> {
  const results = new Map<string, string>();
  for (const message of request?.body?.messages ?? []) {
    if (typeof message.content === 'string') continue;
    for (const block of message.content) {
      if (block.type !== 'tool_result') continue;
      const content = block.content;
      const text =
        typeof content === 'string'
          ? content
          : Array.isArray(content)
            ? content.map((part: { text?: string }) => part.text ?? '').join('')
            : '';
      results.set(String(block.tool_use_id), text);
    }
  }
  return results;
}

/** The result text for the tool call with this id, as the model finally saw it. */
export function resultFor(server: MockModel, toolUseId: string): string | undefined {
  for (const request of [...server.messageRequests()].reverse()) {
    const text = allToolResults(request).get(toolUseId);
    if (text !== undefined) return text;
  }
  return undefined;
}

/** A scripted Agent call that runs the subagent in the foreground (one result per query). */
export function dispatch(
  subagentType: string,
  prompt: string,
  id: string,
  extra: Record<string, unknown> = {},
) {
  return {
    toolUses: [
      {
        name: 'Agent',
        id,
        input: {
          subagent_type: subagentType,
          description: `run ${subagentType}`,
          prompt,
          run_in_background: false,
          ...extra,
        },
      },
    ],
  };
}
