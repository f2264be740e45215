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

  /** The one line that says what stayed the same: which checks keep failing, which items stay open. */
  stopLine(): string {
    const last = this.states.at(-1);
    const rounds = this.unchangedRounds();
    const checks = last?.checks ?? [];
    const failing = checks.filter(([, passed]) => !passed).map(([item]) => item);
    const checksPart =
      checks.length === 0
        ? 'no checks to tell'
        : failing.length === 0
          ? checks.length === 1
            ? 'its check passing'
            : `all ${checks.length} checks passing`
          : failing.length === checks.length && checks.length === 1
            ? `the same check failing (${named(failing)})`
            : `the same ${failing.length} of ${checks.length} checks failing (${named(failing)})`;
    const open = last?.open ?? [];
    const openPart =
      open.length === 0
        ? 'no open items named'
        : open.length === 1
          ? `the same item open (${named(open)})`
          : `the same ${open.length} items open (${named(open)})`;
    return (
      `no progress in ${rounds} rounds in a row: ${checksPart}, ${openPart}, and the workspace unchanged; ` +
      'flower continues from here (--stall 0 turns the brake off)'
    );
  }
}

/** How many items a stop line names, and how much of each: enough to recognise, one line in all. */
export const STOP_LINE_NAMES = { items: 2, chars: 60 } as const;

/** `"a"; "b" and 3 more`, each shortened: the stop line says which, not only how many. */
function named(items: readonly string[]): string {
  const shown = items.slice(0, STOP_LINE_NAMES.items).map((item) => {
    const flat = item.replace(/\s+/g, ' ').trim();
    return `"${flat.length > STOP_LINE_NAMES.chars ? `${flat.slice(0, STOP_LINE_NAMES.chars - 3)}...` : flat}"`;
  });
  const more = items.length - shown.length;
  return `${shown.join('; ')}${more > 0 ? ` and ${more} more` : ''}`;
}
