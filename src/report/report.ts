/**
 * The run report: one document (the `--json` output, the source of the terminal and HTML views)
 * built from a run directory's books and transcripts.
 *
 * Invariants:
 * - Keys are snake_case and stable; new keys may be added, none renamed (the README documents it).
 * - `totals` is the whole task: every run's steps plus the asides, the same rows `taskSpend` adds,
 *   so `status`, `report` and the final `total` line of `go`/`run` agree. `steps` and `runs` list
 *   the last run only unless `all` is asked for. Rows from before `--new` started the task count in
 *   `archived_cost_usd` only (task-spend.ts).
 * - The step's `cost_usd` is the SDK's figure; the ledger's dollars are shown next to it with the
 *   difference (`reconciliation`), never folded into it.
 * - A step still running (its session was written after its last row ended, it has no row yet, or
 *   its in-flight marker is there) appears with outcome `running`, its turns and time so far, and
 *   the process at work when its marker names one (`running · pid 4242 since 14:05`).
 * - Under `--all`, each step and run says whether it belongs to a task `--new` archived.
 * - Every string in the document, keys too (tool names, Bash command words), has passed through
 *   the output sink's `shownFields` (secrets masked, controls and bidi visible and inert): the
 *   model names its tools, workers, files and steps, and `--json`, the text and the HTML page all
 *   print from this one document. Count tables are merged after masking, so two names that mask
 *   alike add up instead of one overwriting the other.
 * - Building is pure: `collectReport` reads once through `RunData`, `buildReport` computes.
 */

import { shown, shownFields } from '../output/sink.js';
import { isDemoRun } from '../runtime/demo-run.js';
import type { SessionTranscripts } from '../runtime/ledger.js';
import {
  ledgerCost,
  reconcile,
  roundUsd,
  type StepLedger,
  stepLedger,
  type ThreadLedger,
  type TokenCounts,
  UNBOUNDED,
  type WorkerLedger,
  windowed,
} from '../runtime/ledger.js';
import type { ResumeRewrite } from '../runtime/step-result.js';
import { readTaskStart, sumTaskSpend } from '../runtime/task-spend.js';
import { Brief } from '../workflow/brief.js';
import { Goal } from '../workflow/goal.js';
import type { InFlightAttempt, RunData, StoredSession, TaskWorker, WorkbenchData } from './run-data.js';
import { type CheckRecord, type Outcome, type StepRecord, stepRecords, verdictLine } from './steps.js';
import {
  addCount,
  addSides,
  type CacheTokens,
  type ContextDrop,
  cacheHitRatio,
  downsample,
  emptySide,
  type Outage,
  type SideStats,
  stepThreads,
} from './threads.js';

export const REPORT_VERSION = 1;

/** How many points of each generation's context curve the document keeps. */
export const CURVE_POINTS_PER_GENERATION = 400;
/** How many of a step's largest context drops the curve keeps on top of that. */
export const CURVE_KEPT_DROPS = 100;

export interface ReportOptions {
  /** Every run, not only the last one. */
  all?: boolean;
  /** Epoch seconds "now" (tests); default the clock. */
  now?: number;
}

export interface ThreadTotals extends TokenCounts {
  turns: number;
  cost_usd: number | null;
}

export interface StepReport {
  step: string;
  run: string;
  /** Whether the step belongs to a task `--new` archived (it started before this task did). */
  archived: boolean;
  outcome: Outcome;
  detail: string;
  /** For `rejected`: what was missing (a gate's list, or the judge's "Not passed"); else empty. */
  missing: string[];
  ok: boolean;
  cost_usd: number;
  num_turns: number;
  attempts: number;
  resumed: boolean;
  handoffs: number;
  duration_s: number;
  started_at: number;
  ended_at: number;
  session_ids: string[];
  verdict: {
    verdict: string;
    reason: string;
    round: number | null;
    rounds: number | null;
    checks: CheckRecord[];
    /** The judge's "Not passed" items: what is left to do. */
    not_passed: string[];
  } | null;
  main: ThreadLedger;
  workers: WorkerLedger[];
  /** Where the ledger came from: the row (written when the step ended) or the transcripts now. */
  ledger_source: 'manifest' | 'transcripts';
  reconciliation: { sdk_usd: number; ledger_usd: number | null; difference_usd: number | null };
  threads: { main: SideStats; workers: SideStats };
  context: {
    peak: number;
    handoff_at: number | null;
    generations: Array<{ generation: number; session_id: string; points: Array<[number, number]> }>;
    drops: ContextDrop[];
    /** Epoch seconds at which each later generation started (a handoff), when known. */
    handoff_times: number[];
  };
  cache: CacheTokens;
  cache_hit_ratio: number | null;
  denials: number;
  bash_first_words: Record<string, number>;
  outages: Outage[];
  errors: string[];
  rewrites: ResumeRewrite[];
}

