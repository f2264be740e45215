/**
 * The Messages API's wire format: a scripted reply as a JSON message or as the SSE event sequence
 * the real API streams, and API-shaped error bodies. Pure functions; the server writes their output.
 *
 * Event order (as the real API streams it): message_start, then per content block
 * content_block_start, its deltas, content_block_stop; a ping after the first block starts;
 * message_delta (stop_reason and the final usage); message_stop. Text and tool input arrive in
 * several deltas so that clients' delta accumulation is exercised; a thinking block ends with a
 * signature_delta, as the binary needs a signature to send thinking back on the next turn.
 */
import { randomBytes } from 'node:crypto';
import type { MessagesRequestBody } from './recording.js';
import {
  type ApiErrorType,
  type MockContentBlock,
  type MockReply,
  type MockUsage,
  replyBlocks,
  type StopReason,
} from './script.js';

/** A content block exactly as the API returns it. */
export type WireContentBlock =
  | { type: 'text'; text: string }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

export interface WireUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  output_tokens: number;
}

export interface WireMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: WireContentBlock[];
  stop_reason: StopReason;
  stop_sequence: null;
  usage: WireUsage;
}

/** One server-sent event: its name and its JSON data. */
export interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

/** Characters per streamed text delta; small enough that every reply spans several deltas. */
const DELTA_CHARACTERS = 24;
/** The usual rough rule for English text: about four characters a token. */
const CHARACTERS_PER_TOKEN = 4;
const FALLBACK_MODEL = 'claude-mock';

export function freshId(prefix: string): string {
  return `${prefix}_mock${randomBytes(9).toString('hex')}`;
}

export function estimateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / CHARACTERS_PER_TOKEN));
}

/** Builds the complete message a reply stands for; ids are fresh unless the script fixed them. */
export function buildMessage(
  reply: MockReply,
  request: MessagesRequestBody | undefined,
  rawBody: string,
): WireMessage {
  const content = replyBlocks(reply).map(toWireBlock);
  const stopReason: StopReason =
    reply.stopReason ?? (content.some((block) => block.type === 'tool_use') ? 'tool_use' : 'end_turn');
  return {
    id: freshId('msg'),
    type: 'message',
    role: 'assistant',
    model: reply.model ?? request?.model ?? FALLBACK_MODEL,
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage: resolveUsage(reply.usage, content, rawBody),
  };
}

function toWireBlock(block: MockContentBlock): WireContentBlock {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text };
    case 'thinking':
      return { type: 'thinking', thinking: block.thinking, signature: block.signature ?? freshId('sig') };
    case 'tool_use':
      return { type: 'tool_use', id: block.id ?? freshId('toolu'), name: block.name, input: block.input };
  }
}

function resolveUsage(usage: MockUsage | undefined, content: WireContentBlock[], rawBody: string): WireUsage {
  const outputText = content.map((block) => JSON.stringify(block)).join('');
  return {
    input_tokens: usage?.input_tokens ?? estimateTokens(rawBody),
    cache_creation_input_tokens: usage?.cache_creation_input_tokens ?? 0,
    cache_read_input_tokens: usage?.cache_read_input_tokens ?? 0,
    output_tokens: usage?.output_tokens ?? estimateTokens(outputText),
  };
}

function chunks(text: string): string[] {
  if (text === '') return [''];
  const pieces: string[] = [];
  for (let start = 0; start < text.length; start += DELTA_CHARACTERS) {
    pieces.push(text.slice(start, start + DELTA_CHARACTERS));
  }
  return pieces;
}

/** The SSE events that stream `message`, in the real API's order. */
export function streamEvents(message: WireMessage): SseEvent[] {
  const { content, usage, ...envelope } = message;
  const events: SseEvent[] = [
    {
      event: 'message_start',
      data: {
        type: 'message_start',
        message: {
          ...envelope,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          // The real API reports the input side up front and a placeholder for output.
          usage: { ...usage, output_tokens: 1 },
        },
      },
    },
  ];
  content.forEach((block, index) => {
    const [start, ...rest] = blockEvents(block, index);
    if (start) events.push(start);
    if (index === 0) events.push(ping());
    events.push(...rest);
  });
  if (content.length === 0) events.push(ping());
  events.push(
    {
      event: 'message_delta',
      data: {
        type: 'message_delta',
        delta: { stop_reason: message.stop_reason, stop_sequence: null },
        usage,
      },
    },
    { event: 'message_stop', data: { type: 'message_stop' } },
  );
  return events;
}

function ping(): SseEvent {
  return { event: 'ping', data: { type: 'ping' } };
}

function blockEvents(block: WireContentBlock, index: number): SseEvent[] {
  const start = (contentBlock: Record<string, unknown>): SseEvent => ({
    event: 'content_block_start',
    data: { type: 'content_block_start', index, content_block: contentBlock },
  });
  const delta = (payload: Record<string, unknown>): SseEvent => ({
    event: 'content_block_delta',
    data: { type: 'content_block_delta', index, delta: payload },
  });
  const stop: SseEvent = { event: 'content_block_stop', data: { type: 'content_block_stop', index } };
  switch (block.type) {
    case 'text':
      return [
        start({ type: 'text', text: '' }),
        ...chunks(block.text).map((text) => delta({ type: 'text_delta', text })),
        stop,
      ];
    case 'thinking':
      return [
        start({ type: 'thinking', thinking: '', signature: '' }),
        ...chunks(block.thinking).map((thinking) => delta({ type: 'thinking_delta', thinking })),
        delta({ type: 'signature_delta', signature: block.signature }),
        stop,
      ];
    case 'tool_use':
      return [
        start({ type: 'tool_use', id: block.id, name: block.name, input: {} }),
        // The API opens with an empty partial before the JSON itself.
        delta({ type: 'input_json_delta', partial_json: '' }),
        ...chunks(JSON.stringify(block.input)).map((partial_json) =>
          delta({ type: 'input_json_delta', partial_json }),
        ),
        stop,
      ];
  }
}

export function formatSse(event: SseEvent): string {
  return `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

/** The error type and wording the real API uses for each status it returns. */
const ERRORS_BY_STATUS: Record<number, { type: ApiErrorType; message: string }> = {
  400: { type: 'invalid_request_error', message: 'Invalid request' },
  401: { type: 'authentication_error', message: 'invalid x-api-key' },
  403: {
    type: 'permission_error',
    message: 'Your API key does not have permission to use the specified resource.',
  },
  404: { type: 'not_found_error', message: 'Not found' },
  413: { type: 'request_too_large', message: 'Request exceeds the maximum allowed number of bytes.' },
  429: {
    type: 'rate_limit_error',
    message: 'Number of request tokens has exceeded your per-minute rate limit',
  },
  500: { type: 'api_error', message: 'Internal server error' },
  503: { type: 'api_error', message: 'Service unavailable' },
  529: { type: 'overloaded_error', message: 'Overloaded' },
};

/** The error type the API uses for `status` (5xx without a specific type are `api_error`). */
export function errorTypeFor(status: number): ApiErrorType {
  return ERRORS_BY_STATUS[status]?.type ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

export function errorBody(
  status: number,
  errorType?: ApiErrorType,
  message?: string,
): Record<string, unknown> {
  return {
    type: 'error',
    error: {
      type: errorType ?? errorTypeFor(status),
      message: message ?? ERRORS_BY_STATUS[status]?.message ?? `HTTP ${status}`,
    },
    request_id: freshId('req'),
  };
}
