/**
 * Trim layer: old, large tool results are written to a spill file and replaced by a one-line
 * pointer when a transcript is loaded for resume.
 *
 * Why: a long run accumulates build logs and file dumps the model has long digested; feeding
 * them back on every resume costs context and money. The newest results stay verbatim, older
 * ones stay one Read away.
 *
 * Invariants:
 * - Candidates are plain-text tool_result blocks of at least `minChars`; results holding images
 *   or documents, and protected entries (compact summaries, meta), are never touched.
 * - The tool_result block stays; only its content becomes the pointer, and the entry's duplicate
 *   copy of the text goes with it (see transcript-edits.ts).
 * - Spill files are normally written just behind the append of their result (rewriting-store.ts);
 *   at load the writer finds them and only writes what an older writer, a crash inside the write
 *   behind or a failed attempt left out.
 * - If the spill file cannot be written, that result stays as it is (counted in
 *   `spillFailures`): a pointer to nothing would lose the text.
 * - Pure apart from the injected spill writer: the input is never modified.
 */
import type { SpillWriter } from './spill.js';
import {
  type Entry,
  indexTranscript,
  isProtected,
  isToolResult,
  messageOf,
  type ToolResultSite,
  type TranscriptIndex,
  toolResultText,
} from './transcript.js';
import { TranscriptEdits } from './transcript-edits.js';

export interface TrimPolicy {
  /** Off by default in the library; the command line's `go` path turns it on. */
  enabled: boolean;
  /** The newest large results stay verbatim: the model is likely still working from them. */
  keepRecent: number;
  /** Smaller results are cheap to keep and often still relevant. */
  minChars: number;
  /** Relative to the workspace, so the agent's Read can reach the files. */
  spillDirname: string;
  /** The pointer that replaces a trimmed result (DESIGN.md §5). */
  placeholder: (spillPath: string, chars: number) => string;
}

export const defaultTrimPolicy: TrimPolicy = {
  enabled: false,
  keepRecent: 20,
  minChars: 2000,
  spillDirname: '.flower/spill',
  placeholder: (spillPath, chars) =>
    `[tool result archived: ${chars} chars. Full text at ${spillPath}; Read it when needed]`,
};

export interface TrimCounts {
  /** Results replaced by a pointer. */
  trimmed: number;
  /** Large results left verbatim because they are among the newest. */
  kept: number;
  /** Characters no longer fed back (text length minus pointer length). */
  charsSaved: number;
  /** Results left verbatim because their spill file could not be written. */
  spillFailures: number;
}

export interface TrimResult extends TrimCounts {
  entries: Entry[];
}

/** A result the trim layer may one day replace, and the tool call it answers. */
export interface LargeResult {
  toolUseId: string;
  text: string;
}

/** What most entries hold: one shared answer, so the append path allocates nothing for them. */
const NO_RESULTS: readonly LargeResult[] = Object.freeze([]);

/**
 * The results of an entry that the trim layer may one day replace: plain-text results of at
 * least `minChars` in an unprotected user entry (the Messages API takes tool results in user
 * messages only). The rewriting store runs this on every appended entry, so the type is checked
 * first: the other half of a transcript costs one property read.
 */
export function largeResults(entry: Entry, policy: TrimPolicy): readonly LargeResult[] {
  if (entry.type !== 'user') return NO_RESULTS;
  const content = messageOf(entry)?.content;
  if (!Array.isArray(content) || isProtected(entry)) return NO_RESULTS;
  let results: LargeResult[] | undefined;
  for (const block of content) {
    if (!isToolResult(block)) continue;
    const text = toolResultText(block);
    if (text === null || text.length < policy.minChars) continue;
    results ??= [];
    results.push({ toolUseId: block.tool_use_id, text });
  }
  return results ?? NO_RESULTS;
}

/** Plan pointers for all but the newest `keepRecent` large results into `edits`. */
export function planTrim(
  index: TranscriptIndex,
  edits: TranscriptEdits,
  policy: TrimPolicy,
  spill: SpillWriter,
): TrimCounts {
  const counts: TrimCounts = { trimmed: 0, kept: 0, charsSaved: 0, spillFailures: 0 };
  if (!policy.enabled) return counts;
  const sites: Array<{ site: ToolResultSite; text: string }> = [];
  for (const site of index.results) {
    // What an earlier layer left (an expired glance is a short note, not a large result).
    const block = edits.blockAt(site);
    const text = block === null ? null : toolResultText(block as typeof site.block);
    if (text !== null && text.length >= policy.minChars) sites.push({ site, text });
  }
  const cut = Math.max(0, sites.length - Math.max(0, policy.keepRecent));
  counts.kept = sites.length - cut;
  for (let position = 0; position < cut; position += 1) {
    const { site, text } = sites[position] as { site: ToolResultSite; text: string };
    const spillPath = spill(text, site.block.tool_use_id);
    if (spillPath === undefined) {
      counts.spillFailures += 1;
      continue;
    }
    const pointer = policy.placeholder(spillPath, text.length);
    counts.charsSaved += text.length - pointer.length;
    edits.rewriteResult(site, pointer);
    counts.trimmed += 1;
  }
  return counts;
}

/** Spill all but the newest `keepRecent` large results and point to them instead. */
export function trimLargeResults(
  entries: readonly Entry[],
  policy: TrimPolicy,
  spill: SpillWriter,
): TrimResult {
  const edits = new TranscriptEdits(indexTranscript(entries));
  const counts = planTrim(edits.index, edits, policy, spill);
  return { entries: edits.apply(), ...counts };
}
