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
 */
import { join } from 'node:path';
import { peekManifest, type StoredManifestRow } from './manifest.js';

/** The subdirectory of a run directory that holds the side questions' own books. */
export const ASIDE_RUN_DIR = 'aside';

export interface TaskSpend {
  /** USD spent by the task's own steps (work, judges, handoffs) in every run. */
  stepsUsd: number;
  /** USD spent answering side questions. */
  asidesUsd: number;
  /** `stepsUsd + asidesUsd`, rounded to 1/100 cent. */
  totalUsd: number;
  /** How many distinct runs (processes) recorded steps. */
  runs: number;
  /** Epoch seconds of the latest step start or end seen, or 0 when nothing ran yet. */
  lastActivity: number;
}

function costOf(row: StoredManifestRow): number {
  const cost = row.cost_usd;
  return typeof cost === 'number' && Number.isFinite(cost) && cost > 0 ? cost : 0;
}

function latestTime(row: StoredManifestRow): number {
  const times = [row.ended_at, row.started_at].filter(
    (value): value is number => typeof value === 'number' && Number.isFinite(value),
  );
  return times.length > 0 ? Math.max(...times) : 0;
}

function roundCents(usd: number): number {
  return Math.round(usd * 10_000) / 10_000;
}

/** The spend of the task recorded in `rows` (main) and `asideRows`. Pure. */
export function sumTaskSpend(
  rows: readonly StoredManifestRow[],
  asideRows: readonly StoredManifestRow[] = [],
): TaskSpend {
  const stepsUsd = rows.reduce((sum, row) => sum + costOf(row), 0);
  const asidesUsd = asideRows.reduce((sum, row) => sum + costOf(row), 0);
  const runs = new Set(rows.map((row) => row.run).filter((run) => typeof run === 'string'));
  const lastActivity = Math.max(0, ...rows.map(latestTime), ...asideRows.map(latestTime));
  return {
    stepsUsd: roundCents(stepsUsd),
    asidesUsd: roundCents(asidesUsd),
    totalUsd: roundCents(stepsUsd + asidesUsd),
    runs: runs.size,
    lastActivity,
  };
}

/** The spend of the task whose books are in `runDir`. Never throws, never writes. */
export function taskSpend(runDir: string): TaskSpend {
  return sumTaskSpend(peekManifest(runDir).document, peekManifest(join(runDir, ASIDE_RUN_DIR)).document);
}
