/**
 * The cost ledger of a step: what the main thread and each worker (subagent) consumed, read from
 * the transcripts the store keeps. The SDK reports usage per model, so a coordinator and its
 * workers on one model collapse into one figure; the transcripts keep per-message usage, so flower
 * can split it.
 *
 * Invariants:
 * - Each API response counts once. The transcript holds one entry per content block, and entries
 *   that share `message.id` are one response carrying the same `usage` (seen: 5 assistant entries,
 *   3 responses). Summing per entry would multiply the figures.
 * - The harness's synthetic "API Error" turns (model `<synthetic>`) are not responses: no request
 *   was answered.
 * - Only responses inside the step's time window count: rounds of work resume the same session
 *   (`work`, `work#round2`), so a session's transcript spans several manifest rows.
 * - Dollars come from `config/prices.ts`; a thread with any response from a model the table does
 *   not know has `cost_usd: null`, never a guess. The step's own `cost_usd` stays the SDK's.
 * - One computation for everyone: the runtime writes `stepLedger` into the manifest row when the
 *   step ends, and `flower report` computes it the same way for rows that lack it.
 * - Reading never writes: `readStepTranscripts` uses the store's read methods only.
 */
import type { SessionKey } from '@anthropic-ai/claude-agent-sdk';
import { priceFor, type ResponseTokens, responseCost } from '../config/prices.js';
import { blocksOf, type Entry, isToolUse, messageOf } from '../store/transcript.js';

/** The token fields of a ledger entry, named as the API names them. */
export interface TokenCounts {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}

/** One thread (the main thread, or one worker) of a step. */
export interface ThreadLedger extends TokenCounts {
  /** The model that answered most of its responses (the first to answer among equals); null when none named one. */
  model: string | null;
  /** API responses (model turns). */
  turns: number;
  /** USD from the price table; null when a model is not in it. */
  cost_usd: number | null;
  tool_calls: number;
}

/** One worker: a subagent transcript of the step's sessions. */
export interface WorkerLedger extends ThreadLedger {
  agent_id: string;
  /** The subagent type the coordinator asked for (`coder`), when known. */
  agent_type: string | null;
  /** What the coordinator dispatched it to do: the Agent call's `description`. */
  description: string;
  /** First to last entry of its transcript inside the step, seconds. */
  duration_s: number;
}

export interface StepLedger {
  main: ThreadLedger;
  workers: WorkerLedger[];
}

/** Epoch seconds, inclusive at both ends. */
export interface TimeWindow {
  from: number;
  to: number;
}

export const UNBOUNDED: TimeWindow = { from: Number.NEGATIVE_INFINITY, to: Number.POSITIVE_INFINITY };

/** One subagent transcript as stored. */
export interface SubagentTranscript {
  /** The store subpath (`subagents/agent-<id>`). */
  subpath: string;
  agentId: string;
  entries: readonly Entry[];
}

/** One main session with its subagents. */
export interface SessionTranscripts {
  sessionId: string;
  main: readonly Entry[];
  subagents: readonly SubagentTranscript[];
}

/** The read side of a session store, as the SDK's `SessionStore` has it. */
export interface TranscriptReader {
  load(key: SessionKey): Promise<readonly Entry[] | null>;
  listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]>;
}

const SYNTHETIC_MODEL = '<synthetic>';
const DISPATCH_TOOLS = new Set(['Agent', 'Task']);
const SUBAGENT_SUBPATH = /\/agent-([^/]+)$/;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const count = (value: unknown): number =>
  // Stryker disable next-line EqualityOperator: a count of 0 read as 0 is 0
  Number.isFinite(value) && (value as number) > 0 ? (value as number) : 0;

/** The agent id a subagent's store subpath names, or undefined for other subkeys. */
export function agentIdOf(subpath: string): string | undefined {
  if (!subpath.startsWith('subagents/')) return undefined;
  return SUBAGENT_SUBPATH.exec(subpath)?.[1];
}

/** The entry's time in epoch seconds, or undefined when it carries none. */
export function entryTime(entry: Entry): number | undefined {
  const stamp = entry.timestamp;
  if (typeof stamp !== 'string') return undefined;
  const ms = Date.parse(stamp);
  return Number.isFinite(ms) ? ms / 1000 : undefined;
}

