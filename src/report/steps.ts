/**
 * Manifest rows as the report reads them: typed, with each step's outcome decided once.
 *
 * Invariants:
 * - Rows from any version are readable: a missing or mistyped field reads as its empty value.
 * - The explicit fields of the goal guard win when a row has them (`verdict`, `reason`, `round`,
 *   `rounds`, `checks` on a verdict row; `rejected` on a work row). Older rows are read from what
 *   they do have: a verdict row's text holds the judge's "## Conclusion", and a round of work is
 *   rejected when the verdict that judged it is not "achieved".
 * - Outcomes are one of: ok, verdict, rejected, failed, running. A verdict row is a verdict even
 *   when it is "not yet": the rejection belongs to the work round it judged.
 * - A step resumed when its row says so, or when its first session is one an earlier row already
 *   used: the workflow and `once --resume` hand the session in, and the runtime's `resumed` flag
 *   counts only resumes in the middle of a step (observed: a round that continued the work session
 *   read `resumed no`).
 * - The manifest's own words stay in the manifest (`killed-unrecorded` is a stable value there);
 *   `detail` says what happened in plain words.
 * - Pure.
 */
import { KILLED_UNRECORDED } from '../runtime/in-flight.js';
import type { StepLedger, ThreadLedger, WorkerLedger } from '../runtime/ledger.js';
import { stepSessions } from '../runtime/ledger.js';
import type { StoredManifestRow } from '../runtime/manifest.js';
import type { ResumeRewrite } from '../runtime/step-result.js';
import { Verdict, type VerdictState } from '../workflow/verdict.js';

export type Outcome = 'ok' | 'verdict' | 'rejected' | 'failed' | 'running';

/** One host-run check of a verdict (the goal guard's `checks` field). */
export interface CheckRecord {
  command: string;
  exit_code: number | null;
  passed: boolean;
  duration_s: number | null;
  output_path: string | null;
}

export interface VerdictRecord {
  /** The ruling, or `unclear` when no conclusion could be read (the guard counts it as not yet). */
  verdict: VerdictState | 'unclear';
  reason: string;
  /** The round of work it judged. */
  round: number | null;
  /** Rounds allowed in all, when the row says. */
  rounds: number | null;
  checks: CheckRecord[];
  /** The judge's "Not passed" items: what is left to do (empty when achieved or not said). */
  notPassed: string[];
}

export interface StepRecord {
  step: string;
  run: string;
  sessionId: string | null;
  /** Sessions in order: those retired by handoffs, then the current one. */
  sessions: string[];
  ok: boolean;
  costUsd: number;
  numTurns: number;
  attempts: number;
  resumed: boolean;
  /** Handoff generations (sessions retired by handoffs). */
  handoffs: number;
  durationS: number;
  /** Epoch seconds. */
  startedAt: number;
  /** Epoch seconds; 0 while running. */
  endedAt: number;
  error: string | null;
  errors: string[];
  text: string;
  /** Peak main-thread context the runtime saw on the last generation. */
  context: number;
  outcome: Outcome;
  /** For `failed` and `rejected`: why. For `verdict`: the ruling and its reason. */
  detail: string;
  /** For `rejected`: what was missing (the row's `missing`, or the judge's "Not passed"). */
  missing: string[];
  verdict: VerdictRecord | undefined;
  /** The ledger as the row recorded it; absent in older rows (the report computes it then). */
  ledger: StepLedger | undefined;
  handoffAt: number | undefined;
  rewrites: ResumeRewrite[];
}

const VERDICT_LABEL = /^(.*):verdict#(\d+)$/;
const ROUND_LABEL = /^(.*)#round(\d+)$/;

const text = (value: unknown): string => (typeof value === 'string' ? value : '');
const number = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) ? value : 0);
const nullableNumber = (value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) ? value : null;
const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const VERDICT_STATES: ReadonlySet<string> = new Set(['achieved', 'not yet', 'cannot verify here']);

