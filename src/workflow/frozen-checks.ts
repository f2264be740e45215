/**
 * The goal's checks as they were frozen when the goal was set: the commands flower will run for it.
 *
 * Why: `goal.md` lies in the workbench, which the workers may write. A worker that appended
 * `- extra — check: \`touch …/PWNED\`` to it had the command run by flower at the next start
 * (issue 19, observation 5). The checks a human (or the set-goal step) agreed to are kept where no
 * agent can write or read: the run directory, which every sandbox hides.
 *
 * Invariants:
 * - The record lives in `<runDir>/frozen-checks.json` (0600, written atomically), one entry per goal
 *   file, keyed by the goal's path relative to the run directory (a moved task keeps its record).
 * - Only flower writes it: when the set-goal step sets the goal, when a human's triage answer adds
 *   items, when a human approves changed checks, and when a goal is first seen without a record (a
 *   goal written by hand before the first run, or by a version of flower without records).
 * - A check is its command and its own time limit; the item's wording is not part of it, so a
 *   reworded description is no change, and a changed command is one removed and one added.
 * - The comparison is pure (`compareChecks`): what runs when the frozen set holds is the current
 *   items whose checks are frozen, in their order, then the frozen checks the file no longer has.
 *   Items without a check, and checks that cannot be read (they run nothing; they fail), pass through.
 * - When the set-goal step derives the goal again it carries a person's items into the new one
 *   (goal-edits.ts) but freezes only its own checks and carried ones that already were frozen: a
 *   carried check is an added one here, asked about before it runs, left out unattended.
 * - `goal.md` itself is never rewritten here: a person's edit stays on disk, whatever runs.
 * - A record that cannot be read counts as an empty frozen set: every check in the file is then
 *   "added", so nothing unapproved runs because the record was damaged.
 */
import { readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { readCheck } from '../checks/syntax.js';
import { writeFileAtomic } from '../config/atomic-file.js';
import { PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE } from '../config/private-files.js';

/** One frozen check: the item as it was written, its command and its own time limit. */
export interface FrozenCheck {
  readonly item: string;
  readonly command: string;
  readonly timeoutMs?: number;
}

/** How the checks of a goal file differ from the frozen ones. */
export interface ChecksChange {
  /** Checks in the file that were never frozen (not run unless a human approves them). */
  readonly added: readonly FrozenCheck[];
  /** Frozen checks the file no longer has (they still run unless a human approves the change). */
  readonly removed: readonly FrozenCheck[];
  /** The items to hand the check runner when the frozen set holds. */
  readonly frozenItems: readonly string[];
}

export const FROZEN_CHECKS_FILE = 'frozen-checks.json';

export function frozenChecksPath(runDir: string): string {
  return join(runDir, FROZEN_CHECKS_FILE);
}

/** The checks among checklist items (unreadable ones left out: they run nothing). */
export function checksOf(items: readonly string[]): FrozenCheck[] {
  const checks: FrozenCheck[] = [];
  for (const item of items) {
    const check = readCheck(item);
    if (check.kind !== 'check') continue;
    checks.push({
      item,
      command: check.command,
      ...(check.timeoutMs === undefined ? {} : { timeoutMs: check.timeoutMs }),
    });
  }
  return checks;
}

/** What makes two checks the same check: the command and its limit. */
function identity(check: Pick<FrozenCheck, 'command' | 'timeoutMs'>): string {
  return `${check.timeoutMs ?? ''}\u0000${check.command}`;
}

/** How `items` (the goal file's checklist now) differ from `frozen`. Pure. */
export function compareChecks(items: readonly string[], frozen: readonly FrozenCheck[]): ChecksChange {
  const kept = new Set(frozen.map(identity));
  const present = new Set<string>();
  const added: FrozenCheck[] = [];
  const frozenItems: string[] = [];
  for (const item of items) {
    const check = readCheck(item);
    if (check.kind !== 'check') {
      frozenItems.push(item);
      continue;
    }
    const key = identity(check);
    present.add(key);
    if (kept.has(key)) frozenItems.push(item);
    else if (!added.some((other) => identity(other) === key))
      added.push({
        item,
        command: check.command,
        ...(check.timeoutMs === undefined ? {} : { timeoutMs: check.timeoutMs }),
      });
  }
  const removed = frozen.filter((check) => !present.has(identity(check)));
  frozenItems.push(...removed.map((check) => check.item));
  return { added, removed, frozenItems };
}

/** Whether the file's checks are not the frozen ones. */
export function hasChanged(change: ChecksChange): boolean {
  return change.added.length > 0 || change.removed.length > 0;
}

/** One short form of a change, to remember a decision by within a process. */
export function changeSignature(change: ChecksChange): string {
  return JSON.stringify([change.added.map(identity), change.removed.map(identity)]);
}

interface Record {
  readonly version: 1;
  readonly goals: { readonly [goal: string]: readonly FrozenCheck[] };
}

function readRecord(runDir: string): Record | 'damaged' | undefined {
  let text: string;
  try {
    text = readFileSync(frozenChecksPath(runDir), 'utf8');
  } catch {
    return undefined;
  }
  try {
    const parsed = JSON.parse(text) as Partial<Record>;
    if (parsed.version !== 1 || typeof parsed.goals !== 'object' || parsed.goals === null) return 'damaged';
    return parsed as Record;
  } catch {
    return 'damaged';
  }
}

function goalKey(runDir: string, goalPath: string): string {
  return relative(resolve(runDir), resolve(goalPath));
}

/** The frozen checks of `goalPath`; undefined when none were ever frozen; empty when the record is damaged. */
export function loadFrozenChecks(runDir: string, goalPath: string): FrozenCheck[] | undefined {
  const record = readRecord(runDir);
  if (record === undefined) return undefined;
  if (record === 'damaged') return [];
  const checks = record.goals[goalKey(runDir, goalPath)];
  if (!Array.isArray(checks)) return undefined;
  return checks.filter(
    (check): check is FrozenCheck =>
      typeof check?.item === 'string' &&
      typeof check.command === 'string' &&
      (check.timeoutMs === undefined || typeof check.timeoutMs === 'number'),
  );
}

/** Freezes `items`' checks as the ones `goalPath` runs. */
export function freezeChecks(runDir: string, goalPath: string, items: readonly string[]): void {
  const record = readRecord(runDir);
  const goals = typeof record === 'object' ? { ...record.goals } : {};
  goals[goalKey(runDir, goalPath)] = checksOf(items);
  const next: Record = { version: 1, goals };
  writeFileAtomic(frozenChecksPath(runDir), `${JSON.stringify(next, null, 2)}\n`, {
    mode: PRIVATE_FILE_MODE,
    directoryMode: PRIVATE_DIRECTORY_MODE,
  });
}

/** Adds `items`' checks to the frozen ones of `goalPath` (a human's triage answer). */
export function addFrozenChecks(runDir: string, goalPath: string, items: readonly string[]): void {
  const frozen = loadFrozenChecks(runDir, goalPath) ?? [];
  const added = compareChecks(items, frozen).added;
  if (added.length === 0) return;
  freezeChecks(runDir, goalPath, [...frozen.map((check) => check.item), ...added.map((check) => check.item)]);
}
