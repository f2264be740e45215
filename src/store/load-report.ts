/**
 * What the rewrite layers changed in one load, for the terminal and the manifest. Counts only;
 * the stored transcript itself never changes.
 */
export interface LoadReport {
  /** Glance results replaced by the expiry note. */
  expired: number;
  /** Large results replaced by a pointer to their spill file. */
  trimmed: number;
  /** Large results left verbatim because they are among the newest. */
  kept: number;
  /** Characters no longer fed back by trimming. */
  charsSaved: number;
  /** Large results left verbatim because the spill directory could not be written. */
  spillFailures: number;
  /** Entries removed whole (synthetic error turns, emptied denial messages). */
  pruned: number;
  /** Denied tool calls removed. */
  denialsDropped: number;
  interruptsNeutralised: number;
  orphansHealed: number;
  /** Results removed because nothing in the transcript asked for them (after an unreadable row). */
  strayResults: number;
  /** Stored rows that were not JSON objects, left out with the chain relinked around them. */
  unreadableRows: number;
}

export const emptyLoadReport: Readonly<LoadReport> = Object.freeze({
  expired: 0,
  trimmed: 0,
  kept: 0,
  charsSaved: 0,
  spillFailures: 0,
  pruned: 0,
  denialsDropped: 0,
  interruptsNeutralised: 0,
  orphansHealed: 0,
  strayResults: 0,
  unreadableRows: 0,
});

/** One line for the terminal; tokens are estimated at four characters each. */
export function describeLoadReport(report: LoadReport): string {
  const parts: string[] = [];
  if (report.trimmed > 0) {
    parts.push(
      `trimmed ${report.trimmed} tool result${plural(report.trimmed)} (kept the newest ${report.kept}), saving ~${Math.floor(report.charsSaved / 4)} tokens`,
    );
  }
  if (report.expired > 0)
    parts.push(`${report.expired} stale glance result${plural(report.expired)} marked expired`);
  if (report.denialsDropped > 0) {
    parts.push(`dropped ${report.denialsDropped} old denied call${plural(report.denialsDropped)}`);
  }
  if (report.pruned > 0)
    parts.push(`removed ${report.pruned} error or emptied entr${report.pruned === 1 ? 'y' : 'ies'}`);
  if (report.interruptsNeutralised > 0) {
    parts.push(
      `neutralised ${report.interruptsNeutralised} interrupted result${plural(report.interruptsNeutralised)}`,
    );
  }
  if (report.orphansHealed > 0)
    parts.push(`answered ${report.orphansHealed} interrupted tool call${plural(report.orphansHealed)}`);
  if (report.unreadableRows > 0) {
    parts.push(
      `left out ${report.unreadableRows} unreadable stored row${plural(report.unreadableRows)} and relinked the history around ${report.unreadableRows === 1 ? 'it' : 'them'}`,
    );
  }
  if (report.strayResults > 0)
    parts.push(`removed ${report.strayResults} result${plural(report.strayResults)} of a call that is gone`);
  if (report.spillFailures > 0) {
    parts.push(
      `${report.spillFailures} large result${plural(report.spillFailures)} left untrimmed: the spill directory is not writable`,
    );
  }
  return parts.length === 0 ? 'history unchanged' : parts.join('; ');
}

const plural = (count: number): string => (count === 1 ? '' : 's');
