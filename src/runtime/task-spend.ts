/**
 * What a task has spent so far: every step of every process that ran in this run directory, plus
 * the side questions asked during those runs (`<run dir>/aside/`, a run directory of its own so the
 * main books never change because someone asked).
 *
 * Invariants:
 * - Read-only: it never writes, locks or repairs a file, so it is safe while a flower runs, and a
 *   corrupt manifest reads as empty here (the writer sets it aside and says so).
 * - One figure for everyone: the final `total` line, `flower status`, `flower report` and the task
 *   budget all add up the same rows, so they can never disagree. The rows agree with the ledger
 *   too: a step cut short by SIGKILL gets its row at the next start in the run directory, before
 *   its first step and so before the budget is read, priced like its ledger (`in-flight.ts`);
 *   until then only `flower report` shows it, as a step still running.
 * - Rows from other versions count when their `cost_usd` is a finite number, and only then.
 * - A task starts where `--new` started it: `--new` writes `<run dir>/task-start.json` (the epoch
 *   seconds it archived the old task), and rows that started earlier (or, with no start, ended
 *   earlier; with neither time, are older than any boundary) belong to the archived tasks. They
 *   count in `archivedUsd`, never in `totalUsd`, so a new task's `--budget` and "whole task" figure
 *   start at zero while `flower status` and `flower report` still show what the archived tasks
 *   cost. The manifest itself is never split or rewritten. A missing or unreadable file is "no
 *   boundary": everything belongs to the current task.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../config/atomic-file.js';
import { PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE } from '../config/private-files.js';
import { peekManifest, type StoredManifestRow } from './manifest.js';

/** The subdirectory of a run directory that holds the side questions' own books. */
export const ASIDE_RUN_DIR = 'aside';
/** The file in a run directory that records when `--new` started the current task. */
export const TASK_START_FILE = 'task-start.json';

export interface TaskSpend {
  /** USD spent by the task's own steps (work, judges, handoffs) in every run. */
  stepsUsd: number;
  /** USD spent answering side questions. */
  asidesUsd: number;
  /** `stepsUsd + asidesUsd`, rounded to 1/100 cent. */
  totalUsd: number;
  /** USD spent by tasks `--new` archived in this run directory (steps and asides), not in `totalUsd`. */
  archivedUsd: number;
  /** How many distinct runs (processes) recorded steps. */
  runs: number;
  /** Epoch seconds of the latest step start or end seen, or 0 when nothing ran yet. */
  lastActivity: number;
}

/** A finite number (`Number.isFinite` takes anything and never converts it). */
const finite = (value: unknown): value is number => Number.isFinite(value);

function costOf(row: StoredManifestRow): number {
  const cost = row.cost_usd;
  // Stryker disable next-line EqualityOperator: a cost of 0 counted is 0
  return finite(cost) && cost > 0 ? cost : 0;
}

function latestTime(row: StoredManifestRow): number {
  return Math.max(0, ...[row.ended_at, row.started_at].filter(finite));
}

function roundCents(usd: number): number {
  return Math.round(usd * 10_000) / 10_000;
}

/** When the row's step began: its start, else its end, else 0 (older than any boundary). */
function startOf(row: StoredManifestRow): number {
  for (const value of [row.started_at, row.ended_at]) if (finite(value)) return value;
  return 0;
}

/**
 * The spend of the task recorded in `rows` (main) and `asideRows`, counting only rows from
 * `taskStart` (epoch seconds; 0 = the whole run directory) on; earlier rows go to `archivedUsd`. Pure.
 */
export function sumTaskSpend(
  allRows: readonly StoredManifestRow[],
  // Stryker disable next-line ArrayDeclaration: a row that is not a record has no cost, run or time: it adds nothing
  allAsideRows: readonly StoredManifestRow[] = [],
  taskStart = 0,
): TaskSpend {
  const current = (row: StoredManifestRow) => taskStart <= 0 || startOf(row) >= taskStart;
  const rows = allRows.filter(current);
  const asideRows = allAsideRows.filter(current);
  const stepsUsd = rows.reduce((sum, row) => sum + costOf(row), 0);
  const asidesUsd = asideRows.reduce((sum, row) => sum + costOf(row), 0);
  const archivedUsd = [...allRows, ...allAsideRows]
    .filter((row) => !current(row))
    .reduce((sum, row) => sum + costOf(row), 0);
  const runs = new Set(rows.map((row) => row.run).filter((run) => typeof run === 'string'));
  const lastActivity = Math.max(0, ...allRows.map(latestTime), ...allAsideRows.map(latestTime));
  return {
    stepsUsd: roundCents(stepsUsd),
    asidesUsd: roundCents(asidesUsd),
    totalUsd: roundCents(stepsUsd + asidesUsd),
    archivedUsd: roundCents(archivedUsd),
    runs: runs.size,
    lastActivity,
  };
}

/** When `--new` started the task whose books are in `runDir` (epoch seconds), or 0. Never throws. */
export function readTaskStart(runDir: string): number {
  try {
    const at = (JSON.parse(readFileSync(join(runDir, TASK_START_FILE), 'utf8')) as { at?: unknown }).at;
    // Stryker disable next-line EqualityOperator: a start at 0 read as 0 is 0
    return finite(at) && at > 0 ? at : 0;
  } catch {
    return 0;
  }
}

/** Records that a new task starts in `runDir` at `at` (epoch seconds); `--new` calls it. */
export function markTaskStart(runDir: string, at: number): void {
  writeFileAtomic(join(runDir, TASK_START_FILE), `${JSON.stringify({ at })}\n`, {
    mode: PRIVATE_FILE_MODE,
    directoryMode: PRIVATE_DIRECTORY_MODE,
  });
}

/** The spend of the task whose books are in `runDir`. Never throws, never writes. */
export function taskSpend(runDir: string): TaskSpend {
  return sumTaskSpend(
    peekManifest(runDir).document,
    peekManifest(join(runDir, ASIDE_RUN_DIR)).document,
    readTaskStart(runDir),
  );
}
