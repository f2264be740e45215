/**
 * Prune layer: noise that is not conversation is removed when a transcript is loaded for resume.
 *
 * - Synthetic API-error turns. When the network drops, the harness writes an assistant message
 *   "API Error: …" (model `<synthetic>`). Fed back, it reads as the model's last words and the
 *   model starts discussing the network instead of the task.
 * - Old denied tool calls. A denied call never ran, carries no information, costs ~270 characters
 *   each and teaches helplessness (a coordinator that reads several denials stops trying even the
 *   commands it may run). Only the newest `keepDenials` stay: the latest one usefully stops an
 *   immediate retry of the same blocked command.
 * - Interrupt residue: an error result saying the request was interrupted becomes a neutral note.
 * - Orphaned tool calls: a disconnect can cut a transcript between a `tool_use` and its result;
 *   the API then rejects every resume with 400. One synthetic result entry is inserted after the
 *   assistant entry (healing, not deleting: that message may also hold text or thinking).
 *
 * Red lines (each one, broken, makes the API refuse the history or silently loses it):
 * 1. A tool_result block is only ever removed together with its tool_use; otherwise only its
 *    content changes.
 * 2. Protected entries (compact summaries, meta) are never dropped or edited; only their
 *    `parentUuid` is re-pointed when their parent was dropped.
 * 3. Dropping an entry re-parents its children to its nearest surviving ancestor: the harness
 *    walks `parentUuid` back from the leaf, and a break loses everything before it. That is why
 *    `relink` receives the full list including the dropped entries.
 *
 * Pure: the input is never modified.
 */
import { createHash } from 'node:crypto';
import {
  blocksOf,
  type ContentBlock,
  contentListOf,
  type Entry,
  isProtected,
  isToolResult,
  isToolUse,
  messageOf,
  type ToolUseBlock,
  withContent,
} from './transcript.js';

export interface PrunePolicy {
  /** Synthetic "API Error" turns would be fed back as the model's own last words. */
  dropApiErrors: boolean;
  /** An interrupted call's error result is replaced by `interruptText` and no longer an error. */
  neutraliseInterrupts: boolean;
  interruptText: string;
  /** Insert a result for every tool call that has none, or the API rejects the history. */
  healOrphans: boolean;
  orphanText: string;
  /** Denied calls kept (newest first); <= 0 drops them all. Raising it only adds noise. */
  keepDenials: number;
}

export const defaultPrunePolicy: PrunePolicy = {
  dropApiErrors: true,
  neutraliseInterrupts: true,
  interruptText: '[the previous turn was interrupted here; this tool call produced no result]',
  healOrphans: true,
  orphanText: '[this step was interrupted and has no result; redo it if it is still needed]',
  keepDenials: 1,
};

export interface PruneResult {
  entries: Entry[];
  /** Entries removed whole (dead denials that emptied a message, synthetic errors). */
  pruned: number;
  /** Denied calls removed (tool_use plus its result). */
  denialsDropped: number;
  interruptsNeutralised: number;
  /** Synthetic result entries inserted for orphaned tool calls. */
  orphansHealed: number;
}

/** A harness-written error turn rather than something the model said. */
export function isApiError(entry: Entry): boolean {
  return entry.isApiErrorMessage === true || messageOf(entry)?.model === '<synthetic>';
}

/**
 * The tool_use id a permission rule denied, judged by the harness's structural marker
 * (`toolDenialKind`) rather than by the wording of the denial.
 */
export function deniedToolUseId(entry: Entry): string | undefined {
  if (entry.toolDenialKind !== 'permission-rule') return undefined;
  return blocksOf(entry).find(isToolResult)?.tool_use_id;
}

const INTERRUPT_MARK = '[Request interrupted';

const isInterruptResult = (block: unknown): boolean =>
  isToolResult(block) &&
  block.is_error === true &&
  typeof block.content === 'string' &&
  block.content.includes(INTERRUPT_MARK);

/**
 * Remove the tool_use and tool_result blocks of the given ids. Returns the entry unchanged when
 * nothing matched, null when nothing is left, else a copy without `toolUseResult` (the harness's
 * second copy of the removed result).
 */
function withoutToolBlocks(entry: Entry, ids: ReadonlySet<string>): Entry | null {
  const content = contentListOf(entry);
  const named = (block: unknown): boolean =>
    (isToolUse(block) && ids.has(block.id)) || (isToolResult(block) && ids.has(block.tool_use_id));
  if (!content.some(named)) return entry;
  const kept = content.filter((block) => !named(block));
  if (kept.length === 0) return null;
  const { toolUseResult: _removedCopy, ...rest } = withContent(entry, kept);
  return rest as Entry;
}