function checksOf(value: unknown): CheckRecord[] {
  if (!Array.isArray(value)) return [];
  return value.filter(isRecord).map((check) => ({
    command: text(check.command),
    exit_code: nullableNumber(check.exit_code),
    passed: check.passed === true,
    duration_s: nullableNumber(check.duration_s),
    output_path: typeof check.output_path === 'string' ? check.output_path : null,
  }));
}

/** The verdict a verdict row records: its explicit fields, else what its text says. */
export function verdictOf(row: StoredManifestRow): VerdictRecord | undefined {
  const label = VERDICT_LABEL.exec(text(row.step));
  if (label === null && row.verdict === undefined) return undefined;
  const parsed = Verdict.parse(text(row.text));
  const explicit = typeof row.verdict === 'string' && VERDICT_STATES.has(row.verdict);
  return {
    verdict: explicit ? (row.verdict as VerdictState) : (parsed.state ?? 'unclear'),
    reason: typeof row.reason === 'string' ? row.reason : parsed.reason,
    round: nullableNumber(row.round) ?? (label ? Number(label[2]) : null),
    rounds: nullableNumber(row.rounds),
    checks: checksOf(row.checks),
    notPassed: Array.isArray(row.not_passed) ? row.not_passed.map(String) : [...parsed.failed],
  };
}

/** The round a work row is (`work` is 1, `work#round3` is 3) and the step it belongs to. */
export function roundOf(step: string): { base: string; round: number } {
  const match = ROUND_LABEL.exec(step);
  return match ? { base: match[1] ?? step, round: Number(match[2]) } : { base: step, round: 1 };
}

function ledgerOf(row: StoredManifestRow): StepLedger | undefined {
  if (!isRecord(row.main) || !Array.isArray(row.workers)) return undefined;
  return {
    main: row.main as unknown as ThreadLedger,
    workers: row.workers.filter(isRecord) as unknown as WorkerLedger[],
  };
}

/** What the report says of a row booked for a killed attempt (its `error` is KILLED_UNRECORDED). */
export const KILLED_DETAIL = 'killed before it recorded a result; its cost was booked from the transcript';

/** The plain reason for a failed row: its error's first line, in words a person reads. */
function failureDetail(error: string | null, errors: readonly string[]): string {
  if (error === KILLED_UNRECORDED) return KILLED_DETAIL;
  return firstLine(error ?? errors[0] ?? '');
}

function firstLine(value: string): string {
  return (
    value
      .split('\n')
      .find((line) => line.trim() !== '')
      ?.trim() ?? ''
  );
}

/** The rows as step records, in manifest order, with outcomes decided. */
export function stepRecords(rows: readonly StoredManifestRow[]): StepRecord[] {
  const seen = new Set<string>();
  const records = rows.map((row): StepRecord => {
    const errors = Array.isArray(row.errors) ? row.errors.map(String) : [];
    const verdict = verdictOf(row);
    const ok = row.ok === true;
    const error = typeof row.error === 'string' ? row.error : null;
    let outcome: Outcome = ok ? 'ok' : 'failed';
    let detail = ok ? '' : failureDetail(error, errors);
    let missing: string[] = [];
    if (verdict !== undefined && ok) {
      outcome = 'verdict';
      detail = verdict.verdict;
    }
    if (typeof row.rejected === 'string') {
      outcome = 'rejected';
      detail = row.rejected;
      missing = Array.isArray(row.missing) ? row.missing.map(String) : [];
    }
    return {
      step: text(row.step),
      run: text(row.run),
      sessionId: typeof row.session_id === 'string' ? row.session_id : null,
      sessions: stepSessions(row),
      ok,
      costUsd: number(row.cost_usd),
      numTurns: number(row.num_turns),
      attempts: number(row.attempts) || 1,
      resumed: row.resumed === true || continuesEarlierSession(row),
      handoffs: Array.isArray(row.retired) ? row.retired.length : 0,
      durationS: number(row.duration_s),
      startedAt: number(row.started_at),
      endedAt: number(row.ended_at),
      error,
      errors,
      text: text(row.text),
      context: number(row.context),
      outcome,
      detail,
      missing,
      verdict,
      ledger: ledgerOf(row),
      handoffAt: nullableNumber(row.handoff_at) ?? undefined,
      rewrites: Array.isArray(row.rewrites)
        ? (row.rewrites.filter(isRecord) as unknown as ResumeRewrite[])
        : [],
    };
  });
  markRejectedRounds(records);
  return records;

  /** Whether the row's first session is one an earlier row already used (sessions seen so far). */
  function continuesEarlierSession(row: StoredManifestRow): boolean {
    const sessions = stepSessions(row);
    const continued = sessions[0] !== undefined && seen.has(sessions[0]);
    for (const id of sessions) seen.add(id);
    return continued;
  }
}

