/**
 * `flower status`: where a task stands, in a dozen lines, from the books (nothing is written, no
 * lock is taken: it works while another flower runs the task). One transcript is read, and only
 * when there is no brief yet: the first message of the latest session, to show the request as the
 * user typed it (a clarification under way, or `once`, which never writes a brief).
 *
 * Invariants:
 * - "No task here" is no brief, no step in the manifest, no step running and no flower holding the
 *   task's lock; then the command prints one line and fails (exit 1). A flower at work on its first
 *   step (nothing recorded yet) is a task.
 * - A running step names the process at work (its in-flight marker: pid and start), and so does
 *   the task's lock holder, so a person can tell a working flower from a stopped one.
 * - The spend is the whole task (every run's steps plus the asides), the same figure as the final
 *   `total` line of `go`/`run` and `flower report`.
 * - It always ends with what to type next: after an achieved verdict (and its bequest) a new task;
 *   after `once`, the command that continues its session.
 * - Lines fit the width they are given (a long verdict or rejection wraps under its column).
 * - Pure over `RunData`; every string from the run passes through the output sink (`shownFields`
 *   over the status, `shown` over each line).
 */

import { shown, shownFields } from '../output/sink.js';
import { readTaskStart, sumTaskSpend } from '../runtime/task-spend.js';
import type { Entry } from '../store/transcript.js';
import { Brief } from '../workflow/brief.js';
import { Goal } from '../workflow/goal.js';
import { textsOf } from './conversation.js';
import { inferRunning, requestOf, workerDetail } from './report.js';
import type { RunData } from './run-data.js';
import { rejectedLine, type StepRecord, stepRecords, verdictLine } from './steps.js';

