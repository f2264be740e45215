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
 * - The tool_result block stays; only its content becomes the pointer.
 * - If the spill file cannot be written, that result stays as it is (counted in
 *   `spillFailures`): a pointer to nothing would lose the text.
 * - Pure apart from the injected spill writer: the input is never modified.
 */
import type { SpillWriter } from './spill.js';
import { type Entry, replaceBlocks, toolResultSites, toolResultText } from './transcript.js';

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

export interface TrimResult {
  entries: Entry[];
  /** Results replaced by a pointer. */
  trimmed: number;
  /** Large results left verbatim because they are among the newest. */
  kept: number;
  /** Characters no longer fed back (text length minus pointer length). */
  charsSaved: number;
  /** Results left verbatim because their spill file could not be written. */
  spillFailures: number;
}

/** Spill all but the newest `keepRecent` large results and point to them instead. */
export function trimLargeResults(
  entries: readonly Entry[],
  policy: TrimPolicy,
  spill: SpillWriter,
): TrimResult {
  const none = { trimmed: 0, kept: 0, charsSaved: 0, spillFailures: 0 };
  if (!policy.enabled) return { entries: [...entries], ...none };
  const sites = toolResultSites(entries).flatMap((site) => {
    const text = toolResultText(site.block);
    return text !== null && text.length >= policy.minChars ? [{ site, text }] : [];
  });
  const cut = Math.max(0, sites.length - Math.max(0, policy.keepRecent));
  const replacements = [];
  let charsSaved = 0;
  let spillFailures = 0;
  for (const { site, text } of sites.slice(0, cut)) {
    const spillPath = spill(text);
    if (spillPath === undefined) {
      spillFailures += 1;
      continue;
    }
    const pointer = policy.placeholder(spillPath, text.length);
    charsSaved += text.length - pointer.length;
    replacements.push({ site, block: { ...site.block, content: pointer } });
  }
  return {
    entries: replaceBlocks(entries, replacements),
    trimmed: replacements.length,
    kept: sites.length - cut,
    charsSaved,
    spillFailures,
  };
}
