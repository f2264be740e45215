/**
 * Reading Claude Code transcript entries, and the one pass over a transcript that tells the rewrite
 * layers (expire, trim, prune) everything they look at.
 *
 * Invariants:
 * - Nothing here mutates its input.
 * - Entries are opaque JSON beyond the few fields read here; unknown entry types and unknown
 *   fields pass through as they are.
 * - Protected entries (`isCompactSummary`, `isMeta`) are the only surviving form of compacted
 *   history and of harness bookkeeping; the layers never change their content, so their
 *   tool_result blocks are not among the `results` the index offers for rewriting.
 * - `indexTranscript` reads each entry once, and only user and assistant entries beyond their
 *   type: the others (attachments, bookkeeping) hold no message blocks the layers change. A resume of a ten-hour run walks 20,000 entries of
 *   a dozen different shapes, and every extra pass over them costs as much as a layer's whole
 *   work (measured: five separate passes took longer than parsing the rows).
 */
import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';

export type Entry = SessionStoreEntry;

/** One block of a message's `content` array; only `type` is known for certain. */
export type ContentBlock = { type: string; [field: string]: unknown };

export type ToolUseBlock = ContentBlock & { type: 'tool_use'; id: string; name: string; input?: unknown };

export type ToolResultBlock = ContentBlock & {
  type: 'tool_result';
  tool_use_id: string;
  content?: unknown;
  is_error?: boolean;
};

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The entry a stored row's text holds, or undefined when it is not a JSON object. */
export function parseStoredEntry(text: string): SessionStoreEntry | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // Not JSON: `value` stays undefined, which is no entry.
  }
  return isRecord(value) ? (value as SessionStoreEntry) : undefined;
}

export function isProtected(entry: Entry): boolean {
  return entry.isCompactSummary === true || entry.isMeta === true;
}

/** The entry's `message` object, if it has one. */
export function messageOf(entry: Entry): Record<string, unknown> | undefined {
  return isRecord(entry.message) ? entry.message : undefined;
}

/** The entry's raw content list, or an empty list when its content is a string or absent. */
export function contentListOf(entry: Entry): unknown[] {
  const content = messageOf(entry)?.content;
  return Array.isArray(content) ? content : [];
}

/**
 * The entry's content blocks, or an empty list when its content is a string or absent. Elements
 * are not filtered (that would copy every list on every load); the type guards below accept
 * anything and check the shape themselves.
 */
export function blocksOf(entry: Entry): readonly unknown[] {
  return contentListOf(entry);
}

export function isToolUse(block: unknown): block is ToolUseBlock {
  return isRecord(block) && block.type === 'tool_use' && typeof block.id === 'string';
}

export function isToolResult(block: unknown): block is ToolResultBlock {
  return isRecord(block) && block.type === 'tool_result' && typeof block.tool_use_id === 'string';
}

/**
 * The plain text of a tool result, or null when it is not plain text: a string is itself, a list
 * of blocks is its text blocks joined, and a list holding an image or document is never text
 * (those must reach the model as they are).
 */
export function toolResultText(block: ToolResultBlock): string | null {
  const { content } = block;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return null;
  let text: string | null = null;
  for (const part of content) {
    if (!isRecord(part)) continue;
    if (part.type === 'image' || part.type === 'document') return null;
    if (part.type === 'text' && typeof part.text === 'string') text = (text ?? '') + part.text;
  }
  return text;
}

/**
 * The stand-in for a stored row that is not a JSON object. The rewriting store puts one where the
 * row was, with the row's uuid and, as its parent, the uuid of the entry before it (the harness
 * appends a transcript in chain order); prune drops it and relinks the chain around it.
 */
const UNREADABLE_ROW = 'flower-unreadable-row';

export function unreadableRowPlaceholder(uuid: string | null, parentUuid: string | null, seq: number): Entry {
  return { type: UNREADABLE_ROW, ...(uuid === null ? {} : { uuid }), parentUuid, seq };
}

/** A tool_result block of an unprotected entry, in transcript order. */
export interface ToolResultSite {
  entryIndex: number;
  blockIndex: number;
  block: ToolResultBlock;
}

/** A tool_use block of an unprotected entry, in transcript order. */
export interface ToolUseSite {
  entryIndex: number;
  blockIndex: number;
  block: ToolUseBlock;
}

/**
 * What the layers need to know about a transcript, gathered in one pass. Sites point into
 * `entries` by position; the blocks are the originals (edits live in `TranscriptEdits`).
 */