/** Entries without a time of their own are kept: they cannot be placed, and they carry no usage. */
export function inWindow(entry: Entry, window: TimeWindow): boolean {
  // Stryker disable next-line ConditionalExpression: a shortcut only (no clock read); every time, and no time, is inside the unbounded window anyway
  if (window.from === Number.NEGATIVE_INFINITY && window.to === Number.POSITIVE_INFINITY) return true;
  const time = entryTime(entry);
  return time === undefined || (time >= window.from && time <= window.to);
}

/** True for the harness's stand-in turn when the API could not be reached. */
export function isSyntheticTurn(entry: Entry): boolean {
  if (entry.type !== 'assistant') return false;
  if (entry.isApiErrorMessage === true || entry.is_api_error_message === true) return true;
  return messageOf(entry)?.model === SYNTHETIC_MODEL;
}

/** One API response: the usage shared by its entries, and its model. */
export interface Response {
  id: string;
  model: string | undefined;
  usage: Record<string, unknown>;
  /** Epoch seconds of its last entry, when known. */
  at: number | undefined;
}

/**
 * The API responses among `entries`, in order of first appearance, each once. Entries without a
 * `message.id` are responses of their own.
 */
export function responsesOf(entries: readonly Entry[], window: TimeWindow = UNBOUNDED): Response[] {
  const byId = new Map<string, Response>();
  let anonymous = 0;
  for (const entry of entries) {
    if (entry.type !== 'assistant' || isSyntheticTurn(entry) || !inWindow(entry, window)) continue;
    const message = messageOf(entry);
    if (message === undefined) continue;
    // Stryker disable next-line UpdateOperator: counting down names them #0, #-1, … just as distinct
    const id = typeof message.id === 'string' && message.id !== '' ? message.id : `#${anonymous++}`;
    const usage = isRecord(message.usage) ? message.usage : {};
    const model = typeof message.model === 'string' ? message.model : undefined;
    // The later entries of a response were written after more of it had streamed in.
    const previous = byId.get(id);
    byId.set(id, { id, model: model ?? previous?.model, usage, at: entryTime(entry) ?? previous?.at });
  }
  return [...byId.values()];
}

/** The token counts of a response's usage, as the price table takes them. */
export function responseTokens(usage: Record<string, unknown>): ResponseTokens {
  const cacheCreation = isRecord(usage.cache_creation) ? usage.cache_creation : {};
  const serverTools = isRecord(usage.server_tool_use) ? usage.server_tool_use : {};
  return {
    input: count(usage.input_tokens),
    output: count(usage.output_tokens),
    cacheRead: count(usage.cache_read_input_tokens),
    cacheCreation: count(usage.cache_creation_input_tokens),
    cacheCreation1h: count(cacheCreation.ephemeral_1h_input_tokens),
    webSearches: count(serverTools.web_search_requests),
    usOnly: usage.inference_geo === 'us',
  };
}

/** The main-thread context a response's request carried: input + cache read + cache creation. */
export function contextOfResponse(response: Response): number {
  const tokens = responseTokens(response.usage);
  return tokens.input + tokens.cacheRead + tokens.cacheCreation;
}

/** Tool calls (tool_use blocks, each once) among `entries`, in order. */
export function toolCallsOf(
  entries: readonly Entry[],
  window: TimeWindow = UNBOUNDED,
): Array<{ id: string; name: string; input: Record<string, unknown> }> {
  const seen = new Set<string>();
  const calls: Array<{ id: string; name: string; input: Record<string, unknown> }> = [];
  for (const entry of entries) {
    if (entry.type !== 'assistant' || !inWindow(entry, window)) continue;
    for (const block of blocksOf(entry)) {
      if (!isToolUse(block) || seen.has(block.id)) continue;
      seen.add(block.id);
      calls.push({ id: block.id, name: block.name, input: isRecord(block.input) ? block.input : {} });
    }
  }
  return calls;
}

function mostFrequent(values: readonly string[]): string | null {
  const tally = new Map<string, number>();
  for (const value of values) tally.set(value, (tally.get(value) ?? 0) + 1);
  let best: string | null = null;
  let bestCount = 0;
  for (const [value, seen] of tally) {
    if (seen > bestCount) {
      best = value;
      bestCount = seen;
    }
  }
  return best;
}

/** Rounded to a millionth of a dollar: the precision the SDK reports. */
export function roundUsd(usd: number): number {
  return Math.round(usd * 1_000_000) / 1_000_000;
}

