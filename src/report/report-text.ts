/**
 * The run report as terminal lines: the same document `--json` writes, laid out to be read.
 *
 * Invariants:
 * - Every figure printed is a field of the `RunReport` (no second computation that could differ).
 * - Plain text through the output sink: the document's strings went through `shownFields` when it
 *   was built, and every line goes through `shown` again here (idempotent), so a document built
 *   elsewhere cannot print a tool name's escape sequence or a token either. Colour is the caller's.
 * - Pure.
 */
import { shown } from '../output/sink.js';
import type { ThreadLedger } from '../runtime/ledger.js';
import type { RunReport, StepReport } from './report.js';
import { rejectedLine } from './steps.js';
import type { SideStats } from './threads.js';

/** Outages listed one per line; a long flaky run has hundreds. */
export const LISTED_OUTAGES = 10;

export function usd(value: number | null): string {
  return value === null ? 'unpriced' : `$${value.toFixed(4)}`;
}

/** `950`, `12.3K`, `4.5M`. */
export function compact(value: number): string {
  if (value < 1000) return String(value);
  if (value < 1_000_000) return `${(value / 1000).toFixed(1)}K`;
  return `${(value / 1_000_000).toFixed(1)}M`;
}

export function percent(ratio: number | null): string {
  return ratio === null ? 'n/a' : `${(ratio * 100).toFixed(1)}%`;
}