/** Drop, neutralise and heal as the policy says (see module header). */
export function pruneNoise(entries: readonly Entry[], policy: PrunePolicy = defaultPrunePolicy): PruneResult {
  const denied = entries.flatMap((entry) => {
    const id = deniedToolUseId(entry);
    return id === undefined ? [] : [id];
  });
  const dead = new Set(
    policy.keepDenials > 0 ? denied.slice(0, Math.max(0, denied.length - policy.keepDenials)) : denied,
  );

  const dropped = new Set<string>();
  const kept: Entry[] = [];
  let interruptsNeutralised = 0;
  for (const original of entries) {
    if (isProtected(original)) {
      kept.push(original);
      continue;
    }
    let entry: Entry | null = original;
    if (dead.size > 0) {
      entry = withoutToolBlocks(original, dead);
      if (entry === null) {
        if (typeof original.uuid === 'string') {
          dropped.add(original.uuid);
          kept.push(original); // relink needs it to bridge the chain
          continue;
        }
        entry = original;
      }
    }
    if (policy.dropApiErrors && isApiError(entry) && typeof entry.uuid === 'string') {
      dropped.add(entry.uuid);
      kept.push(entry);
      continue;
    }
    if (policy.neutraliseInterrupts && blocksOf(entry).some(isInterruptResult)) {
      const content = contentListOf(entry).map((block) => {
        if (!isInterruptResult(block)) return block;
        interruptsNeutralised += 1;
        return { ...(block as ContentBlock), content: policy.interruptText, is_error: false };
      });
      entry = withContent(entry, content);
    }
    kept.push(entry);
  }

  const relinked = relink(kept, dropped);
  const healed = policy.healOrphans
    ? healOrphans(relinked, policy.orphanText)
    : { entries: relinked, healed: 0 };
  return {
    entries: healed.entries,
    pruned: dropped.size,
    denialsDropped: dead.size,
    interruptsNeutralised,
    orphansHealed: healed.healed,
  };
}

/**
 * Remove the entries whose uuid is in `drop` and re-point each survivor whose parent was removed
 * to its nearest surviving ancestor. `entries` must still contain the dropped entries: they are
 * the only record of who their parents were.
 */
export function relink(entries: readonly Entry[], drop: ReadonlySet<string>): Entry[] {
  if (drop.size === 0) return [...entries];
  const parentOf = new Map<string, string | null>();
  for (const entry of entries) {
    if (typeof entry.uuid === 'string')
      parentOf.set(entry.uuid, (entry.parentUuid as string | null | undefined) ?? null);
  }
  const survivor = (start: string | null): string | null => {
    const seen = new Set<string>();
    let current = start;
    while (current !== null && drop.has(current) && !seen.has(current)) {
      seen.add(current);
      current = parentOf.get(current) ?? null;
    }
    return current !== null && drop.has(current) ? null : current;
  };
  const output: Entry[] = [];
  for (const entry of entries) {
    if (typeof entry.uuid === 'string' && drop.has(entry.uuid)) continue;
    const parent = entry.parentUuid;
    output.push(
      typeof parent === 'string' && drop.has(parent) ? { ...entry, parentUuid: survivor(parent) } : entry,
    );
  }
  return output;
}

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

/** A uuid-shaped id derived from its inputs, so loading twice yields the same transcript. */
function derivedUuid(seed: string): string {
  const hex = createHash('sha256').update(seed).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * After every assistant entry whose tool calls have no result anywhere, insert one user entry
 * answering all of them, and re-point the assistant's first child to it.
 */
export function healOrphans(entries: readonly Entry[], text: string): { entries: Entry[]; healed: number } {
  const answered = new Set<string>();
  for (const entry of entries) {
    for (const block of blocksOf(entry)) if (isToolResult(block)) answered.add(block.tool_use_id);
  }
  const output: Entry[] = [];
  const repoint = new Map<string, string>(); // assistant uuid → heal entry uuid, for its first child
  let healed = 0;
  for (const entry of entries) {
    const parent = entry.parentUuid;
    if (typeof parent === 'string' && repoint.has(parent)) {
      output.push({ ...entry, parentUuid: repoint.get(parent) });
      repoint.delete(parent);
    } else {
      output.push(entry);
    }
    if (isProtected(entry)) continue;
    const orphans: ToolUseBlock[] = [];
    for (const block of blocksOf(entry)) {
      if (isToolUse(block) && !answered.has(block.id)) orphans.push(block);
    }
    if (orphans.length === 0) continue;
    const owner = typeof entry.uuid === 'string' ? entry.uuid : null;
    const uuid = derivedUuid(`heal:${owner}:${orphans.map((block) => block.id).join(',')}`);
    const context = Object.fromEntries(
      CONTEXT_FIELDS.filter((field) => field in entry).map((field) => [field, entry[field]]),
    );
    output.push({
      ...context,
      type: 'user',
      uuid,
      parentUuid: owner,
      message: {
        role: 'user',
        content: orphans.map((block) => ({
          type: 'tool_result',
          tool_use_id: block.id,
          content: text,
          is_error: false,
        })),
      },
    });
    for (const block of orphans) answered.add(block.id);
    if (owner !== null) repoint.set(owner, uuid);
    healed += 1;
  }
  return { entries: output, healed };
}
