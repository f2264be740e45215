/**
 * The script format of the mock model: what the scripted assistant says, per request.
 *
 * A script is a set of queues. Each request the server receives is attributed to an agent (the main
 * thread, a named subagent, or a side request the binary makes on its own) and takes the next step
 * from that agent's queue. A step is a reply, a fault, or a function of the request returning one.
 *
 * Invariants:
 * - Steps are consumed in order and exactly once; a request with nothing left for it gets the
 *   script's `fallback` and is recorded as unmatched, so a test can assert that nothing went
 *   unscripted instead of silently passing on a default answer.
 * - Side requests (see src/testing/README.md) never consume main-thread or subagent steps; an unscripted side
 *   request gets a canned reply and is not counted as unmatched (it is not the test's business).
 * - Everything here is plain data, so a script can be written inline in a test.
 */
import type { RecordedRequest } from './recording.js';

/** Why the assistant stopped; the values the Messages API uses. */
export type StopReason = 'end_turn' | 'tool_use' | 'max_tokens' | 'stop_sequence' | 'pause_turn' | 'refusal';

/** Token usage reported for one reply; tests use it to drive the context level the binary sees. */
export interface MockUsage {
  /** Uncached input tokens. Default: an estimate from the request body's size (4 characters a token). */
  input_tokens?: number;
  /** Input tokens read from the prompt cache. Default 0. */
  cache_read_input_tokens?: number;
  /** Input tokens written to the prompt cache. Default 0. */
  cache_creation_input_tokens?: number;
  /** Output tokens. Default: an estimate from the reply's content. */
  output_tokens?: number;
}

/** One content block of a reply, in the order the assistant emits it. */
export type MockContentBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature?: string }
  | { type: 'tool_use'; name: string; input: Record<string, unknown>; id?: string };

/** A tool call the assistant makes. The id defaults to a fresh unique `toolu_…` id. */
export interface MockToolUse {
  name: string;
  input: Record<string, unknown>;
  id?: string;
}

/**
 * A successful assistant reply. Either give `content` (full control over block order) or the
 * shorthands, which are emitted as thinking, then text, then the tool calls.
 */
export interface MockReply {
  kind?: 'reply';
  content?: MockContentBlock[];
  thinking?: string;
  text?: string;
  toolUses?: MockToolUse[];
  /** Default: `tool_use` when the reply calls a tool, otherwise `end_turn`. */
  stopReason?: StopReason;
  usage?: MockUsage;
  /** The model named in the reply. Default: the model the request asked for. */
  model?: string;
  /** Wait this long before sending the response headers. */
  delayMs?: number;
}

/** The API's error types, by the HTTP status that carries them. */
export type ApiErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error';

/** Answer with an HTTP error status and an API-shaped error body. */
export interface MockErrorFault {
  kind: 'error';
  status: number;
  /** Default: the type the real API uses for `status`. */
  errorType?: ApiErrorType;
  /** Default: a message in the real API's words for that status. */
  message?: string;
  /** Sent as `retry-after` (seconds); the binary honours it when it waits before a retry. */
  retryAfterSeconds?: number;
  /**
   * When set, answer 200 and stream this many events of `partial` first, then an SSE `error`
   * event carrying the error body (how the real API reports an overload mid-stream).
   */
  afterEvents?: number;
  /** The reply whose beginning is streamed before a mid-stream error. Default: a short text reply. */
  partial?: MockReply;
  delayMs?: number;
}

/**
 * Start a normal streaming reply and cut the TCP connection after `afterEvents` SSE events, the
 * way a flaky network or proxy does. `afterEvents: 0` resets the connection before any response.
 */
export interface MockDropFault {
  kind: 'drop';
  /** Default 3: message_start, content_block_start and ping have gone out, no content yet. */
  afterEvents?: number;
  /** The reply whose beginning is streamed. Default: a short text reply. */
  partial?: MockReply;
  delayMs?: number;
  /**
   * An outage that starts with the cut: the listener closes in the same tick the connection is
   * reset and refuses connections for this long. Starting it from a timer instead races the
   * binary's own immediate reconnect, which then lands before the outage (seen in CI).
   */
  thenRefuseForMs?: number;
}

