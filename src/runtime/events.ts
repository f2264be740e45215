/**
 * flower's event type and `normalize(message)`: the SDK's message stream turned into the few
 * kinds a renderer, a workflow or a test needs to look at.
 *
 * Invariants:
 * - A synthetic API-error message (model `<synthetic>`, or flagged `isApiErrorMessage`) becomes
 *   one `error` event and never a `text` event: the harness writes "API Error: …" as if the model
 *   had said it, and that must not leak into a step's text or the next step's prompt.
 * - `payload.context` (input + cache-read + cache-creation tokens of the reply) is set only when
 *   the message carries usage; it is the sole source of the handoff watermark, and the runtime
 *   only counts it when `payload.subagent` is false.
 * - Compaction boundaries become `reset`, so a context drop always has a visible cause.
 * - `normalize` is pure: no I/O, no clock, no state. The same message always gives the same events.
 */
import type { SDKMessage } from '@anthropic-ai/claude-agent-sdk';
import { isHarnessErrorTurn } from '../store/transcript.js';

/** Facts every event built from an assistant or user message carries. */
export interface MessageMeta {
  /** True when a subagent produced the message (it has a parent tool use). */
  subagent: boolean;
  /** The `Agent` tool call that started the subagent; only set when `subagent` is true. */
  parentToolUseId?: string;
  /** Tokens the reply's request carried (input + cache read + cache creation). */
  context?: number;
  /** The model that served the reply; never `<synthetic>`. */
  model?: string;
}

export interface ToolCallPayload extends MessageMeta {
  id: string;
  input: Record<string, unknown>;
}

export interface DispatchPayload extends ToolCallPayload {
  /** The subagent the coordinator asked for (`subagent_type`). */
  subagentType: string;
  description: string;
}

export interface ToolResultPayload extends MessageMeta {
  toolUseId: string;
  isError: boolean;
}

export interface TaskPayload {
  /** Which task notice this is. */
  phase: 'started' | 'progress' | 'updated' | 'notification';
  taskId: string;
  description?: string;
  status?: string;
  /** The Agent call that started the task, when it is a subagent. */
  toolUseId?: string;
}

export interface SystemPayload {
  subtype: string;
  data: Record<string, unknown>;
  /**
   * Set by flower's own notices that need the user's attention (e.g. a goal with checks that cannot
   * be verified here). The binary's system messages are chatter and only shown under `-v`.
   */
  warning?: boolean;
  /**
   * Set by flower's own reports that are always shown, one line each, coloured by how they went
   * (a host check that passed or failed, how the goal was triaged, why a task stopped).
   */
  notice?: 'ok' | 'fail' | 'info';
}

export interface ResetPayload {
  subtype: string;
  trigger: string;
  preTokens?: number;
  postTokens?: number;
  /** A micro-compaction (old tool results cleared) rather than a summary. */
  micro: boolean;
}

export interface ResultPayload {
  sessionId: string;
  /**
   * The session's running total in USD as the binary reports it (`total_cost_usd`). It is
   * cumulative: it keeps growing over several results of one query (background subagents) and
   * even across resumes, because the binary restores it from the transcript. Always set by
   * `normalize`; optional so that events built by hand (tests, replays) need not invent it.
   */
  sessionCostUsd?: number;
  /**
   * What this result added, in USD. `normalize` cannot know the earlier total and sets the
   * session total; the runtime replaces it with the difference before any sink sees the event.
   */
  costUsd: number;
  numTurns: number;
  isError: boolean;
  subtype: string;
  /** Error strings the binary attached to a failed result. */
  errors: string[];
}

export interface ErrorPayload {
  /** The harness's own "API Error: …" message, not something the model said. */
  synthetic?: boolean;
  /** HTTP status of the failed API request behind a synthetic error, when there was a response. */
  status?: number;
  /** The binary's error code for it (`model_not_found`, `authentication_failed`, …). */
  errorCode?: string;
  /** The served model differs from the configured one (window estimates may be wrong). */
  modelMismatch?: boolean;
  want?: string;
  served?: string;
}