/** `m:ss` or `h:mm:ss`. */
export function duration(seconds: number): string {
  const total = Math.max(0, Math.round(seconds));
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const rest = String(total % 60).padStart(2, '0');
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, '0')}:${rest}` : `${minutes}:${rest}`;
}

/** `; not passed: a; b` after a verdict that was not achieved, else nothing. */
export function notPassedText(step: Pick<StepReport, 'verdict'>): string {
  const left = step.verdict?.verdict === 'achieved' ? [] : (step.verdict?.not_passed ?? []);
  return left.length > 0 ? `; not passed: ${left.join('; ')}` : '';
}

/** A step's outcome in one line: `ok`, or the outcome, why, and what was missing or is left. */
export function outcomeText(step: StepReport): string {
  if (step.outcome === 'ok') return 'ok';
  if (step.outcome === 'verdict') return `verdict: ${step.detail}${notPassedText(step)}`;
  if (step.outcome === 'rejected') return `rejected: ${rejectedLine(step)}`;
  // A running step's detail says it already: `running · pid 4242 since 14:05`, or that it stopped.
  if (step.outcome === 'running') return step.detail;
  return `${step.outcome}: ${step.detail}`;
}

/** A step's time; a running one's is the time so far, said as such. */
function timeText(step: StepReport): string {
  if (step.outcome !== 'running') return duration(step.duration_s);
  return step.started_at > 0 ? `${duration(step.duration_s)} so far` : 'running';
}

function table(rows: string[][], indent = '  '): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    for (const [index, cell] of row.entries()) widths[index] = Math.max(widths[index] ?? 0, cell.length);
  }
  return rows.map((row) =>
    `${indent}${row.map((cell, index) => (index === row.length - 1 ? cell : cell.padEnd(widths[index] ?? 0))).join('  ')}`.trimEnd(),
  );
}

function ledgerCells(label: string, thread: ThreadLedger, extra = ''): string[] {
  return [
    label,
    thread.turns === 1 ? '1 turn' : `${thread.turns} turns`,
    `${compact(thread.input_tokens)} in`,
    `${compact(thread.cache_read_input_tokens)} cache read`,
    `${compact(thread.cache_creation_input_tokens)} cache write`,
    `${compact(thread.output_tokens)} out`,
    usd(thread.cost_usd),
    extra,
  ];
}

function sideLine(label: string, side: SideStats): string {
  return `  ${label.padEnd(8)} ${side.entries} entries · ${side.turns} turns · ${compact(side.chars)} chars · ${compact(side.tokens)} tokens · ${side.tool_calls} tool calls`;
}

function tools(counts: Record<string, number>): string {
  const sorted = Object.entries(counts).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  return sorted.length === 0 ? 'none' : sorted.map(([name, calls]) => `${name} ${calls}`).join(', ');
}

function bytes(value: number): string {
  return value < 1024 ? `${value} B` : `${compact(value).replace(/K$/, ' K').replace(/M$/, ' M')}B`;
}

export function reportLines(report: RunReport): string[] {
  const lines: string[] = [];
  const scope = report.scope === 'last run' ? 'the last run (--all for every run)' : 'every run';
  lines.push(`flower report · ${report.workspace} · ${scope}`);
  for (const notice of report.notices) lines.push(`! ${notice}`);
  if (report.task.request) lines.push(`Task: ${report.task.request}`);
  if (report.task.last_verdict) lines.push(`Last verdict: ${report.task.last_verdict}`);
  if (report.fenced_out !== null) lines.push(fencedOutLine(report.fenced_out));

  lines.push('', 'Steps');
  if (report.steps.length === 0) lines.push('  (no steps recorded)');
  // Every run side by side (--all) needs to say whose each row is: the run, and the task when
  // `--new` archived one in this directory.
  const byRun = report.scope === 'all runs';
  const byTask = byRun && report.steps.some((step) => step.archived);
  const lead = (task: string, run: string) => [...(byTask ? [task] : []), ...(byRun ? [run] : [])];
  const stepRows = [
    [...lead('task', 'run'), 'step', 'outcome', 'cost', 'turns', 'attempts', 'resumed', 'handoffs', 'time'],
  ];
  for (const step of report.steps) {
    stepRows.push([
      ...lead(step.archived ? 'archived' : 'this', step.run || '(now)'),
      step.step,
      outcomeText(step).slice(0, 70),
      step.outcome === 'running' ? '-' : usd(step.cost_usd),
      String(step.num_turns),
      String(step.attempts),
      step.resumed ? 'yes' : 'no',
      String(step.handoffs),
      timeText(step),
    ]);
  }
  if (report.steps.length > 0) lines.push(...table(stepRows));
  // The table cuts an outcome at 70 columns; what a step missed or left open is written out whole.
  const open = report.steps.filter(
    (step) => (step.outcome === 'rejected' && step.missing.length > 0) || notPassedText(step) !== '',
  );
  if (open.length > 0) {
    lines.push('', 'Missing or left open');
    for (const step of open) lines.push(`  ${step.step}: ${outcomeText(step)}`);
  }

  const priced = report.steps.filter((step) => step.main.turns > 0 || step.workers.length > 0);
  if (priced.length > 0) {
    lines.push('', 'Ledger: main thread and workers (tokens and dollars per response, each response once)');
    for (const step of priced) {
      lines.push(`  ${step.step}`);
      const rows = [ledgerCells('main', step.main)];
      for (const worker of step.workers) {
        const name = `${worker.agent_type ?? 'worker'} ${worker.agent_id.slice(0, 8)}`;
        rows.push(
          ledgerCells(name, worker, `${duration(worker.duration_s)} · ${worker.description}`.slice(0, 80)),
        );
      }
      lines.push(...table(rows, '    '));
      const { sdk_usd, ledger_usd, difference_usd } = step.reconciliation;
      lines.push(
        `    ledger ${usd(ledger_usd)} vs the step's own ${usd(sdk_usd)}${difference_usd === null ? ' (a model is not in the price table)' : ` (difference ${difference_usd >= 0 ? '+' : ''}${difference_usd.toFixed(4)})`}`,
      );
    }
  }

  const { main, workers, workers_share_of_chars } = report.threads;
  lines.push('', 'Main thread vs workers');
  lines.push(sideLine('main', main), sideLine('workers', workers));
  lines.push(`  workers' share of body characters: ${percent(workers_share_of_chars)}`);

  lines.push('', 'Context of the main thread (input + cache read + cache write per response)');
  for (const step of report.steps) {
    if (step.context.generations.every((generation) => generation.points.length === 0)) continue;
    const threshold =
      step.context.handoff_at === null
        ? 'no handoff threshold recorded'
        : `handoff at ${compact(step.context.handoff_at)}`;
    const generations = step.context.generations.length;
    const drops =
      step.context.drops.length === 0
        ? 'no drop over 30%'
        : `${step.context.drops.length} drop${step.context.drops.length === 1 ? '' : 's'} over 30%`;
    lines.push(
      `  ${step.step}: peak ${compact(step.context.peak)} · ${threshold} · ${generations} generation${generations === 1 ? '' : 's'} · ${drops}`,
    );
  }
  const cache = report.cache;
  lines.push(
    `  cache hit ratio ${percent(cache.hit_ratio)} (read ${compact(cache.cache_read_input_tokens)}, written ${compact(cache.cache_creation_input_tokens)}, uncached ${compact(cache.input_tokens)})`,
  );

  lines.push('', 'Tools');
  lines.push(`  main:    ${tools(report.threads.main.tools)}`);
  lines.push(`  workers: ${tools(report.threads.workers.tools)}`);
  lines.push(
    `  coordinator calls denied: ${report.denials}; its Bash commands by first word: ${tools(report.bash_first_words)}`,
  );

  lines.push('', 'Outages and retries');
  if (report.outages.length === 0 && report.retries === 0) lines.push('  none');
  for (const outage of report.outages.slice(0, LISTED_OUTAGES))
    lines.push(`  ${outage.step} (${outage.side}): ${outage.text}`);
  if (report.outages.length > LISTED_OUTAGES)
    lines.push(`  … and ${report.outages.length - LISTED_OUTAGES} more (all of them are in --json)`);
  if (report.retries > 0)
    lines.push(`  ${report.retries} attempt${report.retries === 1 ? '' : 's'} retried after a failure`);
  const rewrites = report.steps.flatMap((step) =>
    step.rewrites.map((rewrite) => ({ step: step.step, ...rewrite })),
  );
  if (rewrites.length > 0) {
    lines.push('', 'What the store fed back differently on each resume');
    for (const rewrite of rewrites) {
      lines.push(
        `  ${rewrite.step}: ${rewrite.expired} stale glances expired, ${rewrite.trimmed} large results trimmed (${compact(rewrite.chars_saved)} chars), ${rewrite.denials_dropped} old denials and ${rewrite.pruned} error entries pruned, ${rewrite.orphans_healed} interrupted calls answered`,
      );
    }
  }

  if (report.workbench) {
    const { scripts, artifacts, notes, spill } = report.workbench;
    lines.push(
      '',
      `Workbench ${report.workbench.root}: ${scripts.files} scripts (${bytes(scripts.bytes)}), ${artifacts.files} artifacts (${bytes(artifacts.bytes)}), ${notes.files} notes (${bytes(notes.bytes)}), ${spill.files} spill files (${bytes(spill.bytes)})`,
    );
  }
  const q = report.questions;
  lines.push(
    `Questions: ${q.asked} asked, ${q.answered} answered, ${q.assumed} decided by the agent (nobody answered)${q.other ? `, ${q.other} other` : ''}`,
  );
  lines.push(`Asides: ${report.asides.count} (${usd(report.asides.cost_usd)})`);

  const totals = report.totals;
  lines.push(
    '',
    `Task total: ${usd(totals.cost_usd)} (steps ${usd(totals.steps_cost_usd)} + asides ${usd(totals.asides_cost_usd)}) over ${totals.runs} run${totals.runs === 1 ? '' : 's'}; ledger: main ${usd(totals.main.cost_usd)} + workers ${usd(totals.workers.cost_usd)}`,
  );
  if (totals.archived_cost_usd > 0)
    lines.push(`Archived tasks (before --new): ${usd(totals.archived_cost_usd)}, not in the task total`);
  return lines.map(shown);
}

/** The work of owners that lost the task, in one line (kept aside, never merged). */
export function fencedOutLine(fenced: NonNullable<RunReport['fenced_out']>): string {
  const parts: string[] = [];
  if (fenced.entries > 0)
    parts.push(
      `${fenced.entries} transcript entr${fenced.entries === 1 ? 'y' : 'ies'} of ${fenced.sessions.length} session${fenced.sessions.length === 1 ? '' : 's'} (${fenced.sessions.map((id) => id.slice(0, 8)).join(', ')}), ${usd(fenced.cost_usd)}`,
    );
  if (fenced.changes > 0) parts.push(`${fenced.changes} record${fenced.changes === 1 ? '' : 's'}`);
  return `! Kept aside, never merged: work an owner sent after it lost the task: ${parts.join('; ')}.`;
}
