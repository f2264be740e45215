/**
 * Expire layer: old results of quick looks (`git status`, `ls`, `ps` …) are replaced by a short
 * "expired" note when a transcript is loaded for resume.
 *
 * Why: such results are tiny, so trimming by size never touches them, but their truth decays. A
 * `git status` from twenty glances ago is not merely useless, it misleads. Only the newest few
 * stay verbatim.
 *
 * Invariants:
 * - Only Bash results whose command passes `isEphemeral` (the same predicate the coordinator's
 *   guard allows) are candidates. Read results never expire: file contents do not turn
 *   misleading with time and may be exactly what the model is reasoning from.
 * - Only plain-text results up to `maxChars`; larger ones are the trim layer's business.
 * - An error result never expires: it is short, and it tells the model what failed (`command not
 *   found: tree`, "Sibling tool call errored"), which running the command again only repeats.
 * - The note never replaces a text that is not longer than the note: that would make the history
 *   longer and say less. Such a result stays as it is (it still counts as a glance for the age of
 *   the older ones and for `keepRecent`).
 * - The tool_result block stays; only its content changes, and the entry's duplicate copy of the
 *   old text goes with it (see transcript-edits.ts). Protected entries are skipped.
 * - Expired text is not spilled to disk: running the command again is how to get it back.
 * - Pure: the input is never modified.
 */
import { isEphemeral } from './glance.js';
import {
  type Entry,
  indexTranscript,
  type ToolResultSite,
  type TranscriptIndex,
  toolResultText,
} from './transcript.js';
import { TranscriptEdits } from './transcript-edits.js';

export interface EphemeralPolicy {
  /** Off only when the coordinator cannot glance either; the two sets must match. */
  enabled: boolean;
  /** The newest results stay verbatim: the model may be acting on them right now. */
  keepRecent: number;
  /** Results above this are not glances (and are left to the trim layer). */
  maxChars: number;
  /** The note that replaces an expired result; `age` counts glances since, not turns. */
  placeholder: (command: string, age: number) => string;
}

export const defaultEphemeralPolicy: EphemeralPolicy = {
  enabled: true,
  keepRecent: 6,
  maxChars: 2000,
  placeholder: (command, age) =>
    `[result of \`${command}\` expired (${age} glances ago); the state may have changed — run it again if you need it]`,
};

/** How a command is shown in the note: its first line, at most 60 characters. */
export function commandLabel(command: string): string {
  const text = command.trim();
  const end = text.indexOf('\n');
  return text.slice(0, Math.min(end === -1 ? text.length : end, 60));
}

/**
 * Plan the expiry of all but the newest `keepRecent` glance results into `edits`; returns how
 * many expire.
 */
export function planExpiry(index: TranscriptIndex, edits: TranscriptEdits, policy: EphemeralPolicy): number {
  if (!policy.enabled) return 0;
  // Long runs repeat the same few glances thousands of times; judge each distinct command once.
  const verdicts = new Map<string, boolean>();
  const judge = (command: string): boolean => {
    const verdict = isEphemeral(command);
    verdicts.set(command, verdict);
    return verdict;
  };
  const sites: Array<{ site: ToolResultSite; command: string; length: number }> = [];
  for (const site of index.results) {
    // Size first: it is the cheapest test, and half the results of a long run are too large.
    const text = toolResultText(site.block);
    if (text === null || text.length > policy.maxChars) continue;
    const use = index.toolUseById.get(site.block.tool_use_id);
    if (use === undefined || use.name !== 'Bash') continue;
    const command = (use.input as { command?: unknown } | undefined)?.command;
    if (typeof command !== 'string') continue;
    if (verdicts.get(command) ?? judge(command)) sites.push({ site, command, length: text.length });
  }
  const targets = sites.length - Math.max(0, policy.keepRecent);
  const labels = new Map<string, string>();
  const labelOf = (command: string): string => {
    const label = commandLabel(command);
    labels.set(command, label);
    return label;
  };
  let expired = 0;
  for (let position = 0; position < targets; position += 1) {
    const { site, command, length } = sites[position] as (typeof sites)[number];
    const note = policy.placeholder(labels.get(command) ?? labelOf(command), sites.length - position);
    // What failed stays in the model's words; a note no shorter than the text would only add.
    if (site.block.is_error === true || length <= note.length) continue;
    edits.rewriteResult(site, note);
    expired += 1;
  }
  return expired;
}

export interface ExpireResult {
  entries: Entry[];
  expired: number;
}

/** Replace all but the newest `keepRecent` glance results with the expiry note. */
export function expireStaleGlances(
  entries: readonly Entry[],
  policy: EphemeralPolicy = defaultEphemeralPolicy,
): ExpireResult {
  const edits = new TranscriptEdits(indexTranscript(entries));
  const expired = planExpiry(edits.index, edits, policy);
  return { entries: edits.apply(), expired };
}