/** Retry notices: flower's own (runtime) and the binary's (each `api_retry` it reports). */
export interface RetryPayload {
  source: 'runtime' | 'binary';
  step?: string;
  attempt?: number;
  /** The binary's retry budget and wait, when `source` is `binary`. */
  maxRetries?: number;
  delayMs?: number;
  errorStatus?: number | null;
  /** The binary's error code (`authentication_failed`, `overloaded`, `unknown`, …), when `source` is `binary`. */
  errorCode?: string;
  /** While the endpoint is down (reason `offline`): the live state of the wait, epoch milliseconds. */
  offline?: { endpoint: string; downSince: number; nextProbeAt: number; givesUpAt: number };
  /** What the runtime is doing: backing off, waiting for the network, resuming after an interrupt. */
  reason?: 'failure' | 'offline' | 'online' | 'interrupt' | 'ownership';
}

export interface HandoffSections {
  doing: string;
  decided: string;
  deadends: string;
  next: string;
}

export interface HandoffPayload {
  phase: 'near' | 'writing' | 'done';
  step: string;
  context: number;
  window: number;
  /** The rollover threshold (on `near`). */
  at?: number;
  /** On `done`: the document was assembled mechanically because the session could not write it. */
  degraded?: boolean;
  /** On `done`: where the document was written; empty when there is nowhere to write it. */
  path?: string;
  sections?: HandoffSections;
}

export interface StepPayload {
  name: string;
  index: number;
  total: number;
  resumed: boolean;
  woke: number;
  /** For a step that works in rounds (under the goal guard): this round and the task's cap. */
  round?: number;
  rounds?: number;
}

interface EventOf<Kind extends string, Payload> {
  kind: Kind;
  text: string;
  /** The tool's name, for `tool_call` and `dispatch`. */
  tool?: string;
  payload: Payload;
  /** The SDK message the event came from, when there is one. */
  raw?: unknown;
}

/** Everything that can appear in flower's event stream. */
export type FlowerEvent =
  | EventOf<'text', MessageMeta>
  | EventOf<'thinking', MessageMeta>
  | EventOf<'prompt', MessageMeta>
  | EventOf<'tool_call', ToolCallPayload>
  | EventOf<'dispatch', DispatchPayload>
  | EventOf<'tool_result', ToolResultPayload>
  | EventOf<'task', TaskPayload>
  | EventOf<'system', SystemPayload>
  | EventOf<'reset', ResetPayload>
  | EventOf<'result', ResultPayload>
  | EventOf<'error', ErrorPayload>
  | EventOf<'retry', RetryPayload>
  | EventOf<'handoff', HandoffPayload>
  | EventOf<'step', StepPayload>
  | EventOf<'ask', Record<string, unknown>>
  | EventOf<'unknown', Record<string, unknown>>;

export type FlowerEventKind = FlowerEvent['kind'];

/** A sink for events. A sink that throws fails the step it is attached to. */
export type EventSink = (event: FlowerEvent) => void;

const MESSAGE_KINDS: ReadonlySet<FlowerEventKind> = new Set([
  'text',
  'thinking',
  'prompt',
  'tool_call',
  'dispatch',
  'tool_result',
]);

/** The message facts (subagent, context, model) of an event built from an assistant or user message. */
export function messageMetaOf(event: FlowerEvent): MessageMeta | undefined {
  return MESSAGE_KINDS.has(event.kind) ? (event.payload as MessageMeta) : undefined;
}

/**
 * A line for a person following a run from library code, or '' for an event that is none of
 * their business; print the non-empty ones. What the `flower` screen shows without `-v`, in plain
 * text: the main thread's prose and thinking, `[Tool] subject` for every call, a failed tool's
 * error, flower's own warnings and notices, task summaries, retries, resets, handoffs, questions,
 * step headers and how each run ended. '' for the binary's bookkeeping: its system messages
 * (`init`, …), task notices without a summary, the prompt echo, a worker's prose (its summary
 * follows as a task event) and a successful tool's output, where the binary leaves notes meant for
 * the model only (a background agent's launch is "internal metadata" with its agent id).
 */