/**
 * Older rows have no `rejected` field: a round of work whose verdict (same run, same step, same
 * round) was not "achieved" was rejected with the verdict's reason.
 */
function markRejectedRounds(records: StepRecord[]): void {
  for (const judged of records) {
    const label = VERDICT_LABEL.exec(judged.step);
    if (label === null || judged.verdict === undefined || judged.verdict.verdict === 'achieved') continue;
    const base = label[1] ?? '';
    const round = judged.verdict.round ?? Number(label[2]);
    const work = records.find((record) => {
      if (record.run !== judged.run || record.outcome !== 'ok') return false;
      const parsed = roundOf(record.step);
      return parsed.base === base && parsed.round === round;
    });
    if (work === undefined) continue;
    work.outcome = 'rejected';
    work.detail = judged.verdict.reason || `the judge ruled: ${judged.verdict.verdict}`;
    work.missing = [...judged.verdict.notPassed];
  }
}

/**
 * `not yet after 2/3 rounds: <reason>; not passed: <item>; <item>`, or `achieved in round 1: <reason>`.
 */
export function verdictLine(verdict: VerdictRecord): string {
  const of = verdict.rounds !== null ? `/${verdict.rounds}` : '';
  const round = verdict.round ?? 1;
  const when =
    verdict.verdict === 'achieved'
      ? `in round ${round}${of}`
      : `after ${round}${of} round${verdict.rounds === 1 || (verdict.rounds === null && round === 1) ? '' : 's'}`;
  const reason = firstLine(verdict.reason);
  const bare = reason.replace(/[.;:,\s]+$/, '');
  // What is left to do, unless the reason already said just that.
  const items =
    verdict.verdict === 'achieved'
      ? []
      : verdict.notPassed.map((item) => item.trim()).filter((item) => item && item !== bare);
  const left = items.length > 0 ? `; not passed: ${items.join('; ')}` : '';
  // Before more clauses, the reason's own full stop would read `.;`.
  const said = left ? bare : reason;
  return `${verdict.verdict} ${when}${said ? `: ${said}` : ''}${left}`;
}

/** `why (missing: a; b)`: a rejected record's reason and what was missing, in one line. */
export function rejectedLine(record: Pick<StepRecord, 'detail' | 'missing'>): string {
  return record.missing.length > 0
    ? `${record.detail} (missing: ${record.missing.join('; ')})`
    : record.detail;
}

/** The record `flower log <label>` means: that label in `run`, else its latest; undefined if none. */
export function pickStep(
  records: readonly StepRecord[],
  label: string,
  run?: string,
): StepRecord | undefined {
  const matching = records.filter(
    (record) => record.step === label && (run === undefined || record.run === run),
  );
  return matching.reduce<StepRecord | undefined>(
    (latest, record) => (latest === undefined || record.startedAt >= latest.startedAt ? record : latest),
    undefined,
  );
}
