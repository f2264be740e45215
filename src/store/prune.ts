/**
 * Prune layer: noise that is not conversation is removed when a transcript is loaded for resume.
 *
 * - Synthetic API-error turns. When the network drops, the harness writes an assistant message
 *   "API Error: …" (model `<synthetic>`). Fed back, it reads as the model's last words and the
 *   model starts discussing the network instead of the task. The binary's own filler (model
 *   `<synthetic>`, text exactly "No response requested.", no error flag) is not one: it stays.
 * - Old denied tool calls. A denied call never ran, carries no information, costs ~270 characters
 *   each and teaches helplessness (a coordinator that reads several denials stops trying even the
 *   commands it may run). Only the newest `keepDenials` stay: the latest one usefully stops an
 *   immediate retry of the same blocked command.
 * - Interrupt residue: an error result saying the request was interrupted becomes a neutral note.
 * - Orphaned tool calls: a disconnect can cut a transcript between a `tool_use` and its result;
 *   the API then rejects every resume with 400. One synthetic result entry is inserted after the
 *   assistant entry (healing, not deleting: that message may also hold text or thinking), under
 *   the uuid that entry was stored with, so the stored chain stays whole (transcript-edits.ts).
 * - Stray results: a tool_result whose tool_use appears nowhere in the transcript (its entry was
 *   an unreadable row the load went around) is rejected by the API just the same; it goes.
 * - Entries the load could not read (`unreadableRowPlaceholder` entries) are dropped and the chain
 *   relinked around them.
 *
 * Red lines (each one, broken, makes the API refuse the history or silently loses it):
 * 1. A tool_result block is only ever removed together with its tool_use (or when there is no
 *    tool_use to answer at all); otherwise only its content changes.
 * 2. Protected entries (compact summaries, meta) are never dropped or edited; only their
 *    `parentUuid` is re-pointed when their parent was dropped.
 * 3. Dropping an entry re-parents its children to its nearest surviving ancestor: the harness
 *    walks `parentUuid` back from the leaf, and a break loses everything before it. The edits
 *    (transcript-edits.ts) keep the dropped entries until the end for exactly that reason.
 *
 * Pure: the input is never modified.
 */
import {
  type Entry,
  indexTranscript,
  isToolResult,
  type ToolResultSite,
  type ToolUseBlock,
  type TranscriptIndex,
} from './transcript.js';
import { TranscriptEdits } from './transcript-edits.js';

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

export interface PruneCounts {
  /** Entries removed whole (dead denials that emptied a message, synthetic errors, stray results). */
  pruned: number;
  /** Denied calls removed (tool_use plus its result). */
  denialsDropped: number;
  interruptsNeutralised: number;
  /** Synthetic result entries inserted for orphaned tool calls. */
  orphansHealed: number;
  /** Results removed because nothing in the transcript asked for them. */
  strayResults: number;
  /** Rows the store could not read, left out with the chain relinked around them. */
  unreadableRows: number;
}

export interface PruneResult extends PruneCounts {
  entries: Entry[];
}

const INTERRUPT_MARK = '[Request interrupted';

const isInterruptResult = (block: unknown): boolean =>
  isToolResult(block) &&
  block.is_error === true &&
  typeof block.content === 'string' &&
  block.content.includes(INTERRUPT_MARK);

/** Group block positions by entry, keeping transcript order. */
function byEntry(sites: Iterable<{ entryIndex: number; blockIndex: number }>): Map<number, number[]> {
  const grouped = new Map<number, number[]>();
  for (const { entryIndex, blockIndex } of sites) {
    const blocks = grouped.get(entryIndex);
    if (blocks === undefined) grouped.set(entryIndex, [blockIndex]);
    else blocks.push(blockIndex);
  }
  return grouped;
}

