/**
 * What the manifest remembers about the goal guard of a task: how many rounds have been judged
 * against the current goal, and the last ruling. `--rounds` caps a task, not a process, so a wake
 * must know what earlier processes already spent; and a wake after "achieved" must be able to say
 * so instead of paying for another round.
 *
 * Invariants:
 * - Read-only (`peekManifest`): safe while another flower writes, never repairs a file.
 * - The current goal starts at the last set-goal step that passed: a goal derived again (a wake
 *   with a remark, `--new`) starts counting from zero. Without a set-goal row (the goal was written
 *   by hand) every ruling counts.
 * - A round counts when the judge ruled: a row with a `verdict`, or (rows of older versions) a
 *   judge row that ended ok. A judge killed or cut off by the budget before ruling spent no round.
 */
import { peekManifest, type StoredManifestRow } from '../runtime/manifest.js';
import type { ManifestCheck } from '../runtime/step-result.js';
import { Verdict, type VerdictState } from './verdict.js';

export interface PastRuling {
  /** undefined when the judge's text could not be read (it counted as not yet). */
  readonly verdict: VerdictState | undefined;
  readonly reason: string;
  readonly notPassed: readonly string[];
  /** The round it judged (1-based, counted within the current goal). */
  readonly round: number;
  /** The task's round cap at the time, when recorded. */
  readonly rounds?: number;
  /** Epoch seconds when the ruling ended. */
  readonly at: number;
  /** USD the ruling itself cost. */
  readonly costUsd: number;
  readonly checks: readonly ManifestCheck[];
}

export interface GoalHistory {
  /** Rounds judged against the current goal. */
  readonly rounds: number;
  readonly last?: PastRuling;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const number = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);

function rulingOf(row: StoredManifestRow, round: number): PastRuling {
  const recorded = typeof row.verdict === 'string';
  const parsed = recorded ? undefined : Verdict.parse(typeof row.text === 'string' ? row.text : '');
  return {
    verdict: recorded ? row.verdict : parsed?.state,
    reason: typeof row.reason === 'string' ? row.reason : (parsed?.reason ?? ''),
    notPassed: Array.isArray(row.not_passed) ? row.not_passed.map(String) : [...(parsed?.failed ?? [])],
    round: typeof row.round === 'number' ? row.round : round,
    ...(typeof row.rounds === 'number' ? { rounds: row.rounds } : {}),
    at: number(row.ended_at) || number(row.started_at),
    costUsd: number(row.cost_usd),
    checks: Array.isArray(row.checks) ? row.checks : [],
  };
}

/** The goal guard's history in `rows` for the judge labelled `verdictLabel` (`work:verdict`). Pure. */
export function historyOf(
  rows: readonly StoredManifestRow[],
  verdictLabel: string,
  goalStep: string,
): GoalHistory {
  const label = new RegExp(`^${escapeRegExp(verdictLabel)}#\\d+$`);
  const goalSetAt = Math.max(
    -Infinity,
    ...rows.filter((row) => row.step === goalStep && row.ok === true).map((row) => number(row.started_at)),
  );
  const judged = rows
    .filter((row) => typeof row.step === 'string' && label.test(row.step))
    .filter((row) => number(row.started_at) >= goalSetAt)
    .filter((row) => typeof row.verdict === 'string' || (row.verdict === undefined && row.ok === true))
    .sort((a, b) => number(a.started_at) - number(b.started_at));
  const lastRow = judged.at(-1);
  return lastRow === undefined
    ? { rounds: judged.length }
    : { rounds: judged.length, last: rulingOf(lastRow, judged.length) };
}

/** The goal guard's history of the task whose books are in `runDir`. Never throws, never writes. */
export function goalHistory(runDir: string, verdictLabel: string, goalStep: string): GoalHistory {
  return historyOf(peekManifest(runDir).document, verdictLabel, goalStep);
}
