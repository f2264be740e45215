/**
 * A person's edits of `goal.md` survive the goal being derived again (issue 21, High 3).
 *
 * Why: adding a request to a task (`flower "more words"` on a task, a wake with a remark) derives
 * the goal again from the brief alone. It used to overwrite `goal.md` whole: a check the user had
 * added by hand vanished, no copy was kept, and the run could end "achieved" though that check
 * would have failed.
 *
 * Invariants:
 * - What the set-goal step derived is recorded in `<runDir>/goal-as-set.json` (0600, written
 *   atomically; one entry per goal file, keyed like the frozen checks), as it reads on disk (after
 *   the output sink). Only the set-goal step writes it; the run directory is out of every agent's
 *   reach, so the record is flower's word on what flower wrote.
 * - A hand edit is the difference between the file and that record (`handEdits`, pure): items the
 *   record does not have are *added*, items it has that the file lacks are *removed*, a statement
 *   that no longer starts with the recorded one is *rewritten*. Triage's accepted mark is no edit
 *   (`itemKey`). Without a record (a goal written by hand before the first run, or by a flower
 *   without records) only the checks the frozen set lacks count as added, and the rest is unknown.
 * - When the goal is derived again, added items are carried into the new goal after its own items
 *   (`carryEdits`, pure), unless it already has them (the same item, or a check with the same
 *   command and limit); text appended to the statement is appended to the new statement too.
 * - What cannot be carried — a rewritten statement, a removed item the new goal brings back, a
 *   goal whose provenance is unknown — is a conflict: the previous file is copied, byte for byte
 *   (it is the person's own text, already on disk beside it), to
 *   `<notes>/archive/goal/<name>-<YYYYmmdd-HHMMSS>.md` before the new goal is written, and one line
 *   says where. Nothing a person wrote vanishes.
 * - Carrying a check does not approve it: the set-goal step freezes only its own checks and carried
 *   checks that were already frozen. A carried check that never was is "a check added after the
 *   goal was set" under the frozen-checks rules (frozen-checks.ts): flower cannot tell a person's
 *   edit of goal.md from an agent's, so the guard asks on a terminal before it runs one, and an
 *   unattended run leaves it out, says so in a line, and tells the judge.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { basename, dirname, extname, join, relative, resolve } from 'node:path';
import { readCheck } from '../checks/syntax.js';
import { writeFileAtomic } from '../config/atomic-file.js';
import { PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE } from '../config/private-files.js';
import { compactTimestamp } from '../config/timestamp.js';
import { shown } from '../output/sink.js';
import { checksOf, compareChecks, type FrozenCheck, loadFrozenChecks } from './frozen-checks.js';
import { Goal, itemKey } from './goal.js';

export const GOAL_AS_SET_FILE = 'goal-as-set.json';

/** Subtype of the `system` event that says what became of a person's edits. */
export const GOAL_EDITS_EVENT = 'goal-edits';

/** How a goal file differs from what the set-goal step wrote. */
export interface HandEdits {
  /** Items the file has and flower did not write (in the file's order). */
  readonly added: readonly string[];
  /** Items flower wrote that the file no longer has. */
  readonly removed: readonly string[];
  /** Text a person appended to the statement ('' when none). */
  readonly statementAdded: string;
  /** The statement was changed other than by appending to it. */
  readonly statementRewritten: boolean;
  /** There is no record of what flower wrote: edits other than unfrozen checks cannot be told. */
  readonly unknown: boolean;
}

export const NO_EDITS: HandEdits = {
  added: [],
  removed: [],
  statementAdded: '',
  statementRewritten: false,
  unknown: false,
};

/** Whether `edits` holds anything a person wrote. */
export function hasEdits(edits: HandEdits): boolean {
  return (
    edits.added.length > 0 ||
    edits.removed.length > 0 ||
    edits.statementAdded !== '' ||
    edits.statementRewritten ||
    edits.unknown
  );
}

/** Whether `items` already holds `item`: the same item, or a check with the same command and limit. */
function holds(items: readonly string[], item: string): boolean {
  const key = itemKey(item);
  if (items.some((other) => itemKey(other) === key)) return true;
  if (readCheck(item).kind !== 'check') return false;
  return compareChecks([item], checksOf(items)).added.length === 0;
}