/** The ledger of one thread from its responses and tool calls. */
export function threadLedger(responses: readonly Response[], toolCalls: number): ThreadLedger {
  const totals: TokenCounts = {
    input_tokens: 0,
    output_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation_input_tokens: 0,
  };
  let cost: number | null = 0;
  for (const response of responses) {
    const tokens = responseTokens(response.usage);
    totals.input_tokens += tokens.input;
    totals.output_tokens += tokens.output;
    totals.cache_read_input_tokens += tokens.cacheRead;
    totals.cache_creation_input_tokens += tokens.cacheCreation;
    const prices = priceFor(response.model);
    cost = cost === null || prices === undefined ? null : cost + responseCost(tokens, prices);
  }
  const models = responses.map((response) => response.model).filter((model): model is string => !!model);
  return {
    model: mostFrequent(models),
    turns: responses.length,
    ...totals,
    cost_usd: cost === null ? null : roundUsd(cost),
    tool_calls: toolCalls,
  };
}

/** What the main thread says about its dispatches: Agent calls by id, and agent ids by call. */
interface Dispatches {
  calls: Map<string, Record<string, unknown>>;
  callOfAgent: Map<string, string>;
  callOfPrompt: Map<string, string>;
}

function dispatchesOf(main: readonly Entry[]): Dispatches {
  const calls = new Map<string, Record<string, unknown>>();
  const callOfAgent = new Map<string, string>();
  const callOfPrompt = new Map<string, string>();
  for (const entry of main) {
    for (const block of blocksOf(entry)) {
      if (isToolUse(block) && DISPATCH_TOOLS.has(block.name)) {
        const input = isRecord(block.input) ? block.input : {};
        calls.set(block.id, input);
        if (typeof input.prompt === 'string') callOfPrompt.set(input.prompt.trim(), block.id);
      } else if (isRecord(block) && block.type === 'tool_result' && typeof block.tool_use_id === 'string') {
        // The harness answers an Agent call with the id of the subagent it started.
        const result = entry.toolUseResult;
        // Stryker disable next-line ConditionalExpression: a non-string agentId is a key no subagent's (string) id ever looks up
        if (isRecord(result) && typeof result.agentId === 'string')
          callOfAgent.set(result.agentId, block.tool_use_id);
      }
    }
  }
  return { calls, callOfAgent, callOfPrompt };
}

/** The subagent's own account of itself: its metadata entry and first prompt. */
function subagentFacts(entries: readonly Entry[]): {
  toolUseId?: string;
  agentType?: string;
  description?: string;
  prompt?: string;
} {
  const facts: { toolUseId?: string; agentType?: string; description?: string; prompt?: string } = {};
  for (const entry of entries) {
    if (entry.type === 'agent_metadata') {
      if (typeof entry.toolUseId === 'string') facts.toolUseId = entry.toolUseId;
      if (typeof entry.agentType === 'string') facts.agentType = entry.agentType;
      if (typeof entry.description === 'string') facts.description = entry.description;
    } else if (facts.prompt === undefined && entry.type === 'user') {
      const content = messageOf(entry)?.content;
      if (typeof content === 'string') facts.prompt = content.trim();
    }
  }
  return facts;
}

function durationOf(entries: readonly Entry[], window: TimeWindow): number {
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  for (const entry of entries) {
    const time = entryTime(entry);
    if (time === undefined || time < window.from || time > window.to) continue;
    first = Math.min(first, time);
    last = Math.max(last, time);
  }
  // Stryker disable next-line EqualityOperator: when the first time is the last, both sides give 0
  return last >= first ? Math.round((last - first) * 100) / 100 : 0;
}

/** The ledger of one worker, or undefined when it did nothing inside the window. */
export function workerLedger(
  subagent: SubagentTranscript,
  dispatches: Dispatches,
  window: TimeWindow,
): WorkerLedger | undefined {
  const responses = responsesOf(subagent.entries, window);
  if (responses.length === 0) return undefined;
  const facts = subagentFacts(subagent.entries);
  const callId =
    dispatches.callOfAgent.get(subagent.agentId) ??
    facts.toolUseId ??
    // Stryker disable next-line ConditionalExpression: no prompt is a key of callOfPrompt, so get(undefined) is undefined too
    (facts.prompt === undefined ? undefined : dispatches.callOfPrompt.get(facts.prompt));
  // Stryker disable next-line ConditionalExpression: no call id is undefined, so get(undefined) is undefined too
  const input = callId === undefined ? undefined : dispatches.calls.get(callId);
  const described = typeof input?.description === 'string' ? input.description : facts.description;
  const type = typeof input?.subagent_type === 'string' ? input.subagent_type : facts.agentType;
  return {
    agent_id: subagent.agentId,
    agent_type: type ?? null,
    description: described ?? '',
    ...threadLedger(responses, toolCallsOf(subagent.entries, window).length),
    duration_s: durationOf(subagent.entries, window),
  };
}

