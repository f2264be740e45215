/**
 * The load pipeline: what a resume feeds back to the model, derived from the stored transcript.
 *
 * Order matters: expire first (so stale glances are never spilled), then trim (size), then prune
 * (is it an error). Trim removes by size and value, prune by "is this noise" — distinct jobs.
 *
 * Invariant: the input entries are never modified (every layer is copy-on-write), so the stored
 * rows stay exactly as appended and every load starts again from the raw transcript.
 */
import { defaultEphemeralPolicy, type EphemeralPolicy, expireStaleGlances } from './expire.js';
import type { LoadReport } from './load-report.js';
import { defaultPrunePolicy, type PrunePolicy, pruneNoise } from './prune.js';
import type { SpillWriter } from './spill.js';
import type { Entry } from './transcript.js';
import { defaultTrimPolicy, type TrimPolicy, trimLargeResults } from './trim.js';

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
): { entries: Entry[]; report: LoadReport } {
  const expired = expireStaleGlances(entries, policies.ephemeral);
  const trimmed = trimLargeResults(expired.entries, policies.trim, spill);
  const pruned = pruneNoise(trimmed.entries, policies.prune);
  return {
    entries: pruned.entries,
    report: {
      expired: expired.expired,
      trimmed: trimmed.trimmed,
      kept: trimmed.kept,
      charsSaved: trimmed.charsSaved,
      spillFailures: trimmed.spillFailures,
      pruned: pruned.pruned,
      denialsDropped: pruned.denialsDropped,
      interruptsNeutralised: pruned.interruptsNeutralised,
      orphansHealed: pruned.orphansHealed,
    },
  };
}
