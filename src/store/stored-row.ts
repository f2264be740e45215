/**
 * A transcript entry together with the JSON text a backend keeps it as. Copies between backends
 * (the pull onto a new machine, store/shared/session-sync.ts) hand the text along, so the
 * receiving backend stores it as it is instead of serialising every entry once more: on a pull
 * of 20 sessions with subagents, `JSON.stringify` of the parsed rows was a fifth of the pull's CPU
 * (measured, `node bench/pull.bench.mjs`).
 *
 * Invariant: when `text` is given, it is the JSON text `entry` was parsed from (or that
 * `JSON.stringify(entry)` gave), and nobody changed `entry` since: a backend may store either
 * one and read back the same entry.
 */
import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';

export interface StoredRow {
  readonly entry: SessionStoreEntry;
  /** The entry's stored JSON text, when the source read it as text (absent: serialise `entry`). */
  readonly text?: string;
}

/** The text to store for `row`: the one it came with, else the entry serialised. */
export function rowText(row: StoredRow): string {
  return row.text ?? JSON.stringify(row.entry);
}