export interface RunReport {
  report_version: number;
  generated_at: string;
  workspace: string;
  run_dir: string;
  scope: 'last run' | 'all runs';
  /** `flower demo` wrote this run directory: its dollar figures price a scripted model's usage. */
  simulated_cost: boolean;
  /** Problems with the run directory's own files, one line each. */
  notices: string[];
  manifest: { state: 'ok' | 'missing' | 'corrupt'; reason: string | null; set_aside: string[] };
  /** The brief's goal line, the frozen goal's statement and checks, the latest ruling. */
  task: { request: string | null; goal: string | null; checks: string[]; last_verdict: string | null };
  runs: Array<{
    run: string;
    /** A run of a task `--new` archived (it started before this task did). */
    archived: boolean;
    started_at: number;
    ended_at: number;
    steps: number;
    cost_usd: number;
  }>;
  steps: StepReport[];
  threads: { main: SideStats; workers: SideStats; workers_share_of_chars: number | null };
  cache: CacheTokens & { hit_ratio: number | null };
  denials: number;
  bash_first_words: Record<string, number>;
  outages: Array<Outage & { step: string }>;
  retries: number;
  workbench: {
    root: string;
    scripts: { files: number; bytes: number };
    artifacts: { files: number; bytes: number };
    notes: { files: number; bytes: number };
    spill: { files: number; bytes: number };
  } | null;
  questions: { asked: number; answered: number; assumed: number; other: number };
  asides: {
    count: number;
    cost_usd: number;
    items: Array<{ started_at: number; ok: boolean; cost_usd: number; text: string }>;
  };
  /** Work of owners that lost the task, kept aside by the shared store (null: none). */
  fenced_out: { entries: number; sessions: string[]; cost_usd: number | null; changes: number } | null;
  totals: {
    cost_usd: number;
    steps_cost_usd: number;
    asides_cost_usd: number;
    /** What tasks archived by `--new` in this run directory spent; not part of `cost_usd`. */
    archived_cost_usd: number;
    runs: number;
    main: ThreadTotals;
    workers: ThreadTotals;
    ledger_cost_usd: number | null;
  };
}

/** What `buildReport` works from: the books, the transcripts, the workbench. */
export interface ReportInput {
  data: Pick<
    RunData,
    | 'location'
    | 'manifest'
    | 'setAside'
    | 'asides'
    | 'lineage'
    | 'store'
    | 'workbench'
    | 'fencedOut'
    | 'inFlight'
  >;
  /** Transcripts by session id (every session of every step, read once). */
  transcripts: ReadonlyMap<string, SessionTranscripts>;
}

/** A window slack for clocks: the binary stamps entries a little after flower stamps the step. */
const WINDOW_SLACK_S = 1;

const emptyThread = (): ThreadTotals => ({
  turns: 0,
  input_tokens: 0,
  output_tokens: 0,
  cache_read_input_tokens: 0,
  cache_creation_input_tokens: 0,
  cost_usd: 0,
});

function addThread(total: ThreadTotals, thread: ThreadLedger): void {
  total.turns += thread.turns;
  total.input_tokens += thread.input_tokens;
  total.output_tokens += thread.output_tokens;
  total.cache_read_input_tokens += thread.cache_read_input_tokens;
  total.cache_creation_input_tokens += thread.cache_creation_input_tokens;
  total.cost_usd =
    total.cost_usd === null || thread.cost_usd === null ? null : roundUsd(total.cost_usd + thread.cost_usd);
}

/**
 * Steps that are running now (or stopped without a record): a stored session written after the
 * last row covering it ended, a lineage step with no row, a session nothing covers that was
 * written after the last recorded step (a judge at work), or an in-flight marker (an attempt with
 * no row yet: its process says which step, since when, and whether it still runs). Each gets a
 * record with outcome `running`; a marker's record names the process in its detail.
 */