/**
 * How `onDisk` differs from `asSet`, what the set-goal step wrote. Without a record, the checks
 * `frozen` lacks count as added (when there is a frozen set) and the edits are unknown. Pure.
 */
export function handEdits(onDisk: Goal, asSet: Goal | undefined, frozen?: readonly FrozenCheck[]): HandEdits {
  if (asSet === undefined) {
    const added = frozen === undefined ? [] : compareChecks(onDisk.checks, frozen).added.map((c) => c.item);
    return { ...NO_EDITS, added, unknown: true };
  }
  const written = asSet.checks.map(itemKey);
  const present = onDisk.checks.map(itemKey);
  const added = onDisk.checks.filter((item) => !written.includes(itemKey(item)));
  const removed = asSet.checks.filter((item) => !present.includes(itemKey(item)));
  const before = asSet.statement.trim();
  const now = onDisk.statement.trim();
  const appended = now !== before && now.startsWith(before);
  return {
    added,
    removed,
    statementAdded: appended ? now.slice(before.length).trim() : '',
    statementRewritten: now !== before && !appended,
    unknown: false,
  };
}

/** The new goal with a person's edits carried into it, what was carried, and what could not be. */
export interface Carried {
  readonly goal: Goal;
  /** The added items now in the new goal. */
  readonly items: readonly string[];
  /** What could not be carried (empty when everything was): worth a copy of the previous file. */
  readonly conflicts: readonly string[];
}

/** Carries `edits` (of the goal `previous`) into `next`, the goal derived again. Pure. */
export function carryEdits(next: Goal, edits: HandEdits, previous?: Goal): Carried {
  const items: string[] = [];
  for (const item of edits.added) if (!holds([...next.checks, ...items], item)) items.push(item);
  const statement = edits.statementAdded ? `${next.statement}\n\n${edits.statementAdded}` : next.statement;
  const conflicts: string[] = [];
  if (edits.statementRewritten) conflicts.push('the statement was rewritten');
  const back = edits.removed.filter((item) => holds(next.checks, item));
  if (back.length > 0)
    conflicts.push(`${back.length} item${back.length === 1 ? '' : 's'} you removed came back`);
  if (edits.unknown && previous !== undefined && !sameGoal(previous, next))
    conflicts.push('flower has no record of what it wrote there');
  return { goal: new Goal({ statement, checks: [...next.checks, ...items] }), items, conflicts };
}

function sameGoal(a: Goal, b: Goal): boolean {
  return (
    a.statement === b.statement &&
    a.checks.length === b.checks.length &&
    a.checks.every((item, index) => itemKey(item) === itemKey(b.checks[index] ?? ''))
  );
}

// ---- the record -----------------------------------------------------------------------------

interface GoalRecord {
  readonly version: 1;
  readonly goals: {
    readonly [goal: string]: { readonly statement: string; readonly checks: readonly string[] };
  };
}

function recordPath(runDir: string): string {
  return join(runDir, GOAL_AS_SET_FILE);
}

function goalKey(runDir: string, goalPath: string): string {
  return relative(resolve(runDir), resolve(goalPath));
}

function readRecord(runDir: string): GoalRecord | undefined {
  try {
    const parsed = JSON.parse(readFileSync(recordPath(runDir), 'utf8')) as Partial<GoalRecord>;
    if (parsed.version !== 1 || typeof parsed.goals !== 'object' || parsed.goals === null) return undefined;
    return parsed as GoalRecord;
  } catch {
    return undefined;
  }
}

/** What the set-goal step last wrote to `goalPath`; undefined without a (readable) record. */
export function loadGoalAsSet(runDir: string, goalPath: string): Goal | undefined {
  const entry = readRecord(runDir)?.goals[goalKey(runDir, goalPath)];
  if (typeof entry?.statement !== 'string' || !Array.isArray(entry.checks)) return undefined;
  return new Goal({ statement: entry.statement, checks: entry.checks.filter((c) => typeof c === 'string') });
}

