/**
 * The load pipeline: what a resume feeds back to the model, derived from the stored transcript.
 *
 * Order matters: expire first (so stale glances are never spilled), then trim (size), then prune
 * (is it an error). Trim removes by size and value, prune by "is this noise" — distinct jobs.
 * The layers plan edits against one index of the transcript and the edits are applied in one
 * pass (transcript.ts, transcript-edits.ts): same result as running them one after another, at
 * the cost of one walk over the entries.
 *
 * Invariant: the stored rows stay exactly as appended and every load starts again from the raw
 * transcript. The input entries are not modified (edits are copy-on-write) unless the caller says
 * they are its own to change (`inPlace`, for entries just parsed for this load).
 */
import { defaultEphemeralPolicy, type EphemeralPolicy, planExpiry } from './expire.js';
import type { LoadReport } from './load-report.js';
import { defaultPrunePolicy, type PrunePolicy, planPrune } from './prune.js';
import type { SpillWriter } from './spill.js';
import { type Entry, indexTranscript } from './transcript.js';
import { TranscriptEdits } from './transcript-edits.js';
import { defaultTrimPolicy, planTrim, type TrimPolicy } from './trim.js';

export interface RewritePolicies {
  ephemeral: EphemeralPolicy;
  trim: TrimPolicy;
  prune: PrunePolicy;
}

/** Policies given in part (e.g. `{ trim: { enabled: true } }`) completed with the defaults. */
export interface RewriteOptions {
  ephemeral?: Partial<EphemeralPolicy>;
  trim?: Partial<TrimPolicy>;
  prune?: Partial<PrunePolicy>;
}

export function resolvePolicies(options: RewriteOptions = {}): RewritePolicies {
  return {
    ephemeral: { ...defaultEphemeralPolicy, ...options.ephemeral },
    trim: { ...defaultTrimPolicy, ...options.trim },
    prune: { ...defaultPrunePolicy, ...options.prune },
  };
}

/** Apply expire → trim → prune to a transcript and report what changed. */
export function rewriteForResume(
  entries: readonly Entry[],
  policies: RewritePolicies,
  spill: SpillWriter,
  options: { inPlace?: boolean } = {},
): { entries: Entry[]; report: LoadReport } {
  const edits = new TranscriptEdits(indexTranscript(entries), options);
  const expired = planExpiry(edits.index, edits, policies.ephemeral);
  const trimmed = planTrim(edits.index, edits, policies.trim, spill);
  const pruned = planPrune(edits.index, edits, policies.prune);
  return { entries: edits.apply(), report: { expired, ...trimmed, ...pruned } };
}