export function runningSteps(
  records: readonly StepRecord[],
  lineageSteps: Readonly<Record<string, string>>,
  sessions: ReadonlyMap<string, StoredSession>,
  inFlight: readonly InFlightAttempt[] = [],
): StepRecord[] {
  const coveredUntil = new Map<string, { until: number; step: string }>();
  for (const record of records) {
    for (const id of record.sessions) {
      const known = coveredUntil.get(id);
      if (known === undefined || known.until < record.endedAt)
        coveredUntil.set(id, { until: record.endedAt, step: record.step });
    }
  }
  const lastEnd = Math.max(0, ...records.map((record) => record.endedAt));
  const nameOf = new Map(Object.entries(lineageSteps).map(([name, id]) => [id, name]));
  const markers = new Map(inFlight.map((attempt) => [attempt.sessionId, attempt]));
  const running: StepRecord[] = [];
  const ids = new Set([...sessions.keys(), ...markers.keys()]);
  for (const sessionId of ids) {
    const session = sessions.get(sessionId);
    const marker = markers.get(sessionId);
    const covered = coveredUntil.get(sessionId);
    const named = nameOf.get(sessionId);
    if (marker === undefined) {
      const writtenAt = (session?.mtime ?? 0) / 1000;
      let since: number;
      if (covered !== undefined) since = covered.until;
      else if (named !== undefined) since = 0;
      else since = lastEnd;
      if ((covered !== undefined || named === undefined) && writtenAt <= since + WINDOW_SLACK_S) continue;
      running.push(
        runningRecord(
          named ?? (covered ? roundedOn(covered.step) : '(unrecorded session)'),
          sessionId,
          since,
          covered !== undefined,
          RUNNING_UNKNOWN,
        ),
      );
      continue;
    }
    // A marker is removed when the step's row is written: while it is there, the attempt has none.
    // A row of its session that ended after it started means the marker is stale (a run directory
    // another machine moved on from, read beside the database): that work is recorded.
    if (covered !== undefined && covered.until >= marker.since) continue;
    running.push(
      runningRecord(
        marker.step || named || '(unrecorded session)',
        sessionId,
        marker.since,
        covered !== undefined,
        workerDetail(marker),
      ),
    );
  }
  return running.sort((a, b) => a.startedAt - b.startedAt);
}

/** What a running step without a marker is known to be. */
export const RUNNING_UNKNOWN = 'running now, or stopped before it recorded a result';

/** `HH:MM`, local time. */
export function clockTime(epochSeconds: number): string {
  const at = new Date(epochSeconds * 1000);
  return `${String(at.getHours()).padStart(2, '0')}:${String(at.getMinutes()).padStart(2, '0')}`;
}

/**
 * Who runs a step or the task, from its own record: `running · pid 4242 since 14:05`; a process
 * that is gone stopped before it recorded a result; one on another host cannot be judged here.
 */
export function workerDetail(worker: TaskWorker): string {
  const since = worker.since > 0 ? ` since ${clockTime(worker.since)}` : '';
  if (worker.alive === false)
    return `stopped before it recorded a result: pid ${worker.pid}${since} is gone (the next flower run here books it and continues)`;
  if (worker.alive === null) return `running on host ${worker.host} · pid ${worker.pid}${since}`;
  return `running · pid ${worker.pid}${since}`;
}

function runningRecord(
  step: string,
  sessionId: string,
  startedAt: number,
  resumed: boolean,
  detail: string,
): StepRecord {
  return {
    step,
    run: '',
    sessionId,
    sessions: [sessionId],
    ok: false,
    costUsd: 0,
    numTurns: 0,
    attempts: 1,
    resumed,
    handoffs: 0,
    durationS: 0,
    startedAt,
    endedAt: 0,
    error: null,
    errors: [],
    text: '',
    context: 0,
    outcome: 'running',
    detail,
    missing: [],
    verdict: undefined,
    ledger: undefined,
    handoffAt: undefined,
    rewrites: [],
  };
}

/**
 * The running steps of a run directory. None when the manifest is unreadable: every session would
 * then look unrecorded, and calling finished work "running" is worse than saying nothing.
 */
export function inferRunning(
  data: Pick<RunData, 'manifest' | 'lineage' | 'store' | 'inFlight'>,
  records: readonly StepRecord[],
): StepRecord[] {
  if (data.manifest.state === 'corrupt') return [];
  const sessions = data.store.state === 'ok' ? data.store.sessions : new Map<string, StoredSession>();
  // Without a readable store only the markers say anything (the first step, before its first write).
  return runningSteps(records, data.lineage.document.steps, sessions, data.inFlight ?? []);
}

