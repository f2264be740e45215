/**
 * `flower status`: where a task stands, in a dozen lines, from the books alone (no transcript is
 * read, nothing is written, no lock is taken: it works while another flower runs the task).
 *
 * Invariants:
 * - "No task here" is no brief, no step in the manifest and no step running; then the command
 *   prints one line and fails (exit 1).
 * - The spend is the whole task (every run's steps plus the asides), the same figure as the final
 *   `total` line of `go`/`run` and `flower report`.
 * - It always ends with what to type next.
 * - Pure over `RunData`; every string from the run passes through the output sink (`shownFields`
 *   over the status, `shown` over each line).
 */

import { shown, shownFields } from '../output/sink.js';
import { readTaskStart, sumTaskSpend } from '../runtime/task-spend.js';
import { Brief } from '../workflow/brief.js';
import { Goal } from '../workflow/goal.js';
import { inferRunning, requestOf } from './report.js';
import type { RunData } from './run-data.js';
import { rejectedLine, type StepRecord, stepRecords, verdictLine } from './steps.js';

export interface TaskStatus {
  task: string | null;
  checks: string[];
  lastVerdict: string | null;
  steps: Array<{ step: string; state: string; cost_usd: number; run: string }>;
  spend: ReturnType<typeof sumTaskSpend>;
  /** Epoch seconds of the last recorded activity (a step, an aside, a transcript write). */
  lastActivity: number;
  next: string;
  notices: string[];
}

/** Thrown when there is nothing to show; the message is the one line the command prints. */
export class NoTaskError extends Error {
  override name = 'NoTaskError';
}

function stateOf(record: StepRecord): string {
  switch (record.outcome) {
    case 'ok':
      return 'ok';
    case 'verdict':
      return record.verdict ? verdictLine(record.verdict) : `verdict: ${record.detail}`;
    case 'rejected':
      return `rejected: ${rejectedLine(record)}`;
    case 'failed':
      return `failed: ${record.detail || 'no reason recorded'}`;
    case 'running':
      return record.detail;
  }
}

/** What to type next, from the latest state of the task. */
function nextStep(
  latest: StepRecord | undefined,
  verdict: StepRecord | undefined,
  hasBrief: boolean,
): string {
  if (latest?.outcome === 'running')
    return 'a step is in progress: `flower report` shows it so far; if no flower is running, `flower` continues it';
  if (latest?.outcome === 'failed')
    return `\`flower\` to try again from where it stopped; \`flower log ${latest.step}\` shows what happened`;
  const ruling = verdict?.verdict?.verdict;
  if (ruling === 'achieved' && latest === verdict)
    return '`flower report` for the details; `flower --new "<request>"` starts a new task here';
  if (ruling === 'cannot verify here')
    return '`flower` to decide: accept the result, change the goal, or tell the judge to keep working';
  if (!hasBrief) return '`flower` to continue clarifying the request';
  return '`flower` to continue where it stopped';
}