export function describeEvent(event: FlowerEvent): string {
  switch (event.kind) {
    case 'step': {
      const { name, index, total, round, rounds, resumed } = event.payload;
      const what = round === undefined ? name : `${name} · round ${round}/${rounds ?? round}`;
      return `== ${what} (step ${index}/${total}${resumed ? ', resumed' : ''})`;
    }
    case 'tool_call':
    case 'dispatch':
      return event.tool ? `[${event.tool}] ${event.text}` : event.text;
    case 'tool_result':
      return event.payload.isError ? `[failed] ${event.text}` : '';
    case 'text':
    case 'thinking':
      return event.payload.subagent ? '' : event.text;
    case 'result': {
      const { isError, subtype, numTurns, costUsd } = event.payload;
      const how = isError ? (subtype && subtype !== 'success' ? `failed (${subtype})` : 'failed') : 'done';
      return `${how} · ${numTurns} ${numTurns === 1 ? 'turn' : 'turns'} · $${costUsd.toFixed(4)}`;
    }
    case 'system':
      return event.payload.warning || event.payload.notice ? event.text : '';
    case 'prompt':
    case 'unknown':
      return '';
    default:
      return event.text;
  }
}

const SYNTHETIC_MODEL = '<synthetic>';
/** Tool names that start a subagent; `Task` is the older name of `Agent`. */
const DISPATCH_TOOLS = new Set(['Agent', 'Task']);
const TOOL_SUMMARY_CHARS = 200;
const TOOL_RESULT_CHARS = 500;

type Loose = Record<string, unknown>;

function asRecord(value: unknown): Loose {
  return typeof value === 'object' && value !== null ? (value as Loose) : {};
}

function asNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function asString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** The prompt size a reply's request carried: the only honest measure of how full the context is. */
export function contextFromUsage(usage: unknown): number | undefined {
  if (typeof usage !== 'object' || usage === null) return undefined;
  const fields = usage as Loose;
  return (
    (asNumber(fields.input_tokens) ?? 0) +
    (asNumber(fields.cache_read_input_tokens) ?? 0) +
    (asNumber(fields.cache_creation_input_tokens) ?? 0)
  );
}

/** True for the harness's own "API Error: …" assistant message. */
export function isSyntheticApiError(message: SDKMessage): boolean {
  if (message.type !== 'assistant') return false;
  const wrapper = message as unknown as Loose;
  // The binary marks it `is_api_error_message` on the wire; older builds used the camel-case name.
  // The binary's own "No response requested." filler is `<synthetic>` too, but no error: the
  // same rule as the stored transcript's (an error here would count as an outage).
  return isHarnessErrorTurn(
    wrapper.is_api_error_message === true || wrapper.isApiErrorMessage === true,
    wrapper.message,
  );
}

function blockText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block) => {
      const fields = asRecord(block);
      return fields.type === 'text' ? (asString(fields.text) ?? '') : '';
    })
    .filter((text) => text !== '')
    .join('\n');
}

function metaOf(parentToolUseId: unknown, apiMessage: Loose): MessageMeta {
  const meta: MessageMeta = { subagent: typeof parentToolUseId === 'string' && parentToolUseId !== '' };
  if (meta.subagent) meta.parentToolUseId = parentToolUseId as string;
  const context = contextFromUsage(apiMessage.usage);
  if (context !== undefined) meta.context = context;
  const model = asString(apiMessage.model);
  if (model && model !== SYNTHETIC_MODEL) meta.model = model;
  return meta;
}

/** A one-line summary of a tool call's input: the path, command or pattern it works on. */
function toolSummary(input: Loose): string {
  const subject = input.file_path ?? input.command ?? input.pattern ?? input.path ?? input.url ?? '';
  return String(subject).slice(0, TOOL_SUMMARY_CHARS);
}

