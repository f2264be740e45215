/**
 * What the mock model remembers about each request, for assertions.
 *
 * Invariants: every request that reaches the server is recorded, in arrival order, before it is
 * answered (so a test sees requests that were failed or dropped too); `body` is the parsed JSON or
 * `undefined` when the body was empty or not JSON (`rawBody` keeps the text either way).
 */
import type { AgentIdentity } from './script.js';

/** How the server answered a request. */
export type RequestOutcome =
  | { kind: 'pending' }
  | { kind: 'reply'; source: string }
  | { kind: 'error'; status: number; source: string }
  | { kind: 'drop'; source: string }
  | { kind: 'refuse'; source: string }
  | { kind: 'count_tokens' }
  | { kind: 'not_found' };

/** A message in a Messages API request body, loosely typed: only what assertions commonly read. */
export interface RequestMessage {
  /** `user` or `assistant`; this binary also sends `system` messages (its environment block). */
  role: string;
  content: string | Array<{ type: string; [key: string]: unknown }>;
}

/** The Messages API request body, loosely typed. */
export interface MessagesRequestBody {
  model?: string;
  max_tokens?: number;
  stream?: boolean;
  system?: string | Array<{ type: string; text?: string; [key: string]: unknown }>;
  messages?: RequestMessage[];
  tools?: Array<{ name: string; [key: string]: unknown }>;
  [key: string]: unknown;
}

export interface RecordedRequest {
  /** 0-based position among all requests this server received. */
  index: number;
  method: string;
  /** The path without the query string, e.g. `/v1/messages`. */
  path: string;
  /** The query string parameters, e.g. `{ beta: 'true' }`. */
  query: Record<string, string>;
  /** Lower-cased header names, as Node delivers them. */
  headers: Record<string, string | string[] | undefined>;
  rawBody: string;
  body: MessagesRequestBody | undefined;
  /** Which agent the server attributed the request to. */
  agent: AgentIdentity;
  /** The `x-claude-code-agent-id` header: set on a subagent's requests, one id per subagent run. */
  agentId: string | undefined;
  /** True when the request found its agent's queue empty and got the fallback. */
  unmatched: boolean;
  outcome: RequestOutcome;
  receivedAt: Date;
  /** When the response was over: sent whole, failed, or the client went away (undefined while open). */
  endedAt?: Date;
}

/** The system prompt as one string, whichever of the API's two shapes the request used. */
export function systemText(body: MessagesRequestBody | undefined): string {
  const system = body?.system;
  if (system === undefined) return '';
  if (typeof system === 'string') return system;
  return system.map((block) => block.text ?? '').join('\n');
}

/** All text of a message (text blocks, and the text inside tool results), one block a line. */
export function messageText(message: RequestMessage | undefined): string {
  return message === undefined ? '' : contentText(message.content);
}

/**
 * The last message of the conversation: the last one that is not a `system` message. Claude Code
 * with its sandbox on appends a system-role message describing the sandbox after the conversation
 * (measured: every request of a sandboxed session ends with one), so "the last message" of a request
 * is seldom what a script means by it.
 */
export function lastMessage(body: MessagesRequestBody | undefined): RequestMessage | undefined {
  return conversationMessages(body).at(-1);
}

/** The request's messages without the `system`-role ones Claude Code adds (see `lastMessage`). */
export function conversationMessages(body: MessagesRequestBody | undefined): RequestMessage[] {
  return (body?.messages ?? []).filter((message) => message.role !== 'system');
}

/** The last user message's text (including tool results' text), the usual thing to assert on. */
export function lastUserText(request: RecordedRequest): string {
  const messages = request.body?.messages ?? [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message?.role === 'user') return contentText(message.content);
  }
  return '';
}

/** All text in a content value, descending into tool_result blocks. */
export function contentText(content: RequestMessage['content'] | unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block: { type?: string; text?: unknown; content?: unknown }) => {
      if (block.type === 'text' && typeof block.text === 'string') return block.text;
      if (block.type === 'tool_result') return contentText(block.content);
      return '';
    })
    .filter((text) => text !== '')
    .join('\n');
}

/** The tool_result blocks of the last user message, by tool_use id. */
export function toolResults(
  request: RecordedRequest,
): Array<{ toolUseId: string; text: string; isError: boolean }> {
  const last = lastMessage(request.body);
  if (last?.role !== 'user' || typeof last.content === 'string') return [];
  return last.content
    .filter((block) => block.type === 'tool_result')
    .map((block) => ({
      toolUseId: String(block.tool_use_id),
      text: contentText(block.content),
      isError: block.is_error === true,
    }));
}
