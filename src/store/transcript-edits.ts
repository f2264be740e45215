/**
 * The edits the rewrite layers plan against a transcript index, and the one pass that applies
 * them: block rewrites, block removals, dropped entries (with the chain relinked around them) and
 * inserted entries (with the next entry re-pointed to them).
 *
 * Layers run in order and each sees what the earlier ones decided (`blockAt`), exactly as if every
 * layer had produced a new transcript, but nothing is copied until `apply`: a resume pays for one
 * walk over the entries plus a copy of each entry that actually changed.
 *
 * Invariants (the API's and the harness's red lines, kept here so no layer can forget them):
 * 1. A tool_result block is never removed by a rewrite; only `removeBlocks`, which prune uses to
 *    take a denied call's tool_use and tool_result out together (or a result nothing asked for).
 * 2. Protected entries are never edited: the index offers no site in them, and `apply` only ever
 *    re-points their `parentUuid`.
 * 3. A dropped entry's children are re-pointed to its nearest surviving ancestor: the harness
 *    walks `parentUuid` back from the leaf, and a break silently loses everything before it.
 * 4. An entry whose result was rewritten loses the harness's second copy of the old text
 *    (`toolUseResult`): every string there longer than the new content becomes the new content.
 *    The copy stays present (the harness reads "a user entry without `toolUseResult`" as a human
 *    turn) and keeps its shape and short fields (ids, paths, flags); the model never receives it.
 * 5. Untouched entries are passed through as the same objects; input entries are never mutated.
 */
import { createHash } from 'node:crypto';
import {
  type ContentBlock,
  contentListOf,
  type Entry,
  messageOf,
  type ToolUseBlock,
  type TranscriptIndex,
} from './transcript.js';

/** Where a block sits: an entry position and a block position in its content list. */
export interface BlockSite {
  entryIndex: number;
  blockIndex: number;
  block: ContentBlock;
}

/** What `removeBlocks` did. */
export type Removal = 'removed' | 'dropped' | 'kept';

/** Fields a synthetic entry copies from the entry it follows, so the harness accepts it as a peer. */
const CONTEXT_FIELDS = [
  'sessionId',
  'cwd',
  'gitBranch',
  'version',
  'agentId',
  'isSidechain',
  'userType',
  'entrypoint',
  'timestamp',
];

/** Nesting deeper than this in a duplicate copy is left alone (the harness's copies are shallow). */
const DUPLICATE_DEPTH = 6;

export class TranscriptEdits {
  /** entry → block → replacement (null: removed). */
  private readonly blocks = new Map<number, Map<number, ContentBlock | null>>();
  /** entry → the new content of its rewritten result, which also replaces the duplicate copy. */
  private readonly rewritten = new Map<number, string>();
  /** Entries that lost blocks: their duplicate copy described the old block list and goes. */
  private readonly copyRemoved = new Set<number>();
  private readonly dropped = new Set<number>();
  private readonly inserted = new Map<number, Entry>();

  constructor(readonly index: TranscriptIndex) {}

  /** The block at `site` as the layers so far left it; null when it was removed. */
  blockAt(site: BlockSite): ContentBlock | null {
    const replaced = this.blocks.get(site.entryIndex)?.get(site.blockIndex);
    return replaced === undefined ? site.block : replaced;
  }

  isDropped(entryIndex: number): boolean {
    return this.dropped.has(entryIndex);
  }

  /** A result's content becomes `content` (expire, trim); the block itself stays. */
  rewriteResult(site: BlockSite, content: string): void {
    this.replaceBlock(site, { ...(this.blockAt(site) ?? site.block), content });
    this.rewritten.set(site.entryIndex, content);
  }

  /** Replace one block with another of the same kind. */
  replaceBlock(site: BlockSite, block: ContentBlock): void {
    this.blocksOf(site.entryIndex).set(site.blockIndex, block);
  }

  /**
   * Remove blocks from an entry. An entry left with no blocks is dropped when it has a uuid (its
   * children are relinked); one without a uuid cannot be bridged and is kept as it is.
   */
  removeBlocks(entryIndex: number, blockIndexes: readonly number[]): Removal {
    const entry = this.index.entries[entryIndex] as Entry;
    const edits = this.blocks.get(entryIndex);
    const fresh = blockIndexes.filter((blockIndex) => edits?.get(blockIndex) !== null);
    let remaining = contentListOf(entry).length - fresh.length;
    for (const replacement of edits?.values() ?? []) if (replacement === null) remaining -= 1;
    if (remaining <= 0) {
      if (typeof entry.uuid !== 'string') return 'kept';
      this.dropped.add(entryIndex);
      return 'dropped';
    }
    const target = this.blocksOf(entryIndex);
    for (const blockIndex of fresh) target.set(blockIndex, null);
    this.copyRemoved.add(entryIndex);
    return 'removed';
  }

  /** Leave the entry out; its children are re-pointed to its nearest surviving ancestor. */
  drop(entryIndex: number): void {
    this.dropped.add(entryIndex);
  }