/** The status of the task whose books `data` holds; throws NoTaskError when there is none. */
export function taskStatus(
  data: Pick<RunData, 'location' | 'manifest' | 'asides' | 'lineage' | 'store' | 'workbench' | 'setAside'>,
): TaskStatus {
  const records = stepRecords(data.manifest.document);
  const brief = data.workbench?.brief === undefined ? undefined : Brief.parse(data.workbench.brief);
  const notices: string[] = [];
  if (data.manifest.state === 'corrupt') {
    notices.push(
      `runs/manifest.json is unreadable (${data.manifest.reason}); its steps are not shown. It was left as it is: the next flower run here sets it aside.`,
    );
  }
  const running = inferRunning(data, records);
  if (
    records.length === 0 &&
    running.length === 0 &&
    brief === undefined &&
    data.manifest.state !== 'corrupt'
  ) {
    throw new NoTaskError(
      `No task in ${data.location.workspace} (no steps in ${data.location.runDir}/manifest.json and no brief); start one with: flower "<what you want done>"`,
    );
  }
  // The latest row of each step label, in the order the labels first appeared.
  const latest = new Map<string, StepRecord>();
  for (const record of [...records, ...running]) {
    latest.delete(record.step);
    latest.set(record.step, record);
  }
  const spend = sumTaskSpend(
    data.manifest.document,
    data.asides.document,
    readTaskStart(data.location.runDir),
  );
  const storeActivity =
    data.store.state === 'ok'
      ? Math.max(0, ...[...data.store.sessions.values()].map((s) => s.mtime / 1000))
      : 0;
  const verdict = [...records].reverse().find((record) => record.verdict !== undefined);
  const goal = data.workbench?.goal === undefined ? undefined : Goal.parse(data.workbench.goal);
  const ordered = [...records, ...running];
  return shownFields<TaskStatus>({
    task: requestOf(data.workbench?.brief),
    checks: [...(goal?.checks ?? [])],
    lastVerdict: verdict?.verdict ? verdictLine(verdict.verdict) : null,
    steps: [...latest.values()].map((record) => ({
      step: record.step,
      state: stateOf(record),
      cost_usd: record.costUsd,
      run: record.run,
    })),
    spend,
    lastActivity: Math.max(spend.lastActivity, storeActivity),
    next: nextStep(ordered.at(-1), verdict, brief?.complete ?? false),
    notices,
  });
}

/** `3 minutes ago`, `2 hours ago`, `just now`. */
export function ago(seconds: number): string {
  if (seconds < 60) return 'just now';
  const units: Array<[number, string]> = [
    [86_400, 'day'],
    [3_600, 'hour'],
    [60, 'minute'],
  ];
  for (const [size, name] of units) {
    if (seconds >= size) {
      const count = Math.floor(seconds / size);
      return `${count} ${name}${count === 1 ? '' : 's'} ago`;
    }
  }
  return 'just now';
}

/** Local `YYYY-MM-DD HH:MM`. */
export function localTime(epochSeconds: number): string {
  const at = new Date(epochSeconds * 1000);
  const pad = (value: number) => String(value).padStart(2, '0');
  return `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())} ${pad(at.getHours())}:${pad(at.getMinutes())}`;
}

/** The status as terminal lines (plain text). */
export function statusLines(status: TaskStatus, now: number = Date.now() / 1000): string[] {
  const lines: string[] = [];
  for (const notice of status.notices) lines.push(`! ${notice}`);
  lines.push(`Task: ${status.task ?? '(no brief yet)'}`);
  if (status.checks.length > 0) {
    lines.push('Goal checks:');
    for (const check of status.checks) lines.push(`  - ${check}`);
  }
  if (status.lastVerdict) lines.push(`Last verdict: ${status.lastVerdict}`);
  if (status.steps.length > 0) {
    lines.push('Steps:');
    const width = Math.min(28, Math.max(...status.steps.map((step) => step.step.length)));
    for (const step of status.steps) {
      const cost = step.cost_usd > 0 ? `  $${step.cost_usd.toFixed(4)}` : '';
      lines.push(`  ${step.step.padEnd(width)}  ${step.state}${cost}`);
    }
  }
  const { spend } = status;
  lines.push(
    `Spent: $${spend.totalUsd.toFixed(4)} on the whole task (steps $${spend.stepsUsd.toFixed(4)}, asides $${spend.asidesUsd.toFixed(4)}) over ${spend.runs} run${spend.runs === 1 ? '' : 's'}`,
  );
  if (spend.archivedUsd > 0)
    lines.push(
      `  and $${spend.archivedUsd.toFixed(4)} on tasks archived by --new (not in this task's total or --budget)`,
    );
  if (status.lastActivity > 0)
    lines.push(
      `Last ran: ${localTime(status.lastActivity)} (${ago(Math.max(0, now - status.lastActivity))})`,
    );
  lines.push(`Next: ${status.next}`);
  return lines.map(shown);
}