/** Records `goal` as what the set-goal step wrote to `goalPath` (as it reads on disk: masked). */
export function recordGoalAsSet(runDir: string, goalPath: string, goal: Goal): void {
  const onDisk = Goal.parse(shown(goal.toMarkdown()));
  const goals = { ...(readRecord(runDir)?.goals ?? {}) };
  goals[goalKey(runDir, goalPath)] = { statement: onDisk.statement, checks: [...onDisk.checks] };
  const record: GoalRecord = { version: 1, goals };
  writeFileAtomic(recordPath(runDir), `${JSON.stringify(record, null, 2)}\n`, {
    mode: PRIVATE_FILE_MODE,
    directoryMode: PRIVATE_DIRECTORY_MODE,
  });
}

// ---- deriving again -------------------------------------------------------------------------

/** What `setGoalAgain` did. */
export interface GoalRewrite {
  /** The goal now in the file: the derived one with the person's edits carried in. */
  readonly goal: Goal;
  /** Absolute path of the goal file. */
  readonly path: string;
  /** Items a person added by hand that the new goal keeps. */
  readonly carried: readonly string[];
  /** Where the previous file was copied (only when something could not be carried). */
  readonly keptAt?: string;
  /** What could not be carried. */
  readonly conflicts: readonly string[];
}

/** The person's edits in the goal file at `goalPath` now (none when there is no file). */
export function editsOnDisk(
  goalPath: string,
  runDir: string | undefined,
): { previous?: Goal; edits: HandEdits } {
  const previous = existsSync(goalPath) ? Goal.load(goalPath) : undefined;
  if (previous === undefined) return { edits: NO_EDITS };
  if (runDir === undefined) return { previous, edits: handEdits(previous, undefined) };
  const frozen = loadFrozenChecks(runDir, goalPath);
  return { previous, edits: handEdits(previous, loadGoalAsSet(runDir, goalPath), frozen) };
}

/**
 * Writes `derived`, the goal the set-goal step just derived, to `goalPath`, carrying the person's
 * edits of the file it replaces; a previous file with edits that cannot be carried is copied first.
 * Records `derived` (not the carried items: they stay the person's) as what flower wrote.
 */
export function setGoalAgain(
  derived: Goal,
  goalPath: string,
  runDir: string | undefined,
  at: Date = new Date(),
): GoalRewrite {
  const { previous, edits } = editsOnDisk(goalPath, runDir);
  const carried = hasEdits(edits)
    ? carryEdits(derived, edits, previous)
    : { goal: derived, items: [], conflicts: [] };
  let keptAt: string | undefined;
  if (carried.conflicts.length > 0) keptAt = keepCopy(goalPath, at);
  const path = carried.goal.write(goalPath);
  if (runDir) recordGoalAsSet(runDir, goalPath, derived);
  return {
    goal: carried.goal,
    path,
    carried: carried.items,
    conflicts: carried.conflicts,
    ...(keptAt === undefined ? {} : { keptAt }),
  };
}

/** Copies the goal file to `<dir>/archive/goal/<name>-<stamp>.md` (a free name); returns the copy's path. */
function keepCopy(goalPath: string, at: Date): string {
  const directory = join(dirname(resolve(goalPath)), 'archive', 'goal');
  mkdirSync(directory, { recursive: true });
  const name = basename(goalPath, extname(goalPath));
  let target = join(directory, `${name}-${compactTimestamp(at)}.md`);
  for (let n = 2; existsSync(target); n++)
    target = join(directory, `${name}-${compactTimestamp(at)}-${n}.md`);
  copyFileSync(goalPath, target);
  return target;
}

/**
 * The one line said about a rewrite that met a person's edits ('' when there were none). It starts
 * with what happened, so that a line cut at the terminal's width still says it.
 */
export function rewriteLine(rewrite: GoalRewrite, shownPath: (path: string) => string = (p) => p): string {
  const file = basename(rewrite.path);
  const parts: string[] = [];
  if (rewrite.keptAt !== undefined)
    parts.push(
      `your previous ${file} is kept at ${shownPath(rewrite.keptAt)} (${rewrite.conflicts.join('; ')})`,
    );
  if (rewrite.carried.length > 0)
    parts.push(
      `kept ${rewrite.carried.length} item${rewrite.carried.length === 1 ? '' : 's'} you added by hand: ${rewrite.carried.map((item) => `"${item}"`).join(', ')}`,
    );
  return parts.length === 0 ? '' : `${file} derived again; ${parts.join('; ')}`;
}