  /**
   * Insert one user entry right after `entryIndex` answering `uses` with `text`, and re-point
   * that entry's first child to it. The new uuid is derived from the calls, so loading twice
   * yields the same transcript.
   */
  answerAfter(entryIndex: number, uses: readonly ToolUseBlock[], text: string): void {
    const entry = this.index.entries[entryIndex] as Entry;
    const owner = typeof entry.uuid === 'string' ? entry.uuid : null;
    const context = Object.fromEntries(
      CONTEXT_FIELDS.filter((field) => field in entry).map((field) => [field, entry[field]]),
    );
    this.inserted.set(entryIndex, {
      ...context,
      type: 'user',
      uuid: derivedUuid(`heal:${owner}:${uses.map((block) => block.id).join(',')}`),
      parentUuid: owner,
      message: {
        role: 'user',
        content: uses.map((block) => ({
          type: 'tool_result',
          tool_use_id: block.id,
          content: text,
          is_error: false,
        })),
      },
    });
  }

  /** The rewritten transcript (see the module header for what is guaranteed). */
  apply(): Entry[] {
    const { entries } = this.index;
    if (this.blocks.size === 0 && this.dropped.size === 0 && this.inserted.size === 0) return [...entries];
    const survivor = this.survivorLookup();
    const output: Entry[] = [];
    const repoint = new Map<string, string>(); // entry uuid → uuid of the entry inserted after it
    for (let entryIndex = 0; entryIndex < entries.length; entryIndex += 1) {
      if (this.dropped.has(entryIndex)) continue;
      let entry = this.edited(entryIndex);
      const parent = entry.parentUuid;
      let newParent = typeof parent === 'string' ? survivor(parent) : parent;
      if (typeof newParent === 'string') {
        const insertedChild = repoint.get(newParent);
        if (insertedChild !== undefined) {
          repoint.delete(newParent);
          newParent = insertedChild;
        }
      }
      if (newParent !== parent) entry = { ...entry, parentUuid: newParent };
      output.push(entry);
      const next = this.inserted.get(entryIndex);
      if (next === undefined) continue;
      output.push(next);
      if (typeof entry.uuid === 'string') repoint.set(entry.uuid, next.uuid as string);
    }
    return output;
  }

  private blocksOf(entryIndex: number): Map<number, ContentBlock | null> {
    let edits = this.blocks.get(entryIndex);
    if (edits === undefined) {
      edits = new Map();
      this.blocks.set(entryIndex, edits);
    }
    return edits;
  }

  /** The entry with its block edits and duplicate-copy rule applied (the same object if none). */
  private edited(entryIndex: number): Entry {
    const entry = this.index.entries[entryIndex] as Entry;
    const edits = this.blocks.get(entryIndex);
    if (edits === undefined) return entry;
    const original = contentListOf(entry);
    const content: unknown[] = [];
    let results = 0;
    for (let blockIndex = 0; blockIndex < original.length; blockIndex += 1) {
      const replacement = edits.get(blockIndex);
      const block = replacement === undefined ? original[blockIndex] : replacement;
      if (block === null) continue;
      content.push(block);
      if ((block as ContentBlock).type === 'tool_result') results += 1;
    }
    const changed: Entry = { ...entry, message: { ...messageOf(entry), content } };
    if (this.copyRemoved.has(entryIndex)) {
      delete changed.toolUseResult;
      return changed;
    }
    const text = this.rewritten.get(entryIndex);
    // Only the harness's shape (one result per entry) says whose copy `toolUseResult` is.
    if (text !== undefined && results === 1 && changed.toolUseResult !== undefined)
      changed.toolUseResult = withoutDuplicates(changed.toolUseResult, text, DUPLICATE_DEPTH);
    return changed;
  }

  /** Maps a parent uuid to itself, or to the nearest ancestor that was not dropped (cycle-safe). */
  private survivorLookup(): (uuid: string) => string | null {
    const parentOf = new Map<string, string | null>();
    for (const entryIndex of this.dropped) {
      const entry = this.index.entries[entryIndex] as Entry;
      if (typeof entry.uuid === 'string')
        parentOf.set(entry.uuid, (entry.parentUuid as string | null | undefined) ?? null);
    }
    return (start) => {
      if (!parentOf.has(start)) return start;
      const seen = new Set<string>();
      let current: string | null = start;
      while (current !== null && parentOf.has(current) && !seen.has(current)) {
        seen.add(current);
        current = parentOf.get(current) ?? null;
      }
      return current !== null && parentOf.has(current) ? null : current;
    };
  }
}

/** `value` with every string longer than `text` replaced by `text` (the same object if none is). */
function withoutDuplicates(value: unknown, text: string, depth: number): unknown {
  if (typeof value === 'string') return value.length > text.length ? text : value;
  if (depth <= 0 || typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    let items: unknown[] | undefined;
    for (let position = 0; position < value.length; position += 1) {
      const replaced = withoutDuplicates(value[position], text, depth - 1);
      if (replaced === value[position]) continue;
      items ??= [...value];
      items[position] = replaced;
    }
    return items ?? value;
  }
  const record = value as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined;
  for (const field in record) {
    const replaced = withoutDuplicates(record[field], text, depth - 1);
    if (replaced === record[field]) continue;
    copy ??= { ...record };
    copy[field] = replaced;
  }
  return copy ?? value;
}

/** A uuid-shaped id derived from its inputs. */
function derivedUuid(seed: string): string {
  const hex = createHash('sha256').update(seed).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
