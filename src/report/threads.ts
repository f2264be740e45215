/**
 * What a step's transcripts say, side by side for the main thread (the coordinator) and the
 * workers: entries, turns, characters, tokens, tools, denials, the context curve and the outages.
 * This is the measurement the published case studies were written from (main vs subagents,
 * context curve, cache hit ratio, tool counts, denials).
 *
 * Invariants:
 * - One pass over each transcript, in the step's time window; nothing is read here (see
 *   `run-data.ts`). Responses count once, as in the ledger (`runtime/ledger.ts`).
 * - "Characters" are the body of what was said and done: text, thinking, the values of tool inputs, tool
 *   results — not the harness's bookkeeping entries.
 * - The context curve is the main thread's only: input + cache read + cache creation of each
 *   response, numbered through the step, a new generation starting at each handoff.
 * - Pure.
 */
import {
  contextOfResponse,
  inWindow,
  type Response,
  responsesOf,
  responseTokens,
  type SessionTranscripts,
  type TimeWindow,
} from '../runtime/ledger.js';
import {
  blocksOf,
  type Entry,
  isToolResult,
  isToolUse,
  messageOf,
  toolResultText,
} from '../store/transcript.js';
import { textsOf, turnsIn } from './conversation.js';

export interface SideStats {
  entries: number;
  turns: number;
  chars: number;
  /** Input + output + cache read + cache creation. */
  tokens: number;
  tool_calls: number;
  /** Tool name → calls. */
  tools: Record<string, number>;
}

export interface CurvePoint {
  /** Main-thread response number within the step (1-based). */
  turn: number;
  /** Context the response's request carried. */
  tokens: number;
  /** Epoch seconds, when known. */
  at: number | null;
}

export interface Generation {
  generation: number;
  session_id: string;
  points: CurvePoint[];
}

export interface ContextDrop {
  generation: number;
  turn: number;
  from: number;
  to: number;
}

export interface Outage {
  /** Epoch seconds, when known. */
  at: number | null;
  side: 'main' | 'worker';
  text: string;
}

export interface CacheTokens {
  input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}

export interface StepThreads {
  main: SideStats;
  workers: SideStats;
  generations: Generation[];
  drops: ContextDrop[];
  cache: CacheTokens;
  /** Main-thread calls a guard refused. */
  denials: number;
  /** First word of each main-thread Bash command → how often. */
  bash_first_words: Record<string, number>;
  outages: Outage[];
}

/** A context drop worth pointing at: the next response carried less than 70 % of the one before. */
export const DROP_FRACTION = 0.7;

export function emptySide(): SideStats {
  return { entries: 0, turns: 0, chars: 0, tokens: 0, tool_calls: 0, tools: {} };
}

/**
 * Adds `calls` to `table[name]`. The model names its tools and commands: a name such as
 * `constructor` or `__proto__` must count like any other, not read or set what a plain object
 * inherits.
 */
