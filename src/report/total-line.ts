/**
 * The last line of `go`, `run` and `demo`: what this run spent, side questions included, and what
 * the whole task has spent so far (every run and aside in the run directory).
 *
 * Invariants:
 * - The task figure is `taskSpend`, the same one `flower status` and `flower report` print.
 * - This run's asides are the aside rows that started after the run did: they are answered in a
 *   runtime of their own (`<run dir>/aside/`), so the main runtime's books never see them.
 * - Read-only and never throws (a books problem must not turn a finished run into a failure).
 */
import { join } from 'node:path';
import { peekManifest } from '../runtime/manifest.js';
import { ASIDE_RUN_DIR, taskSpend } from '../runtime/task-spend.js';

/**
 * `total $0.5100 this run (asides $0.0100) · $1.2000 for the whole task`. `costNote` follows every
 * dollar figure (the demo marks each one as simulated).
 */
export function totalLine(runDir: string, runUsd: number, since: number, costNote = ''): string {
  const usd = (value: number) => `$${value.toFixed(4)}${costNote}`;
  let asides = 0;
  let task: number | undefined;
  try {
    for (const row of peekManifest(join(runDir, ASIDE_RUN_DIR)).document) {
      const started = typeof row.started_at === 'number' ? row.started_at : 0;
      if (started >= since && typeof row.cost_usd === 'number' && Number.isFinite(row.cost_usd))
        asides += row.cost_usd;
    }
    task = taskSpend(runDir).totalUsd;
  } catch {
    // The run's own figure still stands.
  }
  const run = Math.round((runUsd + asides) * 10_000) / 10_000;
  const asidePart = asides > 0 ? ` (asides ${usd(asides)})` : '';
  const taskPart = task === undefined ? '' : ` · ${usd(task)} for the whole task`;
  return `total ${usd(run)} this run${asidePart}${taskPart}`;
}