export interface TranscriptIndex {
  readonly entries: readonly Entry[];
  /** tool_result blocks of unprotected entries: the only results the layers may rewrite. */
  readonly results: readonly ToolResultSite[];
  /** tool_use blocks of unprotected entries (the ones healing may answer). */
  readonly toolUses: readonly ToolUseSite[];
  /** Every tool_use block by id, protected entries included: "was this result ever asked for". */
  readonly toolUseById: ReadonlyMap<string, ToolUseBlock>;
  /** Unprotected assistant entries with the harness's synthetic API-error marks. */
  readonly apiErrors: readonly number[];
  /** Unprotected entries a permission rule denied, with the tool_use id their result answers. */
  readonly denials: ReadonlyArray<{ entryIndex: number; toolUseId: string }>;
  /**
   * Every id a tool_result answers, anywhere. (A result the layers remove is either a denied
   * call's, whose tool_use goes with it, or a stray one that answers no tool_use: no removal
   * leaves a call unanswered that this set calls answered.)
   */
  readonly answered: ReadonlySet<string>;
  /** Positions of `unreadableRowPlaceholder` entries. */
  readonly unreadable: readonly number[];
  /** How many tool_result blocks each entry holds (255 stands for 255 or more). */
  readonly resultCounts: Uint8Array;
  /**
   * The harness's second copy of each result entry's output (`toolUseResult`), read while the
   * entry is at hand: rewriting it later then does not have to visit thousands of entries again.
   */
  readonly copies: ReadonlyArray<unknown>;
}

/** The text the binary writes, model `<synthetic>`, when a turn needs an assistant reply but none was asked for. */
export const NO_RESPONSE_FILLER = 'No response requested.';

/** A message's content as one text: a string, or exactly one text block (as the binary reads it). */
function soleText(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content) || content.length !== 1) return undefined;
  const block: unknown = content[0];
  return isRecord(block) && block.type === 'text' && typeof block.text === 'string' ? block.text : undefined;
}

/**
 * The harness's "API Error: …" turn: flagged `isApiErrorMessage`, or model `<synthetic>`, except
 * the binary's own filler (model `<synthetic>`, unflagged, text exactly `NO_RESPONSE_FILLER`),
 * which keeps the turn order the binary expects and is conversation, not an error.
 */
function isApiErrorTurn(entry: Entry, message: Record<string, unknown>): boolean {
  return isHarnessErrorTurn(entry.isApiErrorMessage === true, message);
}

/**
 * The one rule for "this assistant message is the harness's API-error turn", for stored entries
 * and for the live stream alike (`flagged`: the entry's or the wire's api-error mark).
 */
export function isHarnessErrorTurn(flagged: boolean, message: unknown): boolean {
  if (flagged) return true;
  if (!isRecord(message) || message.model !== '<synthetic>') return false;
  return soleText(message.content) !== NO_RESPONSE_FILLER;
}

export function indexTranscript(entries: readonly Entry[]): TranscriptIndex {
  const results: ToolResultSite[] = [];
  const toolUses: ToolUseSite[] = [];
  const toolUseById = new Map<string, ToolUseBlock>();
  const apiErrors: number[] = [];
  const denials: Array<{ entryIndex: number; toolUseId: string }> = [];
  const answered = new Set<string>();
  const unreadable: number[] = [];
  const resultCounts = new Uint8Array(entries.length);
  const copies: unknown[] = new Array(entries.length);
  for (let entryIndex = 0; entryIndex < entries.length; entryIndex += 1) {
    const entry = entries[entryIndex] as Entry;
    // Only conversation entries hold blocks the layers look at. Checking the type first keeps
    // the other dozen entry shapes to one property read each (measured: a third of the pass).
    const type = entry.type;
    if (type !== 'user' && type !== 'assistant') {
      if (type === UNREADABLE_ROW) unreadable.push(entryIndex);
      continue;
    }
    const message = entry.message;
    if (!isRecord(message)) continue;
    const guarded = isProtected(entry);
    if (type === 'assistant' && !guarded && isApiErrorTurn(entry, message)) apiErrors.push(entryIndex);
    const content = message.content;
    if (!Array.isArray(content)) continue;
    let deniedId: string | undefined;
    for (let blockIndex = 0; blockIndex < content.length; blockIndex += 1) {
      const block: unknown = content[blockIndex];
      if (typeof block !== 'object' || block === null) continue;
      const blockType = (block as ContentBlock).type;
      if (blockType === 'tool_use') {
        if (!isToolUse(block)) continue;
        if (!toolUseById.has(block.id)) toolUseById.set(block.id, block);
        if (!guarded) toolUses.push({ entryIndex, blockIndex, block });
      } else if (blockType === 'tool_result') {
        if (!isToolResult(block)) continue;
        const count = resultCounts[entryIndex] as number;
        if (count < 255) resultCounts[entryIndex] = count + 1;
        answered.add(block.tool_use_id);
        if (!guarded) {
          results.push({ entryIndex, blockIndex, block });
          deniedId ??= block.tool_use_id;
        }
      }
    }
    if (deniedId === undefined) continue;
    copies[entryIndex] = entry.toolUseResult;
    // The harness's structural marker, not the wording of the denial, says a rule refused the call.
    if (entry.toolDenialKind === 'permission-rule') denials.push({ entryIndex, toolUseId: deniedId });
  }
  return {
    entries,
    results,
    toolUses,
    toolUseById,
    apiErrors,
    denials,
    answered,
    unreadable,
    resultCounts,
    copies,
  };
}