export function addCount(table: Record<string, number>, name: string, calls = 1): void {
  const before = Object.hasOwn(table, name) ? (table[name] ?? 0) : 0;
  Object.defineProperty(table, name, {
    value: before + calls,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/** Characters of the strings inside a tool input (its keys and JSON punctuation are not said). */
function inputChars(value: unknown): number {
  if (typeof value === 'string') return value.length;
  if (typeof value !== 'object' || value === null) return value === undefined ? 0 : String(value).length;
  let chars = 0;
  for (const item of Array.isArray(value) ? value : Object.values(value)) chars += inputChars(item);
  return chars;
}

function bodyChars(entry: Entry): number {
  const content = messageOf(entry)?.content;
  if (typeof content === 'string') return content.length;
  let chars = 0;
  for (const block of blocksOf(entry)) {
    if (isToolUse(block)) chars += inputChars(block.input);
    else if (isToolResult(block)) chars += toolResultText(block)?.length ?? 0;
    else if (typeof block === 'object' && block !== null) {
      const fields = block as { text?: unknown; thinking?: unknown };
      if (typeof fields.text === 'string') chars += fields.text.length;
      if (typeof fields.thinking === 'string') chars += fields.thinking.length;
    }
  }
  return chars;
}

/** The command word of a shell command: after `VAR=value` assignments, without a path. */
export function commandWord(command: string): string {
  const words = command.trim().split(/\s+/);
  const word = words.find((token) => !/^[A-Za-z_][A-Za-z0-9_]*=/.test(token)) ?? '';
  return word.replace(/^.*\//, '') || '(empty)';
}

/** Adds one transcript's entries inside `window` to `side`; returns its responses. */
function tally(
  side: SideStats,
  entries: readonly Entry[],
  window: TimeWindow,
  onCall?: (name: string, input: Record<string, unknown>) => void,
  onOutage?: (entry: Entry) => void,
): Response[] {
  const seenCalls = new Set<string>();
  for (const { entry, synthetic } of turnsIn(entries, window)) {
    if (synthetic) {
      onOutage?.(entry);
      continue;
    }
    side.entries += 1;
    side.chars += bodyChars(entry);
    if (entry.type !== 'assistant') continue;
    for (const block of blocksOf(entry)) {
      if (!isToolUse(block) || seenCalls.has(block.id)) continue;
      seenCalls.add(block.id);
      side.tool_calls += 1;
      addCount(side.tools, block.name);
      onCall?.(block.name, (block.input ?? {}) as Record<string, unknown>);
    }
  }
  const responses = responsesOf(entries, window);
  side.turns += responses.length;
  for (const response of responses) {
    const tokens = responseTokens(response.usage);
    side.tokens += tokens.input + tokens.output + tokens.cacheRead + tokens.cacheCreation;
  }
  return responses;
}

function outageOf(entry: Entry, side: 'main' | 'worker'): Outage {
  const stamp = typeof entry.timestamp === 'string' ? Date.parse(entry.timestamp) : Number.NaN;
  return {
    at: Number.isFinite(stamp) ? stamp / 1000 : null,
    side,
    text: (textsOf(entry)[0] ?? '').split('\n')[0]?.slice(0, 300) ?? '',
  };
}

/** The measurements of one step over its sessions (in generation order) inside `window`. */
export function stepThreads(sessions: readonly SessionTranscripts[], window: TimeWindow): StepThreads {
  const result: StepThreads = {
    main: emptySide(),
    workers: emptySide(),
    generations: [],
    drops: [],
    cache: { input_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
    denials: 0,
    bash_first_words: {},
    outages: [],
  };
  let turn = 0;
  sessions.forEach((session, index) => {
    const responses = tally(
      result.main,
      session.main,
      window,
      (name, input) => {
        if (name !== 'Bash' || typeof input.command !== 'string') return;
        const word = commandWord(input.command);
        addCount(result.bash_first_words, word);
      },
      (entry) => result.outages.push(outageOf(entry, 'main')),
    );
    for (const entry of session.main) {
      if (entry.toolDenialKind === 'permission-rule' && inWindow(entry, window)) result.denials += 1;
    }
    const generation: Generation = { generation: index + 1, session_id: session.sessionId, points: [] };
    let previous: number | undefined;
    for (const response of responses) {
      turn += 1;
      const tokens = contextOfResponse(response);
      const usage = responseTokens(response.usage);
      result.cache.input_tokens += usage.input;
      result.cache.cache_read_input_tokens += usage.cacheRead;
      result.cache.cache_creation_input_tokens += usage.cacheCreation;
      if (tokens <= 0) continue;
      if (previous !== undefined && tokens < previous * DROP_FRACTION)
        result.drops.push({ generation: generation.generation, turn, from: previous, to: tokens });
      generation.points.push({ turn, tokens, at: response.at ?? null });
      previous = tokens;
    }
    result.generations.push(generation);
    for (const subagent of session.subagents) {
      const workerResponses = tally(result.workers, subagent.entries, window, undefined, (entry) =>
        result.outages.push(outageOf(entry, 'worker')),
      );
      for (const response of workerResponses) {
        const usage = responseTokens(response.usage);
        result.cache.input_tokens += usage.input;
        result.cache.cache_read_input_tokens += usage.cacheRead;
        result.cache.cache_creation_input_tokens += usage.cacheCreation;
      }
    }
  });
  return result;
}

/** Cache read over all input the requests carried; null when there was none. */
export function cacheHitRatio(cache: CacheTokens): number | null {
  const total = cache.input_tokens + cache.cache_read_input_tokens + cache.cache_creation_input_tokens;
  return total > 0 ? cache.cache_read_input_tokens / total : null;
}

/** `a` plus `b`, field by field (tool counts merged). */
export function addSides(a: SideStats, b: SideStats): SideStats {
  const tools = { ...a.tools };
  for (const [name, calls] of Object.entries(b.tools)) addCount(tools, name, calls);
  return {
    entries: a.entries + b.entries,
    turns: a.turns + b.turns,
    chars: a.chars + b.chars,
    tokens: a.tokens + b.tokens,
    tool_calls: a.tool_calls + b.tool_calls,
    tools,
  };
}

/**
 * At most `limit` points of a curve, keeping its shape: the lowest and highest point of each
 * bucket, plus every point in `keep` (turns where a drop or a handoff must stay visible). A long
 * run has tens of thousands of responses; the page must stay small and a chart cannot show more.
 */
export function downsample(
  points: readonly CurvePoint[],
  limit: number,
  keep: ReadonlySet<number> = new Set(),
): CurvePoint[] {
  if (points.length <= limit) return [...points];
  const buckets = Math.max(1, Math.floor(limit / 2));
  const size = points.length / buckets;
  const chosen = new Set<number>([0, points.length - 1]);
  for (let bucket = 0; bucket < buckets; bucket += 1) {
    const start = Math.floor(bucket * size);
    const end = Math.min(points.length, Math.floor((bucket + 1) * size));
    let low = start;
    let high = start;
    for (let index = start; index < end; index += 1) {
      const tokens = (points[index] as CurvePoint).tokens;
      if (tokens < (points[low] as CurvePoint).tokens) low = index;
      if (tokens > (points[high] as CurvePoint).tokens) high = index;
    }
    chosen.add(low);
    chosen.add(high);
  }
  points.forEach((point, index) => {
    if (keep.has(point.turn)) chosen.add(index);
  });
  return [...chosen].sort((a, b) => a - b).map((index) => points[index] as CurvePoint);
}
