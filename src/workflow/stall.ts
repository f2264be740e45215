/**
 * The no-progress brake: after each judged round, what the round left behind — which checks pass,
 * which items the judge still holds open, and what the workspace holds — and whether the last N
 * rounds all ended in exactly the same place.
 *
 * Loop-until-done wrappers without such a brake have run thousands of rounds overnight on a task
 * that had stopped moving. A round that changed none of the three cannot be told apart from the
 * one before it, so paying for another one like it is the waste the brake exists to stop.
 *
 * Invariants:
 * - `limit` is the number of rounds in a row that ended in the same state (default 2: a round that
 *   ends exactly where the previous one ended trips it); 0 turns the brake off, and so does 1 (one
 *   round always equals itself; the CLI refuses `--stall 1`). The first round has nothing to
 *   compare with and never trips it.
 * - Any change in any of the three parts is progress: a file written, a check that flipped, an
 *   open item the judge closed or added.
 * - Pure apart from the state it keeps: the caller measures, this compares and words the stop.
 */
import type { CheckRun } from '../checks/runner.js';
import type { WorkspaceState } from '../checks/workspace-state.js';
import type { Verdict } from './verdict.js';

/** What a round left behind. */
export interface RoundState {
  /** `item → passed`, in checklist order. */
  readonly checks: ReadonlyArray<readonly [string, boolean]>;
  /** The judge's open items, normalised and sorted. */
  readonly open: readonly string[];
  readonly workspace: string;
}

export const DEFAULT_STALL_ROUNDS = 2;

const normalise = (text: string) => text.replace(/\s+/g, ' ').trim().toLowerCase();

export function roundState(
  runs: readonly CheckRun[],
  verdict: Verdict,
  workspace: WorkspaceState,
): RoundState {
  return {
    checks: runs.map((run) => [run.item, run.passed] as const),
    open: [...new Set(verdict.failed.map(normalise))].filter(Boolean).sort(),
    workspace: `${workspace.method}:${workspace.hash}`,
  };
}

export function sameState(a: RoundState, b: RoundState): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

export class StallWatch {
  private readonly states: RoundState[] = [];

  constructor(readonly limit: number = DEFAULT_STALL_ROUNDS) {}

  /** Records a round's state; true when the last `limit` rounds all ended in this same state. */
  record(state: RoundState): boolean {
    this.states.push(state);
    if (this.limit < 2) return false;
    return this.unchangedRounds() >= this.limit;
  }

  /** How many rounds in a row, counting the last, ended in the last state. */
  unchangedRounds(): number {
    const last = this.states.at(-1);
    if (last === undefined) return 0;
    let count = 0;
    for (
      let index = this.states.length - 1;
      index >= 0 && sameState(this.states[index] as RoundState, last);
      index--
    )
      count++;
    return count;
  }

  /** A human chose to go on: count afresh from the last state. */
  restart(): void {
    this.states.splice(0, this.states.length - 1);
  }

  /** The one line that says what stayed the same. */
  stopLine(): string {
    const last = this.states.at(-1);
    const rounds = this.unchangedRounds();
    const failing = last?.checks.filter(([, passed]) => !passed).length ?? 0;
    const checks = last?.checks.length
      ? `the same ${failing} of ${last.checks.length} check${last.checks.length === 1 ? '' : 's'} failing`
      : 'no checks to tell';
    const open = last?.open.length
      ? `the same ${last.open.length} item${last.open.length === 1 ? '' : 's'} open`
      : 'no open items named';
    return (
      `no progress in ${rounds} rounds in a row: ${checks}, ${open}, and the workspace unchanged; ` +
      'flower continues from here (--stall 0 turns the brake off)'
    );
  }
}