/**
 * Reset this request's connection, then close the listener so connections are refused for `forMs`,
 * then listen again on the same port (as a restarting endpoint or a network outage looks).
 */
export interface MockRefuseFault {
  kind: 'refuse';
  forMs: number;
}

export type MockFault = MockErrorFault | MockDropFault | MockRefuseFault;

/** What one request gets: a reply or a fault. */
export type MockResponse = MockReply | MockFault;

/** A scripted step: a response, or a function computing it from the request that arrived. */
export type MockStep = MockResponse | ((request: RecordedRequest) => MockResponse);

/**
 * The full script. A bare array of steps is shorthand for `{ main: steps }`.
 */
export interface MockScript {
  /** Steps for main-thread requests, in order. */
  main?: MockStep[];
  /**
   * Steps for subagents, keyed by agent name: the key of the SDK's `agents` option (the
   * `subagent_type` the main thread passed to the Agent tool).
   */
  agents?: Record<string, MockStep[]>;
  /**
   * Steps for the binary's own side requests: automatic compaction (main thread or subagent) and,
   * without CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC, title generation. Unscripted ones get a
   * canned reply that fits their purpose (a summary; a JSON title).
   */
  side?: MockStep[];
  /**
   * What a request gets when its queue is empty. Default: a text reply saying that nothing was
   * scripted for it, which ends the turn cleanly. The request is recorded as unmatched either way.
   */
  fallback?: MockStep;
}

/** Which agent sent a request, as the server attributes it. */
export type AgentIdentity =
  | { kind: 'main' }
  | { kind: 'subagent'; name: string }
  | { kind: 'side'; purpose: 'title' | 'compact' | 'untooled' }
  | { kind: 'count_tokens' }
  | { kind: 'other' };

export function normalizeScript(script: MockScript | MockStep[] | undefined): MockScript {
  if (script === undefined) return {};
  return Array.isArray(script) ? { main: script } : script;
}

/** The content blocks a reply emits, shorthands expanded in their documented order. */
export function replyBlocks(reply: MockReply): MockContentBlock[] {
  if (reply.content) return reply.content;
  const blocks: MockContentBlock[] = [];
  if (reply.thinking !== undefined) blocks.push({ type: 'thinking', thinking: reply.thinking });
  if (reply.text !== undefined) blocks.push({ type: 'text', text: reply.text });
  for (const call of reply.toolUses ?? []) blocks.push({ type: 'tool_use', ...call });
  return blocks;
}

export function isFault(response: MockResponse): response is MockFault {
  return response.kind === 'error' || response.kind === 'drop' || response.kind === 'refuse';
}

/** Shorthand constructors, so scripts read as a list of events. */
export const mock = {
  text: (text: string, extra: Omit<MockReply, 'text'> = {}): MockReply => ({ ...extra, text }),
  toolUse: (
    name: string,
    input: Record<string, unknown>,
    extra: Omit<MockReply, 'toolUses'> = {},
  ): MockReply => ({
    ...extra,
    toolUses: [{ name, input }],
  }),
  error: (status: number, extra: Omit<MockErrorFault, 'kind' | 'status'> = {}): MockErrorFault => ({
    kind: 'error',
    status,
    ...extra,
  }),
  drop: (extra: Omit<MockDropFault, 'kind'> = {}): MockDropFault => ({ kind: 'drop', ...extra }),
  refuse: (forMs: number): MockRefuseFault => ({ kind: 'refuse', forMs }),
  /**
   * The same step `count` times: for faults the binary answers with several requests (a 400 is
   * re-sent up to six times with fewer beta headers; see src/testing/README.md).
   */
  times: (count: number, step: MockStep): MockStep[] => Array.from({ length: count }, () => step),
  /** The 400 the API gives for a model it does not know, naming the model the request asked for. */
  modelNotFound: (): MockStep => (request) => ({
    kind: 'error',
    status: 400,
    errorType: 'invalid_request_error',
    message: `model: ${request.body?.model ?? '(none)'} is not a valid model ID`,
  }),
};