/** The sessions with only their entries inside `window` (one pass, so later passes need no clock). */
export function windowed(sessions: readonly SessionTranscripts[], window: TimeWindow): SessionTranscripts[] {
  const keep = (entries: readonly Entry[]) => entries.filter((entry) => inWindow(entry, window));
  return sessions.map((session) => ({
    sessionId: session.sessionId,
    main: keep(session.main),
    subagents: session.subagents.map((subagent) => ({ ...subagent, entries: keep(subagent.entries) })),
  }));
}

/** The ledger of a step that ran in `sessions` during `window`. Pure. */
export function stepLedger(sessions: readonly SessionTranscripts[], window: TimeWindow): StepLedger {
  const mainResponses: Response[] = [];
  let mainToolCalls = 0;
  const workers: WorkerLedger[] = [];
  for (const session of sessions) {
    mainResponses.push(...responsesOf(session.main, window));
    mainToolCalls += toolCallsOf(session.main, window).length;
    const dispatches = dispatchesOf(session.main);
    for (const subagent of session.subagents) {
      const worker = workerLedger(subagent, dispatches, window);
      if (worker !== undefined) workers.push(worker);
    }
  }
  return { main: threadLedger(mainResponses, mainToolCalls), workers };
}

/** The sum of the ledger's dollars, or null when a thread could not be priced. */
export function ledgerCost(ledger: StepLedger): number | null {
  let total = ledger.main.cost_usd;
  for (const worker of ledger.workers) {
    total = total === null || worker.cost_usd === null ? null : total + worker.cost_usd;
  }
  return total === null ? null : roundUsd(total);
}

/** How the ledger compares with the step's own (SDK-reported) cost. */
export interface Reconciliation {
  sdk_usd: number;
  ledger_usd: number | null;
  /** `ledger_usd - sdk_usd`; null when the ledger has no dollar figure. */
  difference_usd: number | null;
}

/** The difference between the ledger and the SDK's figure for one step, shown rather than hidden. */
export function reconcile(sdkUsd: number, ledger: StepLedger): Reconciliation {
  const ledgerUsd = ledgerCost(ledger);
  return {
    sdk_usd: sdkUsd,
    ledger_usd: ledgerUsd,
    difference_usd: ledgerUsd === null ? null : roundUsd(ledgerUsd - sdkUsd),
  };
}

/**
 * The transcripts of `sessionIds` (main threads and every subagent), as stored. A session the
 * store does not have is left out.
 */
export async function readStepTranscripts(
  reader: TranscriptReader,
  projectKey: string,
  sessionIds: readonly string[],
): Promise<SessionTranscripts[]> {
  const sessions: SessionTranscripts[] = [];
  for (const sessionId of new Set(sessionIds)) {
    const main = await reader.load({ projectKey, sessionId });
    if (main === null) continue;
    const subagents: SubagentTranscript[] = [];
    for (const subpath of await reader.listSubkeys({ projectKey, sessionId })) {
      const agentId = agentIdOf(subpath);
      if (agentId === undefined) continue;
      const entries = await reader.load({ projectKey, sessionId, subpath });
      if (entries !== null) subagents.push({ subpath, agentId, entries });
    }
    sessions.push({ sessionId, main, subagents });
  }
  return sessions;
}

/** The sessions a step ran in: those its handoffs retired, oldest first, then the current one. */
export function stepSessions(row: { session_id?: unknown; retired?: unknown }): string[] {
  const retired = Array.isArray(row.retired) ? row.retired.filter((id) => typeof id === 'string') : [];
  const current = typeof row.session_id === 'string' && row.session_id !== '' ? [row.session_id] : [];
  return [...new Set([...retired, ...current])];
}

/**
 * The ledger of a step that ends now, read from the store; undefined when it cannot be read (the
 * books are a record of the work and must never fail it).
 */
export async function ledgerForStep(
  reader: TranscriptReader,
  projectKey: string,
  step: { sessionId: string | null; retired: readonly string[]; startedAt: number },
  endedAt: number,
): Promise<StepLedger | undefined> {
  try {
    const sessions = await readStepTranscripts(
      reader,
      projectKey,
      stepSessions({ session_id: step.sessionId, retired: step.retired }),
    );
    return stepLedger(sessions, { from: step.startedAt, to: endedAt });
  } catch {
    // No ledger: the step goes on without one.
  }
  return undefined;
}