/** A record from before `--new` started this task (the boundary task-spend.ts counts by). */
function isArchived(record: StepRecord, taskStart: number): boolean {
  if (taskStart <= 0 || record.outcome === 'running') return false;
  const start = record.startedAt || record.endedAt;
  return start < taskStart;
}

/** The label a step that continues `step`'s session carries while it has no row of its own. */
function roundedOn(step: string): string {
  return `${step} (continued)`;
}

/** The first line of the brief's goal: what was asked for. */
export function requestOf(brief: string | undefined): string | null {
  if (brief === undefined) return null;
  const line = Brief.parse(brief)
    .goal.split('\n')
    .find((text) => text.trim() !== '');
  return line ? shown(line.trim()) : null;
}

/** Q&A log states: answered by a person, decided by the agent itself, or anything else. */
export function questionCounts(qaLog: string | undefined): RunReport['questions'] {
  const counts = { asked: 0, answered: 0, assumed: 0, other: 0 };
  if (!qaLog) return counts;
  for (const line of qaLog.split('\n')) {
    if (/^\s*-\s+\*\*Q\*\*/.test(line)) counts.asked += 1;
    const state = /^\s*-\s+\*\*A\*\*\s+\[([a-z_]+)\]/.exec(line)?.[1];
    if (state === 'answered') counts.answered += 1;
    else if (state === 'timeout') counts.assumed += 1;
    else if (state !== undefined) counts.other += 1;
  }
  return counts;
}

function workbenchReport(workbench: WorkbenchData | undefined): RunReport['workbench'] {
  if (workbench === undefined) return null;
  const { root, scripts, artifacts, notes, spill } = workbench;
  return { root, scripts, artifacts, notes, spill };
}

/** Lines about the run directory's own files that the reader must know about. */
function noticesOf(data: ReportInput['data']): string[] {
  const notices: string[] = [];
  const manifest = data.location.runDir;
  if (data.manifest.state === 'corrupt') {
    notices.push(
      `${manifest}/manifest.json is unreadable (${data.manifest.reason}); its steps are not counted. It was left as it is: the next flower run here sets it aside.`,
    );
  }
  for (const name of data.setAside)
    notices.push(
      `${manifest}/${name} is an unreadable manifest an earlier run set aside; its steps are not counted.`,
    );
  if (data.asides.state === 'corrupt')
    notices.push(
      `${manifest}/aside/manifest.json is unreadable (${data.asides.reason}); aside costs are not counted.`,
    );
  if (data.lineage.state === 'corrupt')
    notices.push(
      `${manifest}/lineage.json is unreadable (${data.lineage.reason}); running steps cannot be named.`,
    );
  if (data.store.state === 'unreadable')
    notices.push(`The session store could not be read (${data.store.reason}); only the manifest is shown.`);
  return notices;
}

/** A count table with its names through the sink; names that come out alike are added up. */
function shownCounts(counts: Readonly<Record<string, number>>): Record<string, number> {
  const shownTable: Record<string, number> = {};
  for (const [name, count] of Object.entries(counts)) addCount(shownTable, shown(name), count);
  return shownTable;
}

function shownSide(side: SideStats): SideStats {
  return { ...side, tools: shownCounts(side.tools) };
}

