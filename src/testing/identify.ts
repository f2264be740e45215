/**
 * Which agent sent a request: the main thread, a named subagent, or the binary's own side request.
 * Pure, so routing can be unit-tested against recorded request bodies.
 */
import { type MessagesRequestBody, systemText } from './recording.js';
import type { AgentIdentity } from './script.js';

export interface IdentifyInput {
  method: string;
  path: string;
  body: MessagesRequestBody | undefined;
  /** Subagent name → a distinctive piece of its prompt. */
  agentPrompts: Record<string, string>;
}

export function identifyAgent(input: IdentifyInput): AgentIdentity {
  if (input.path === '/v1/messages/count_tokens') return { kind: 'count_tokens' };
  if (input.method !== 'POST' || input.path !== '/v1/messages') return { kind: 'other' };
  const system = systemText(input.body);
  for (const [name, prompt] of Object.entries(input.agentPrompts)) {
    if (prompt !== '' && system.includes(prompt)) return { kind: 'subagent', name };
  }
  return { kind: 'main' };
}
