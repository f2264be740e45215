/**
 * The edits the rewrite layers plan against a transcript index, and the one pass that applies
 * them: block rewrites, block removals, dropped entries (with the chain relinked around them) and
 * inserted entries (under the stored uuid of the entry they follow, which gets a new one).
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
 * 5. Untouched entries are passed through as the same objects. Input entries are never changed,
 *    unless `apply` is told they are the caller's to change (`inPlace`: entries a backend has just
 *    parsed for this load and nobody else holds): then the changed ones are edited where they are
 *    instead of copied, which on a ten-hour transcript saves copying thousands of entries.
 * 6. Every parent an entry of the output names that is not an entry of the input is a parent of
 *    input entries only, never a leaf's uuid: an inserted entry takes the stored uuid of the entry
 *    it follows (see `answerAfter`), so whatever the binary links to the newest entry it was fed
 *    is linked to an entry the store holds, and the stored transcript stays a chain on its own.
 */
import { createHash } from 'node:crypto';
import {
  type ContentBlock,
  contentListOf,
  type Entry,
  isProtected,
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

/** Replacements for an entry's blocks by position (null: removed, a hole: unchanged). */
type BlockEdits = Array<ContentBlock | null | undefined>;

export interface EditOptions {
  /**
   * The entries are the caller's to change (freshly parsed for this load, held by nobody else):
   * blocks are changed where they are, not copied (see the module header).
   */
  inPlace?: boolean;
}

export class TranscriptEdits {
  readonly inPlace: boolean;
  /**
   * Block edits by entry position: a small array per edited entry in one array over the
   * transcript (a resume edits thousands of entries; a map each was a measurable share of its
   * work and garbage). In place, only removals are kept here; changed blocks are changed.
   */
  private readonly edits: Array<BlockEdits | undefined>;
  private readonly editedEntries: number[] = [];
  /** entry → how many of its blocks were removed. */
  private readonly removals = new Map<number, number>();
  /** entry → the new content of its rewritten result, which also replaces the duplicate copy. */
  private readonly rewritten = new Map<number, string>();
  /** Entries that lost blocks: their duplicate copy described the old block list and goes. */
  private readonly copyRemoved = new Set<number>();
  /** Entries left out, as a flag per position (looked up once per entry in `apply`). */
  private readonly dropped: Uint8Array;
  private droppedCount = 0;
  private readonly inserted = new Map<number, Entry>();
  /** entry → the uuid it gets because an inserted entry took over its own (`answerAfter`). */
  private readonly renamed = new Map<number, string>();

  constructor(
    readonly index: TranscriptIndex,
    options: EditOptions = {},
  ) {
    this.inPlace = options.inPlace ?? false;
    this.dropped = new Uint8Array(index.entries.length);
    this.edits = new Array(index.entries.length);
  }

  /** The block at `site` as the layers so far left it; null when it was removed. */
  blockAt(site: BlockSite): ContentBlock | null {
    const replaced = this.edits[site.entryIndex]?.[site.blockIndex];
    return replaced === undefined ? site.block : replaced;
  }

  isDropped(entryIndex: number): boolean {
    return this.dropped[entryIndex] === 1;
  }

  /** A result's content becomes `content` (expire, trim); the block itself stays. */
  rewriteResult(site: BlockSite, content: string): void {
    if (this.inPlace) site.block.content = content;
    else this.patchBlock(site, { content });
    this.rewritten.set(site.entryIndex, content);
  }

  /** Change some fields of one block (it stays the same kind of block). */
  patchBlock(site: BlockSite, fields: Record<string, unknown>): void {
    if (this.inPlace) Object.assign(site.block, fields);
    else
      this.setBlock(site.entryIndex, site.blockIndex, { ...(this.blockAt(site) ?? site.block), ...fields });
  }

  /**
   * Remove blocks from an entry. An entry left with no blocks is dropped when it has a uuid (its
   * children are relinked); one without a uuid cannot be bridged and is kept as it is.
   */
  removeBlocks(entryIndex: number, blockIndexes: readonly number[]): Removal {
    const entry = this.index.entries[entryIndex] as Entry;
    const fresh = blockIndexes.filter((blockIndex) => this.edits[entryIndex]?.[blockIndex] !== null);
    const removed = this.removals.get(entryIndex) ?? 0;
    if (contentListOf(entry).length - removed - fresh.length <= 0) {
      if (typeof entry.uuid !== 'string') return 'kept';
      this.drop(entryIndex);
      return 'dropped';
    }
    for (const blockIndex of fresh) this.setBlock(entryIndex, blockIndex, null);
    this.removals.set(entryIndex, removed + fresh.length);
    this.copyRemoved.add(entryIndex);
    return 'removed';
  }

  /** Leave the entry out; its children are re-pointed to its nearest surviving ancestor. */
  drop(entryIndex: number): void {
    if (this.dropped[entryIndex] === 1) return;
    this.dropped[entryIndex] = 1;
    this.droppedCount += 1;
  }

  /**
   * Insert one user entry right after `entryIndex` answering `uses` with `text`. The inserted
   * entry takes over the uuid `entryIndex` was stored under and that entry gets a new one,
   * derived from the calls (loading twice yields the same transcript); an entry without a uuid,
   * or a protected one (never edited), keeps its own and the inserted entry gets the derived one,
   * with the entry's first child re-pointed to it.
   *
   * Why the stand-in takes the stored uuid rather than a new one: the binary links the next entry
   * it writes to the newest entry it was fed, and the stand-in is the newest one whenever the
   * crash cut the transcript at the call. A new uuid would be a parent the store never holds, and
   * read without this layer the stored chain would break there, losing everything before it. With
   * the stored uuid, every child (the binary's next entry, the stored ones after the call) names
   * an entry the store holds, the assistant entry, and each record keeps one writer: the store
   * holds exactly what the SDK appended, and a load writes nothing (a load is also a report's or
   * another machine's read, possibly of a transcript whose call is still running: storing a
   * stand-in there would give that call two results).
   */
  answerAfter(entryIndex: number, uses: readonly ToolUseBlock[], text: string): void {
    const entry = this.index.entries[entryIndex] as Entry;
    const owner = typeof entry.uuid === 'string' ? entry.uuid : null;
    const context = Object.fromEntries(
      CONTEXT_FIELDS.filter((field) => field in entry).map((field) => [field, entry[field]]),
    );
    const derived = derivedUuid(`heal:${owner}:${uses.map((block) => block.id).join(',')}`);
    const takeOver = owner !== null && !isProtected(entry);
    if (takeOver) this.renamed.set(entryIndex, derived);
    this.inserted.set(entryIndex, {
      ...context,
      type: 'user',
      uuid: takeOver ? owner : derived,
      parentUuid: takeOver ? derived : owner,
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
    const output = [...entries];
    for (const entryIndex of this.editedEntries) output[entryIndex] = this.withBlocks(entryIndex);
    this.rewritten.forEach((text, entryIndex) => {
      // Only the harness's shape (one result per entry) says whose copy `toolUseResult` is.
      if (this.index.resultCounts[entryIndex] !== 1 || this.copyRemoved.has(entryIndex)) return;
      const copy = this.index.copies[entryIndex];
      if (copy === undefined) return;
      const replaced = withoutDuplicates(copy, text, DUPLICATE_DEPTH, this.inPlace);
      // In place, an object copy was changed where it is; only a replaced value needs setting.
      if (replaced === copy) return;
      const entry = output[entryIndex] as Entry;
      if (this.inPlace) entry.toolUseResult = replaced;
      else output[entryIndex] = { ...entry, toolUseResult: replaced };
    });
    if (this.droppedCount === 0 && this.inserted.size === 0) return output;
    return this.relinked(output);
  }

  /** `output` without the dropped entries, with the inserted ones, every parent re-pointed. */
  private relinked(edited: Entry[]): Entry[] {
    const survivor = this.survivorLookup();
    const output: Entry[] = [];
    const repoint = new Map<string, string>(); // entry uuid → uuid of the entry inserted after it
    const renamedFrom = new Map<string, string>(); // stored uuid → the renamed entry's new uuid
    for (let entryIndex = 0; entryIndex < edited.length; entryIndex += 1) {
      if (this.dropped[entryIndex] === 1) continue;
      let entry = edited[entryIndex] as Entry;
      const parent = entry.parentUuid;
      let newParent = typeof parent === 'string' ? survivor(parent) : parent;
      if (typeof newParent === 'string' && repoint.size > 0) {
        const insertedChild = repoint.get(newParent);
        if (insertedChild !== undefined) {
          repoint.delete(newParent);
          newParent = insertedChild;
        }
      }
      if (newParent !== parent) {
        if (this.inPlace) entry.parentUuid = newParent;
        else entry = { ...entry, parentUuid: newParent };
      }
      if (this.inserted.size === 0) {
        output.push(entry);
        continue;
      }
      const next = this.inserted.get(entryIndex);
      const uuid = this.renamed.get(entryIndex);
      if (uuid !== undefined) {
        renamedFrom.set(entry.uuid as string, uuid);
        if (this.inPlace) entry.uuid = uuid;
        else entry = { ...entry, uuid };
      }
      // A result names the assistant entry that made its call (`sourceToolAssistantUUID`, which
      // the binary reads when it rebuilds the chain): that entry, not the stand-in now under its uuid.
      const source =
        renamedFrom.size > 0 ? renamedFrom.get(entry.sourceToolAssistantUUID as string) : undefined;
      if (source !== undefined) {
        if (this.inPlace) entry.sourceToolAssistantUUID = source;
        else entry = { ...entry, sourceToolAssistantUUID: source };
      }
      output.push(entry);
      if (next === undefined) continue;
      output.push(next);
      // A stand-in under the entry's own stored uuid is its children's parent already.
      if (uuid === undefined && typeof entry.uuid === 'string') repoint.set(entry.uuid, next.uuid as string);
    }
    return output;
  }

  private setBlock(entryIndex: number, blockIndex: number, block: ContentBlock | null): void {
    let edits = this.edits[entryIndex];
    if (edits === undefined) {
      edits = [];
      this.edits[entryIndex] = edits;
      this.editedEntries.push(entryIndex);
    }
    edits[blockIndex] = block;
  }

  /** The entry with its block edits (a copy, or in place the same entry). */
  private withBlocks(entryIndex: number): Entry {
    const entry = this.index.entries[entryIndex] as Entry;
    const edits = this.edits[entryIndex] as BlockEdits;
    const content: unknown[] = [];
    contentListOf(entry).forEach((block, blockIndex) => {
      const replacement = edits[blockIndex];
      if (replacement !== null) content.push(replacement ?? block);
    });
    if (this.inPlace) {
      (messageOf(entry) as Record<string, unknown>).content = content;
      if (this.copyRemoved.has(entryIndex)) delete entry.toolUseResult;
      return entry;
    }
    const changed: Entry = { ...entry, message: { ...messageOf(entry), content } };
    if (this.copyRemoved.has(entryIndex)) delete changed.toolUseResult;
    return changed;
  }

  /** Maps a parent uuid to itself, or to the nearest ancestor that was not dropped (cycle-safe). */
  private survivorLookup(): (uuid: string) => string | null {
    const parentOf = new Map<string, string | null>();
    this.dropped.forEach((flag, entryIndex) => {
      if (flag === 0) return;
      const entry = this.index.entries[entryIndex] as Entry;
      if (typeof entry.uuid === 'string')
        parentOf.set(entry.uuid, (entry.parentUuid as string | null | undefined) ?? null);
    });
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

/**
 * `value` with every string longer than `text` replaced by `text`: the same object if none is,
 * else a copy — or, `inPlace`, the same object changed.
 */
function withoutDuplicates(value: unknown, text: string, depth: number, inPlace: boolean): unknown {
  if (typeof value === 'string') return value.length > text.length ? text : value;
  if (depth <= 0 || typeof value !== 'object' || value === null) return value;
  const source = value as Record<string, unknown>;
  let target: Record<string, unknown> | undefined = inPlace ? source : undefined;
  for (const field in source) {
    const item = source[field];
    let replaced: unknown;
    if (typeof item === 'string') {
      if (item.length <= text.length) continue;
      replaced = text;
    } else if (typeof item === 'object' && item !== null) {
      replaced = withoutDuplicates(item, text, depth - 1, inPlace);
      if (replaced === item) continue;
    } else continue;
    target ??= (Array.isArray(source) ? [...source] : { ...source }) as Record<string, unknown>;
    target[field] = replaced;
  }
  return target ?? source;
}

/** A uuid-shaped id derived from its inputs. */
function derivedUuid(seed: string): string {
  const hex = createHash('sha256').update(seed).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