function stepReport(
  record: StepRecord,
  transcripts: ReadonlyMap<string, SessionTranscripts>,
  now: number,
  taskStart: number,
): StepReport {
  const sessions = record.sessions
    .map((id) => transcripts.get(id))
    .filter((session): session is SessionTranscripts => session !== undefined);
  const window = {
    from: record.startedAt > 0 ? record.startedAt - WINDOW_SLACK_S : Number.NEGATIVE_INFINITY,
    to: record.endedAt > 0 ? record.endedAt + WINDOW_SLACK_S : Number.POSITIVE_INFINITY,
  };
  const inside = windowed(sessions, window);
  const threads = stepThreads(inside, UNBOUNDED);
  const ledger: StepLedger = record.ledger ?? stepLedger(inside, UNBOUNDED);
  // The largest drops stay visible on the chart; a budget, because a noisy curve can have thousands.
  const keep = new Set(
    [...threads.drops]
      .sort((a, b) => b.from - b.to - (a.from - a.to))
      .slice(0, CURVE_KEPT_DROPS)
      .map((drop) => drop.turn),
  );
  let peak = record.context;
  for (const generation of threads.generations)
    for (const point of generation.points) peak = Math.max(peak, point.tokens);
  // A running step has no row yet: its turns and time so far come from the transcripts and the clock.
  const running = record.outcome === 'running';
  const numTurns = running ? ledger.main.turns : record.numTurns;
  const durationS =
    running && record.startedAt > 0
      ? Math.round(Math.max(0, now - record.startedAt) * 100) / 100
      : record.durationS;
  return {
    step: record.step,
    run: record.run,
    archived: isArchived(record, taskStart),
    outcome: record.outcome,
    detail: record.detail,
    missing: record.missing,
    ok: record.ok,
    cost_usd: record.costUsd,
    num_turns: numTurns,
    attempts: record.attempts,
    resumed: record.resumed,
    handoffs: record.handoffs,
    duration_s: durationS,
    started_at: record.startedAt,
    ended_at: record.endedAt,
    session_ids: record.sessions,
    verdict:
      record.verdict === undefined
        ? null
        : {
            verdict: record.verdict.verdict,
            reason: record.verdict.reason,
            round: record.verdict.round,
            rounds: record.verdict.rounds,
            not_passed: record.verdict.notPassed,
            checks: record.verdict.checks,
          },
    main: ledger.main,
    workers: ledger.workers,
    ledger_source: record.ledger ? 'manifest' : 'transcripts',
    reconciliation: reconcile(record.costUsd, ledger),
    threads: { main: shownSide(threads.main), workers: shownSide(threads.workers) },
    context: {
      peak,
      handoff_at: record.handoffAt ?? null,
      generations: threads.generations.map((generation) => ({
        generation: generation.generation,
        session_id: generation.session_id,
        points: downsample(generation.points, CURVE_POINTS_PER_GENERATION, keep).map(
          (point) => [point.turn, point.tokens] as [number, number],
        ),
      })),
      drops: threads.drops,
      handoff_times: threads.generations
        .slice(1)
        .map((generation) => generation.points[0]?.at)
        .filter((at): at is number => typeof at === 'number'),
    },
    cache: threads.cache,
    cache_hit_ratio: cacheHitRatio(threads.cache),
    denials: threads.denials,
    bash_first_words: shownCounts(threads.bash_first_words),
    outages: threads.outages.map((outage) => ({ ...outage, text: shown(outage.text) })),
    errors: record.errors.map(shown),
    rewrites: record.rewrites,
  };
}

