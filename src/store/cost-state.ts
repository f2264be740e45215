/**
 * `cost-state` entries: the harness's running record of what a session cost (`totalCostUSD`,
 * durations, per-model usage), written at the end of each turn and "last one wins" — the newest
 * entry is the session's total so far, across resumes.
 *
 * flower reads it to charge a resumed session only what it adds, and to complete the books of a
 * process that was killed before it could write its manifest row. Both want the newest entry of
 * a possibly huge transcript, so backends find it from the end (see backend.ts).
 */
import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';

export const COST_STATE_TYPE = 'cost-state';

/** The session total in USD an entry records; undefined unless it is a cost-state with a finite total. */
export function totalCostOf(entry: SessionStoreEntry | null | undefined): number | undefined {
  if (entry?.type !== COST_STATE_TYPE) return undefined;
  const total = entry.totalCostUSD;
  return typeof total === 'number' && Number.isFinite(total) ? total : undefined;
}

/** The newest cost-state among `entries` (the slow path, for backends without a fast one). */
export function lastCostStateIn(entries: readonly SessionStoreEntry[]): SessionStoreEntry | null {
  for (let index = entries.length - 1; index >= 0; index -= 1) {
    const entry = entries[index] as SessionStoreEntry;
    if (entry.type === COST_STATE_TYPE) return entry;
  }
  return null;
}