function contentEvents(
  role: 'assistant' | 'user',
  content: unknown,
  meta: MessageMeta,
  raw: unknown,
): FlowerEvent[] {
  const proseKind = role === 'assistant' ? 'text' : 'prompt';
  if (typeof content === 'string')
    return content === '' ? [] : [{ kind: proseKind, text: content, payload: meta, raw }];
  if (!Array.isArray(content)) return [];
  const events: FlowerEvent[] = [];
  for (const item of content) {
    const block = asRecord(item);
    switch (block.type) {
      case 'text':
        events.push({ kind: proseKind, text: asString(block.text) ?? '', payload: { ...meta }, raw });
        break;
      case 'thinking':
        events.push({ kind: 'thinking', text: asString(block.thinking) ?? '', payload: { ...meta }, raw });
        break;
      case 'tool_use': {
        const name = asString(block.name) ?? '';
        const input = asRecord(block.input);
        const id = asString(block.id) ?? '';
        if (DISPATCH_TOOLS.has(name)) {
          const subagentType = asString(input.subagent_type) ?? 'general-purpose';
          const description = asString(input.description) ?? '';
          events.push({
            kind: 'dispatch',
            tool: name,
            text: `${subagentType}: ${description}`.slice(0, TOOL_SUMMARY_CHARS),
            payload: { ...meta, id, input, subagentType, description },
            raw,
          });
        } else {
          events.push({
            kind: 'tool_call',
            tool: name,
            text: toolSummary(input),
            payload: { ...meta, id, input },
            raw,
          });
        }
        break;
      }
      case 'tool_result':
        events.push({
          kind: 'tool_result',
          text: blockText(block.content).slice(0, TOOL_RESULT_CHARS),
          payload: {
            ...meta,
            toolUseId: asString(block.tool_use_id) ?? '',
            isError: block.is_error === true,
          },
          raw,
        });
        break;
      default:
        // Images, documents, redacted thinking, server tool blocks: nothing a reader acts on.
        break;
    }
  }
  return events;
}

function resetFromCompaction(message: Loose): FlowerEvent {
  const subtype = asString(message.subtype) ?? 'compact_boundary';
  const metadata = asRecord(
    message.compact_metadata ?? message.compactMetadata ?? message.microcompact_metadata,
  );
  const micro = subtype === 'microcompact_boundary';
  const trigger = asString(metadata.trigger) ?? '?';
  const preTokens = asNumber(metadata.pre_tokens ?? metadata.preTokens);
  const postTokens = asNumber(metadata.post_tokens ?? metadata.postTokens);
  const what = micro ? 'micro-compaction' : 'compaction';
  const sizes = preTokens === undefined ? '' : ` ${preTokens} → ${postTokens ?? '?'} tokens`;
  const payload: ResetPayload = { subtype, trigger, micro };
  if (preTokens !== undefined) payload.preTokens = preTokens;
  if (postTokens !== undefined) payload.postTokens = postTokens;
  return { kind: 'reset', text: `${what} (${trigger})${sizes}`, payload, raw: message };
}

const TASK_PHASES: Record<string, TaskPayload['phase']> = {
  task_started: 'started',
  task_progress: 'progress',
  task_updated: 'updated',
  task_notification: 'notification',
};

function taskEvent(message: Loose, phase: TaskPayload['phase']): FlowerEvent {
  const payload: TaskPayload = { phase, taskId: asString(message.task_id) ?? '' };
  const patch = asRecord(message.patch);
  const description = asString(message.description) ?? asString(patch.description);
  if (description !== undefined) payload.description = description;
  const status = asString(message.status) ?? asString(patch.status);
  if (status !== undefined) payload.status = status;
  const toolUseId = asString(message.tool_use_id);
  if (toolUseId) payload.toolUseId = toolUseId;
  // Only a finished task has something worth a line of its own: its summary.
  const text = phase === 'notification' ? (asString(message.summary) ?? '') : '';
  return { kind: 'task', text, payload, raw: message };
}

/**
 * Why the binary retries, in words: `HTTP 529 overloaded`, `no response headers within 30 s`, or
 * for a connection that failed without an HTTP answer (the binary then says `unknown`) exactly
 * that, never a bare "(unknown)".
 */