/** The report over the input. Pure. */
export function buildReport(input: ReportInput, options: ReportOptions = {}): RunReport {
  const { data, transcripts } = input;
  const now = options.now ?? Date.now() / 1000;
  const records = stepRecords(data.manifest.document);
  const running = inferRunning(data, records);
  const all = [...records, ...running];
  const taskStart = readTaskStart(data.location.runDir);
  const reports = all.map((record) => stepReport(record, transcripts, now, taskStart));

  const lastRun = records.reduce<StepRecord | undefined>(
    (latest, record) => (latest === undefined || record.startedAt >= latest.startedAt ? record : latest),
    undefined,
  )?.run;
  const inScope = (report: StepReport) =>
    options.all || report.outcome === 'running' || report.run === lastRun;

  let main = emptySide();
  let workers = emptySide();
  const cache: CacheTokens = { input_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };
  const mainTotals = emptyThread();
  const workerTotals = emptyThread();
  const bash: Record<string, number> = {};
  let ledgerUsd: number | null = 0;
  for (const report of reports) {
    main = addSides(main, report.threads.main);
    workers = addSides(workers, report.threads.workers);
    addThread(mainTotals, report.main);
    for (const worker of report.workers) addThread(workerTotals, worker);
    const stepUsd = ledgerCost({ main: report.main, workers: report.workers });
    ledgerUsd = ledgerUsd === null || stepUsd === null ? null : roundUsd(ledgerUsd + stepUsd);
    for (const [word, count] of Object.entries(report.bash_first_words)) addCount(bash, word, count);
    cache.input_tokens += report.cache.input_tokens;
    cache.cache_read_input_tokens += report.cache.cache_read_input_tokens;
    cache.cache_creation_input_tokens += report.cache.cache_creation_input_tokens;
  }
  const spend = sumTaskSpend(data.manifest.document, data.asides.document, taskStart);
  const asideRows = data.asides.document;
  const byRun = new Map<string, RunReport['runs'][number]>();
  for (const record of records) {
    const run = byRun.get(record.run) ?? {
      run: record.run,
      archived: isArchived(record, taskStart),
      started_at: record.startedAt,
      ended_at: record.endedAt,
      steps: 0,
      cost_usd: 0,
    };
    run.started_at = Math.min(run.started_at, record.startedAt);
    run.ended_at = Math.max(run.ended_at, record.endedAt);
    run.steps += 1;
    run.cost_usd = roundUsd(run.cost_usd + record.costUsd);
    byRun.set(record.run, run);
  }
  const goal = data.workbench?.goal === undefined ? undefined : Goal.parse(data.workbench.goal);
  const lastVerdict = [...records].reverse().find((record) => record.verdict !== undefined)?.verdict;
  const document: RunReport = {
    report_version: REPORT_VERSION,
    generated_at: new Date(now * 1000).toISOString(),
    workspace: data.location.workspace,
    run_dir: data.location.runDir,
    scope: options.all ? 'all runs' : 'last run',
    simulated_cost: isDemoRun(data.location.runDir),
    notices: noticesOf(data),
    manifest: {
      state: data.manifest.state,
      reason: data.manifest.state === 'corrupt' ? data.manifest.reason : null,
      set_aside: data.setAside,
    },
    task: {
      request: requestOf(data.workbench?.brief),
      goal: goal?.statement ? shown(goal.statement) : null,
      checks: (goal?.checks ?? []).map(shown),
      last_verdict: lastVerdict ? shown(verdictLine(lastVerdict)) : null,
    },
    runs: [...byRun.values()].filter((run) => options.all || run.run === lastRun),
    steps: reports.filter(inScope),
    threads: {
      main,
      workers,
      workers_share_of_chars:
        main.chars + workers.chars > 0 ? workers.chars / (main.chars + workers.chars) : null,
    },
    cache: { ...cache, hit_ratio: cacheHitRatio(cache) },
    denials: reports.reduce((sum, report) => sum + report.denials, 0),
    bash_first_words: bash,
    outages: reports.flatMap((report) => report.outages.map((outage) => ({ ...outage, step: report.step }))),
    retries: reports.reduce((sum, report) => sum + Math.max(0, report.attempts - 1), 0),
    workbench: workbenchReport(data.workbench),
    questions: questionCounts(data.workbench?.qaLog),
    asides: {
      count: asideRows.length,
      cost_usd: spend.asidesUsd,
      items: asideRows.map((row) => ({
        started_at: typeof row.started_at === 'number' ? row.started_at : 0,
        ok: row.ok === true,
        cost_usd: typeof row.cost_usd === 'number' ? row.cost_usd : 0,
        text: shown(typeof row.text === 'string' ? row.text : '').slice(0, 500),
      })),
    },
    fenced_out:
      data.fencedOut === undefined
        ? null
        : {
            entries: data.fencedOut.entries,
            sessions: data.fencedOut.sessions.map((id) => shown(id)),
            cost_usd: data.fencedOut.costUsd,
            changes: data.fencedOut.changes,
          },
    totals: {
      cost_usd: spend.totalUsd,
      steps_cost_usd: spend.stepsUsd,
      asides_cost_usd: spend.asidesUsd,
      archived_cost_usd: spend.archivedUsd,
      runs: spend.runs,
      main: mainTotals,
      workers: workerTotals,
      ledger_cost_usd: ledgerUsd,
    },
  };
  // One pass over the whole document: every string and key in it came from the run (step names,
  // reasons, commands, worker descriptions, agent types, models, ids, the workspace, notices).
  // Fields cut above (a row's text) were shown before the cut, so a cut cannot split a secret.
  return shownFields(document);
}

/** Reads every step's transcripts once and builds the report. */
export async function collectReport(data: RunData, options: ReportOptions = {}): Promise<RunReport> {
  const records = stepRecords(data.manifest.document);
  const running = inferRunning(data, records);
  const ids = [...new Set([...records, ...running].flatMap((record) => record.sessions))];
  const transcripts = new Map((await data.transcripts(ids)).map((session) => [session.sessionId, session]));
  return buildReport({ data, transcripts }, options);
}
