/**
 * Which agent sent a request: the main thread, a named subagent, or the binary's own side request.
 *
 * What the binary sends (Claude Code 2.1.332, SDK 0.3.332; see src/testing/README.md):
 * - A subagent's requests carry an `x-claude-code-agent-id` header (a random id per subagent run)
 *   and `cc_is_subagent=true` in the first system block; its system prompt contains the
 *   AgentDefinition's `prompt`, its first user message is the `prompt` the main thread passed to
 *   the Agent tool, and its tool list is the agent's own.
 * - Main-thread requests carry neither, and always offer tools.
 * - Side requests (session title generation; only without CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC)
 *   come without the agent header and with an empty tool list.
 * - Automatic compaction looks exactly like a main-thread (or subagent) turn — same system prompt,
 *   same tools — except for its last user message, which orders a text-only summary. It is told
 *   apart by that instruction and counted as a side request, so it never eats a scripted step.
 *
 * So a subagent's name is found, in order: from the agent id already attributed; from the
 * `agentPrompts` option (text of its system prompt); from the Agent tool calls the mock itself
 * scripted (their `prompt` is the subagent's first user message, their `subagent_type` its name).
 * Pure: the server keeps the state (known ids, delegations) and passes it in.
 */
import { contentText, lastMessage, type MessagesRequestBody, systemText } from './recording.js';
import type { AgentIdentity } from './script.js';

/** An Agent tool call the mock emitted: the subagent it starts and the task text it hands over. */
export interface Delegation {
  subagentType: string;
  prompt: string;
}

export interface IdentifyInput {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: MessagesRequestBody | undefined;
  /** Subagent name → a distinctive piece of its prompt (option of startMockModel). */
  agentPrompts: Record<string, string>;
  /** Subagent names already attributed, by `x-claude-code-agent-id`. */
  knownAgents: ReadonlyMap<string, string>;
  /** Agent tool calls the mock has emitted so far, oldest first. */
  delegations: readonly Delegation[];
}

export const AGENT_ID_HEADER = 'x-claude-code-agent-id';
/** The name a subagent gets when nothing tells which one it is. */
export const UNKNOWN_SUBAGENT = 'unknown';
/** The Agent tool's name, and its older name that transcripts and some versions still use. */
const DELEGATING_TOOLS = new Set(['Agent', 'Task']);
/** The subagent the Agent tool starts when the call names none. */
const DEFAULT_SUBAGENT_TYPE = 'general-purpose';
const SUBAGENT_MARKER = 'cc_is_subagent=true';
const TITLE_MARKER = 'naming a coding session';
/** Phrases of the compaction instruction; either one is enough, so small rewordings still match. */
const COMPACTION_MARKERS = [
  'Respond with TEXT ONLY. Do NOT call any tools',
  'detailed summary of the conversation so far',
];

export function agentIdOf(headers: IdentifyInput['headers']): string | undefined {
  const value = headers[AGENT_ID_HEADER];
  return Array.isArray(value) ? value[0] : value;
}

export function identifyAgent(input: IdentifyInput): AgentIdentity {
  if (input.path === '/v1/messages/count_tokens') return { kind: 'count_tokens' };
  if (input.method !== 'POST' || input.path !== '/v1/messages') return { kind: 'other' };
  if (isCompactionRequest(input.body)) return { kind: 'side', purpose: 'compact' };
  const system = systemText(input.body);
  const agentId = agentIdOf(input.headers);
  if (agentId !== undefined || system.includes(SUBAGENT_MARKER)) {
    return { kind: 'subagent', name: subagentName(input, system, agentId) };
  }
  if ((input.body?.tools ?? []).length === 0) {
    return { kind: 'side', purpose: system.includes(TITLE_MARKER) ? 'title' : 'untooled' };
  }
  return { kind: 'main' };
}

function isCompactionRequest(body: MessagesRequestBody | undefined): boolean {
  const last = lastMessage(body);
  if (last?.role !== 'user') return false;
  const text = contentText(last.content);
  return COMPACTION_MARKERS.some((marker) => text.includes(marker));
}

function subagentName(input: IdentifyInput, system: string, agentId: string | undefined): string {
  const known = agentId === undefined ? undefined : input.knownAgents.get(agentId);
  if (known !== undefined) return known;
  for (const [name, prompt] of Object.entries(input.agentPrompts)) {
    if (prompt !== '' && system.includes(prompt)) return name;
  }
  const firstUser = input.body?.messages?.find((message) => message.role === 'user');
  const task = firstUser === undefined ? '' : contentText(firstUser.content);
  const delegation = [...input.delegations]
    .reverse()
    .find((candidate) => candidate.prompt !== '' && task.includes(candidate.prompt));
  return delegation?.subagentType ?? UNKNOWN_SUBAGENT;
}

/** The delegations a reply's tool calls start, to remember for attributing the subagents later. */
export function delegationsIn(
  toolCalls: Array<{ name: string; input: Record<string, unknown> }>,
): Delegation[] {
  return toolCalls
    .filter((call) => DELEGATING_TOOLS.has(call.name))
    .map((call) => ({
      subagentType:
        typeof call.input.subagent_type === 'string' ? call.input.subagent_type : DEFAULT_SUBAGENT_TYPE,
      prompt: typeof call.input.prompt === 'string' ? call.input.prompt : '',
    }));
}