export function retryCause(status: number | null, code: string | undefined, waitedMs?: number): string {
  const words = code && code !== 'unknown' ? code.replace(/_/g, ' ') : '';
  if (status !== null) return words ? `HTTP ${status} ${words}` : `HTTP ${status}`;
  if (waitedMs !== undefined) return `no response headers within ${Math.round(waitedMs / 1000)} s`;
  return words || 'no connection: refused, reset or timed out';
}

function systemEvent(message: Loose): FlowerEvent {
  const subtype = asString(message.subtype) ?? '';
  if (subtype === 'compact_boundary' || subtype === 'microcompact_boundary')
    return resetFromCompaction(message);
  const phase = TASK_PHASES[subtype];
  if (phase) return taskEvent(message, phase);
  if (subtype === 'api_retry') {
    const attempt = asNumber(message.attempt);
    const maxRetries = asNumber(message.max_retries);
    const delayMs = asNumber(message.retry_delay_ms);
    const status = asNumber(message.error_status) ?? null;
    const code = asString(message.error);
    const cause = retryCause(status, code, asNumber(asRecord(message.no_response).waited_ms));
    const payload: RetryPayload = { source: 'binary', errorStatus: status };
    if (code) payload.errorCode = code;
    if (attempt !== undefined) payload.attempt = attempt;
    if (maxRetries !== undefined) payload.maxRetries = maxRetries;
    if (delayMs !== undefined) payload.delayMs = delayMs;
    const wait = delayMs === undefined ? '' : ` in ${(delayMs / 1000).toFixed(1)}s`;
    return {
      kind: 'retry',
      text: `API request failed (${cause}); Claude Code retries${wait} (${attempt ?? '?'}/${maxRetries ?? '?'})`,
      payload,
      raw: message,
    };
  }
  const { type: _type, ...data } = message;
  return { kind: 'system', text: subtype, payload: { subtype, data }, raw: message };
}

function resultEvent(message: Loose): FlowerEvent {
  const errors = Array.isArray(message.errors) ? message.errors.map(String) : [];
  return {
    kind: 'result',
    text: asString(message.subtype) ?? '',
    payload: {
      sessionId: asString(message.session_id) ?? '',
      sessionCostUsd: asNumber(message.total_cost_usd) ?? 0,
      costUsd: asNumber(message.total_cost_usd) ?? 0,
      numTurns: asNumber(message.num_turns) ?? 0,
      isError: message.is_error === true,
      subtype: asString(message.subtype) ?? '',
      errors,
    },
    raw: message,
  };
}

/** Turn one SDK message into zero or more flower events. */
export function normalize(message: SDKMessage): FlowerEvent[] {
  const fields = message as unknown as Loose;
  switch (message.type) {
    case 'assistant': {
      const apiMessage = asRecord(fields.message);
      if (isSyntheticApiError(message)) {
        const payload: ErrorPayload = { synthetic: true };
        const status = asNumber(fields.api_error_status);
        if (status !== undefined) payload.status = status;
        const code = asString(fields.error);
        if (code) payload.errorCode = code;
        return [{ kind: 'error', text: blockText(apiMessage.content), payload, raw: message }];
      }
      return contentEvents(
        'assistant',
        apiMessage.content,
        metaOf(fields.parent_tool_use_id, apiMessage),
        message,
      );
    }
    case 'user': {
      const apiMessage = asRecord(fields.message);
      return contentEvents(
        'user',
        apiMessage.content,
        metaOf(fields.parent_tool_use_id, apiMessage),
        message,
      );
    }
    case 'result':
      return [resultEvent(fields)];
    case 'system':
      return [systemEvent(fields)];
    case 'conversation_reset':
      return [
        {
          kind: 'reset',
          text: 'conversation reset',
          payload: { subtype: 'conversation_reset', trigger: asString(fields.trigger) ?? '?', micro: false },
          raw: message,
        },
      ];
    case 'stream_event':
      // Partial-message deltas: the complete message follows and carries everything we need.
      return [];
    default:
      return [{ kind: 'unknown', text: String(message.type), payload: {}, raw: message }];
  }
}
