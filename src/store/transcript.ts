/**
 * Reading and copy-on-write editing of Claude Code transcript entries, shared by the rewrite
 * layers (expire, trim, prune).
 *
 * Invariants:
 * - Nothing here mutates its input. An edit returns a new entry (and new message, content array
 *   and block) while untouched entries are shared, so a rewrite costs in proportion to what it
 *   changes, not to the transcript's size.
 * - Entries are opaque JSON beyond the few fields read here; unknown entry types and unknown
 *   fields pass through as they are.
 * - Protected entries (`isCompactSummary`, `isMeta`) are the only surviving form of compacted
 *   history and of harness bookkeeping; the layers never change their content.
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

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

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

/** A tool_result block in an unprotected entry, in transcript order. */
export interface ToolResultSite {
  entryIndex: number;
  blockIndex: number;
  block: ToolResultBlock;
}

/** Every tool_result block the layers may rewrite, in transcript order. */
export function toolResultSites(entries: readonly Entry[]): ToolResultSite[] {
  const sites: ToolResultSite[] = [];
  entries.forEach((entry, entryIndex) => {
    if (isProtected(entry)) return;
    const content = messageOf(entry)?.content;
    if (!Array.isArray(content)) return;
    content.forEach((block, blockIndex) => {
      if (isToolResult(block)) sites.push({ entryIndex, blockIndex, block });
    });
  });
  return sites;
}

/** Return a copy of `entry` whose message content is `content`. */
export function withContent(entry: Entry, content: unknown[]): Entry {
  return { ...entry, message: { ...messageOf(entry), content } };
}

/**
 * Apply block replacements (keyed by site) and return the new entry list. Only the blocks named
 * are replaced; the tool_result block itself always stays, which is the API's first red line.
 */
export function replaceBlocks(
  entries: readonly Entry[],
  replacements: ReadonlyArray<{ site: ToolResultSite; block: ContentBlock }>,
): Entry[] {
  if (replacements.length === 0) return [...entries];
  const byEntry = new Map<number, Map<number, ContentBlock>>();
  for (const { site, block } of replacements) {
    const blocks = byEntry.get(site.entryIndex) ?? new Map<number, ContentBlock>();
    blocks.set(site.blockIndex, block);
    byEntry.set(site.entryIndex, blocks);
  }
  return entries.map((entry, entryIndex) => {
    const blocks = byEntry.get(entryIndex);
    if (blocks === undefined) return entry;
    const content = contentListOf(entry);
    return withContent(
      entry,
      content.map((block, blockIndex) => blocks.get(blockIndex) ?? block),
    );
  });
}