/** Plan drops, neutralisations and heals as the policy says (see module header) into `edits`. */
export function planPrune(index: TranscriptIndex, edits: TranscriptEdits, policy: PrunePolicy): PruneCounts {
  const counts: PruneCounts = {
    pruned: 0,
    denialsDropped: 0,
    interruptsNeutralised: 0,
    orphansHealed: 0,
    strayResults: 0,
    unreadableRows: 0,
  };
  const removeAll = (grouped: Map<number, number[]>): void => {
    for (const [entryIndex, blocks] of grouped)
      if (edits.removeBlocks(entryIndex, blocks) === 'dropped') counts.pruned += 1;
  };

  for (const entryIndex of index.unreadable) {
    edits.drop(entryIndex);
    counts.unreadableRows += 1;
  }

  const denied = index.denials.map((denial) => denial.toolUseId);
  const dead = new Set(
    policy.keepDenials > 0 ? denied.slice(0, Math.max(0, denied.length - policy.keepDenials)) : denied,
  );
  counts.denialsDropped = dead.size;
  if (dead.size > 0) {
    removeAll(
      byEntry([
        ...index.toolUses.filter((site) => dead.has(site.block.id)),
        ...index.results.filter((site) => dead.has(site.block.tool_use_id)),
      ]),
    );
  }

  // One walk over the results: those nothing asked for go, interrupted ones are neutralised.
  const stray: ToolResultSite[] = [];
  for (const site of index.results) {
    if (edits.isDropped(site.entryIndex)) continue;
    if (!index.toolUseById.has(site.block.tool_use_id)) {
      stray.push(site);
      continue;
    }
    const block = edits.blockAt(site);
    if (!policy.neutraliseInterrupts || !isInterruptResult(block)) continue;
    edits.patchBlock(site, { content: policy.interruptText, is_error: false });
    counts.interruptsNeutralised += 1;
  }
  counts.strayResults = stray.length;
  removeAll(byEntry(stray));

  if (policy.dropApiErrors) {
    for (const entryIndex of index.apiErrors) {
      if (edits.isDropped(entryIndex) || typeof index.entries[entryIndex]?.uuid !== 'string') continue;
      edits.drop(entryIndex);
      counts.pruned += 1;
    }
  }

  if (policy.healOrphans) counts.orphansHealed = planHealing(index, edits, policy.orphanText);
  return counts;
}

/**
 * The last entry of the assistant message `entryIndex` belongs to. The harness writes one entry
 * per content block and sends consecutive assistant entries as one message (entries of other
 * types in between are not messages); the answer to any of its calls must open the next user
 * message, so it goes after the last of them.
 */
function messageEnd(index: TranscriptIndex, edits: TranscriptEdits, entryIndex: number): number {
  let end = entryIndex;
  for (let next = entryIndex + 1; next < index.entries.length; next += 1) {
    if (edits.isDropped(next)) continue;
    const type = index.entries[next]?.type;
    if (type === 'assistant') end = next;
    else if (type === 'user') break;
  }
  return end;
}

/**
 * After every assistant message whose tool calls have no result anywhere (after the edits so
 * far), plan one user entry answering all of them; returns how many entries are inserted.
 */
function planHealing(index: TranscriptIndex, edits: TranscriptEdits, text: string): number {
  const healed = new Set<string>();
  const orphans = new Map<number, ToolUseBlock[]>();
  for (const site of index.toolUses) {
    if (index.answered.has(site.block.id) || healed.has(site.block.id)) continue;
    if (edits.isDropped(site.entryIndex) || edits.blockAt(site) === null) continue;
    healed.add(site.block.id);
    const end = messageEnd(index, edits, site.entryIndex);
    const uses = orphans.get(end);
    if (uses === undefined) orphans.set(end, [site.block]);
    else uses.push(site.block);
  }
  for (const [entryIndex, uses] of orphans) edits.answerAfter(entryIndex, uses, text);
  return orphans.size;
}

/** Drop, neutralise and heal as the policy says (see module header). */
export function pruneNoise(entries: readonly Entry[], policy: PrunePolicy = defaultPrunePolicy): PruneResult {
  const edits = new TranscriptEdits(indexTranscript(entries));
  const counts = planPrune(edits.index, edits, policy);
  return { entries: edits.apply(), ...counts };
}

/**
 * Remove the entries whose uuid is in `drop` and re-point each survivor whose parent was removed
 * to its nearest surviving ancestor.
 */
export function relink(entries: readonly Entry[], drop: ReadonlySet<string>): Entry[] {
  const edits = new TranscriptEdits(indexTranscript(entries));
  entries.forEach((entry, entryIndex) => {
    if (typeof entry.uuid === 'string' && drop.has(entry.uuid)) edits.drop(entryIndex);
  });
  return edits.apply();
}

/**
 * After every assistant entry whose tool calls have no result anywhere, insert one user entry
 * answering all of them, and re-point the assistant's first child to it.
 */
export function healOrphans(entries: readonly Entry[], text: string): { entries: Entry[]; healed: number } {
  const edits = new TranscriptEdits(indexTranscript(entries));
  const healed = planHealing(edits.index, edits, text);
  return { entries: edits.apply(), healed };
}