export interface TaskStatus {
  task: string | null;
  /** The flower holding the task's lock now (`running · pid N since HH:MM`), else null. */
  working: string | null;
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

// Step names status reads meaning into. Their owners (cli/commands/once-action.ts, the workflow's
// bequest-turn.ts) load the SDK and the database driver, which a read-only command must not; a
// unit test keeps these equal to theirs.
/** The manifest step name of every `flower once` run. */
export const ONCE_STEP = 'ad-hoc';
/** The step that writes the bequest after an achieved verdict. */
export const BEQUEST_STEP = 'bequest';

/** What to type next, from the latest state of the task. */
function nextStep(
  records: readonly StepRecord[],
  verdict: StepRecord | undefined,
  hasBrief: boolean,
  working: boolean,
): string {
  const latest = records.at(-1);
  if (working)
    return 'a flower is working on this task: `flower report` shows it so far; `flower status` again to follow it';
  if (latest?.outcome === 'running')
    return 'a step is in progress: `flower report` shows it so far; if no flower is running, `flower` continues it';
  if (latest?.step === ONCE_STEP && latest.sessionId) {
    const how = latest.outcome === 'failed' ? 'to try again' : 'to continue it';
    return `\`flower once --resume ${latest.sessionId} "<what next>"\` ${how}; \`flower log ${ONCE_STEP}\` shows what it did`;
  }
  if (latest?.outcome === 'failed')
    return `\`flower\` to try again from where it stopped; \`flower log ${latest.step}\` shows what happened`;
  const ruling = verdict?.verdict?.verdict;
  // The bequest runs after an achieved verdict: it leaves the task achieved.
  const after = verdict === undefined ? [] : records.slice(records.indexOf(verdict) + 1);
  if (ruling === 'achieved' && after.every((record) => record.step === BEQUEST_STEP))
    return '`flower report` for the details; `flower --new "<request>"` starts a new task here';
  if (ruling === 'cannot verify here')
    return '`flower` to decide: accept the result, change the goal, or tell the judge to keep working';
  if (!hasBrief) return '`flower` to continue clarifying the request';
  return '`flower` to continue where it stopped';
}

/**
 * The workbench index a session's first message starts with (agents/workbench.ts `promptBlock`):
 * its first line, and the line that ends it; the request follows after a blank line.
 */
const PREAMBLE_START = '# Workbench ';
const PREAMBLE_LAST_LINE = /^3\. Each key decision goes in its own file under /m;

/** The request a session's first message carries, without the workbench index before it. */
export function requestIn(entries: readonly Entry[]): string | null {
  const first = entries.find(
    (entry) => entry.type === 'user' && entry.isMeta !== true && textsOf(entry).length > 0,
  );
  if (first === undefined) return null;
  let text = textsOf(first).join('\n');
  if (text.startsWith(PREAMBLE_START)) {
    const end = PREAMBLE_LAST_LINE.exec(text);
    if (end === null) return null;
    const lineEnd = text.indexOf('\n', end.index);
    text = lineEnd < 0 ? '' : text.slice(lineEnd + 1);
  }
  const line = text.split('\n').find((candidate) => candidate.trim() !== '');
  return line === undefined ? null : shown(line.trim());
}

/** `taskStatus` plus, when there is no brief, the request as typed (one transcript read). */
export async function collectStatus(data: RunData): Promise<TaskStatus> {
  let typed: string | null = null;
  if (data.workbench?.brief === undefined && data.manifest.state !== 'corrupt') {
    const records = stepRecords(data.manifest.document);
    const latest = [...records, ...inferRunning(data, records)].at(-1);
    const sessionId = latest?.sessions[0];
    if (sessionId !== undefined) {
      const [session] = await data.transcripts([sessionId]);
      typed = session === undefined ? null : requestIn(session.main);
    }
  }
  return taskStatus(data, typed);
}

/** The status of the task whose books `data` holds; throws NoTaskError when there is none. */
export function taskStatus(
  data: Pick<
    RunData,
    | 'location'
    | 'manifest'
    | 'asides'
    | 'lineage'
    | 'store'
    | 'workbench'
    | 'setAside'
    | 'holder'
    | 'inFlight'
  >,
  typed: string | null = null,
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
    data.holder === undefined &&
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
    task: requestOf(data.workbench?.brief) ?? typed,
    working: data.holder === undefined ? null : workerDetail(data.holder),
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
    next: nextStep(ordered, verdict, brief?.complete ?? false, data.holder !== undefined),
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

/** How the lines are fitted to the terminal (cli/terminal/terminal-text.ts `wrap`, and a width). */
export interface StatusLayout {
  width: number;
  /** Wraps `text` to `width` columns; every line after the first starts with `restPrefix`. */
  wrap(text: string, width: number, options: { firstPrefix: string; restPrefix: string }): string[];
}

/** The status as terminal lines (plain text), wrapped to `layout.width` when a layout is given. */
export function statusLines(
  status: TaskStatus,
  now: number = Date.now() / 1000,
  layout?: StatusLayout,
): string[] {
  const lines: string[] = [];
  // A line with a label (`Task: `) continues indented by two; a step row under its state column.
  const add = (text: string, firstPrefix = '', restPrefix = '  ') => {
    if (layout === undefined) lines.push(firstPrefix + text);
    else lines.push(...layout.wrap(shown(text), layout.width, { firstPrefix, restPrefix }));
  };
  for (const notice of status.notices) add(notice, '! ');
  add(status.task ?? '(no brief yet, and no request recorded)', 'Task: ');
  if (status.working) add(`a flower is working on this task: ${status.working}`, 'Now: ');
  if (status.checks.length > 0) {
    lines.push('Goal checks:');
    for (const check of status.checks) add(check, '  - ', '    ');
  }
  if (status.lastVerdict) add(status.lastVerdict, 'Last verdict: ');
  if (status.steps.length > 0) {
    lines.push('Steps:');
    const width = Math.min(28, Math.max(...status.steps.map((step) => step.step.length)));
    for (const step of status.steps) {
      const cost = step.cost_usd > 0 ? `  $${step.cost_usd.toFixed(4)}` : '';
      const lead = `  ${step.step.padEnd(width)}  `;
      add(`${step.state}${cost}`, lead, ' '.repeat(Math.min(lead.length, 32)));
    }
  }
  const { spend } = status;
  add(
    `Spent: $${spend.totalUsd.toFixed(4)} on the whole task (steps $${spend.stepsUsd.toFixed(4)}, asides $${spend.asidesUsd.toFixed(4)}) over ${spend.runs} run${spend.runs === 1 ? '' : 's'}`,
  );
  if (spend.archivedUsd > 0)
    add(
      `$${spend.archivedUsd.toFixed(4)} on tasks archived by --new (not in this task's total or --budget)`,
      '  and ',
      '  ',
    );
  if (status.lastActivity > 0)
    add(`${localTime(status.lastActivity)} (${ago(Math.max(0, now - status.lastActivity))})`, 'Last ran: ');
  add(status.next, 'Next: ');
  return lines.map(shown);
}
