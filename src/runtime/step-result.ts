/**
 * `StepResult`: the books for one `Runtime.run` call, and its row in `runs/manifest.json`.
 *
 * Invariants:
 * - `sessionId` is always the session that holds the step *now* (the last successor after
 *   handoffs); the sessions burned by handoffs are listed in `retired`, in order.
 * - `costUsd` and `numTurns` accumulate over every attempt, resume and handoff of the step.
 * - `text` is main-thread prose only; synthetic API errors and handoff-degradation notes go to
 *   `errors`, which no model ever sees.
 * - `attempts` counts real attempts only: human interrupts and handoffs do not consume one.
 * - Times are Unix epoch *seconds* (fractional), as in the on-disk format that tools already read.
 *
 * The manifest row keeps the reference's on-disk shape (snake_case keys, this field order, plus
 * `duration_s` and `run`) so that existing tooling and older run directories stay readable. Fields
 * added since (`main`, `workers`, `handoff_at`, `rewrites`, `transcript`) are optional: older rows
 * lack them.
 */

import type { LoadReport } from '../store/load-report.js';
import type { StepLedger, ThreadLedger, WorkerLedger } from './ledger.js';

/** Error value of a step cut short by a human interrupt (resumed in place, not a failure). */
export const INTERRUPTED_BY_HUMAN = 'interrupted-by-human';
/** Error value of an attempt broken off because the context reached the handoff threshold. */
export const CONTEXT_FULL_HANDOFF = 'context-full-handoff';
/** Error value of an attempt paused because the task's lease could not be renewed in time. */
export const OWNERSHIP_PAUSED = 'ownership-paused';
/** Error value of a step that was in flight when the process received SIGTERM or SIGHUP. */
export const KILLED_BY_SIGNAL = 'killed-by-signal';

/**
 * The session store did not get every transcript entry of the step (see `transcript-safety.ts`).
 * `recovered`: all were written later; `unsaved`: some are only in `runs/unsaved/` or the agent's
 * own transcript, and the next start copies them in; `lost`: the agent could not save them either.
 */
export interface TranscriptRisk {
  state: 'recovered' | 'unsaved' | 'lost';
  sessions: string[];
  /** Entries written late (`recovered`) or still outside the store (`unsaved`). */
  entries: number;
  /** One line for a person. */
  detail: string;
}

export interface StepResult {
  /** Step label: the step name, or a suffixed label such as `work#retry2` or `work:verdict#1`. */
  step: string;
  /** The session holding the step now; null until the first session id is seen. */
  sessionId: string | null;
  ok: boolean;
  /** USD, accumulated over attempts, resumes and handoffs. */
  costUsd: number;
  /** Turns, accumulated like the cost. */
  numTurns: number;
  /** Main-thread prose of the final reply (never subagent text, never synthetic errors). */
  text: string;
  /** Why the step failed, or one of the special values above; null on success. */
  error: string | null;
  /** Epoch seconds. */
  startedAt: number;
  /** Epoch seconds; 0 while the step is still running. */
  endedAt: number;
  /** Real attempts made (interrupts and handoffs excluded). */
  attempts: number;
  /** Per-attempt failure reasons and handoff-degradation notes; never shown to the model. */
  errors: string[];
  /** Whether the step resumed its session in the middle (after an outage or interrupt). */
  resumed: boolean;
  /** Session ids retired by handoffs, oldest first. */
  retired: string[];
  /** Peak main-thread context (tokens) seen on the current generation's last turn. */
  context: number;
  /** `endedAt - startedAt` rounded to 10 ms; 0 while the step is still running. */
  durationS: number;
  /** Run id of the process that ran the step. */
  run: string;
  /** Tokens and dollars of the main thread and of each worker, computed when the step ends. */
  ledger?: StepLedger;
  /** The handoff threshold (main-thread tokens) the step ran under; unset when handoff was off. */
  handoffAt?: number;
  /** What the store's rewrite layers changed each time the step resumed a session. */
  rewrites?: ResumeRewrite[];
  /** Fields a gate added after the step ended (see `RowAnnotations`); written after the fixed keys. */
  annotations?: RowAnnotations;
  /** Set when the session store did not get every transcript entry of the step. */
  transcript?: TranscriptRisk;
  /**
   * Set when the step ended because this process no longer owns the task (a task kept in
   * PostgreSQL: the lease was taken, or the database stayed away); `error` is the whole line.
   */
  ownershipLost?: true;
}

/** One resume's rewrite effects, as the manifest row keeps them. */
export interface ResumeRewrite {
  session_id: string;
  expired: number;
  trimmed: number;
  kept: number;
  chars_saved: number;
  pruned: number;
  denials_dropped: number;
  interrupts_neutralised: number;
  orphans_healed: number;
}

/** A load report in the manifest's shape. */
export function resumeRewrite(sessionId: string, report: LoadReport): ResumeRewrite {
  return {
    session_id: sessionId,
    expired: report.expired,
    trimmed: report.trimmed,
    kept: report.kept,
    chars_saved: report.charsSaved,
    pruned: report.pruned,
    denials_dropped: report.denialsDropped,
    interrupts_neutralised: report.interruptsNeutralised,
    orphans_healed: report.orphansHealed,
  };
}

/** One host-run check as a verdict row records it. */
export interface ManifestCheck {
  /** The checklist item it proves (flower always writes it; the agreed contract does not require it). */
  item?: string;
  command: string;
  /** null when the command was ended by a signal (its time limit) or never started. */
  exit_code: number | null;
  passed: boolean;
  duration_s: number;
  /** The check's log: stdout and stderr as they came, its middle cut when it was long (checks/capped-log.ts). */
  output_path: string;
  timed_out?: boolean;
}

/**
 * What a gate learns about a step after its row was first written: the judge's ruling on a verdict
 * row (`<step>:verdict#N`), the rejection on the work row it sent back. All optional, snake_case
 * like the rest of the row, so rows without them (older versions, ungated steps) read the same.
 */
export interface RowAnnotations {
  verdict?: 'achieved' | 'not yet' | 'cannot verify here';
  reason?: string;
  /** The judge's open items ("Not passed"). */
  not_passed?: string[];
  /** Which round this verdict judged, and how many the task may have. */
  round?: number;
  rounds?: number;
  checks?: ManifestCheck[];
  /**
   * On a work row: why its gate rejected it (the round was sent back, or the task stopped). The
   * manifest's `ok` stays the agent's own success; the report's outcome is `rejected`.
   */
  rejected?: string;
  /**
   * On a rejected work row: what was missing, one entry each (a brief's or goal's empty sections,
   * the judge's "Not passed" items). Empty or absent when the gate did not say.
   */
  missing?: string[];
}

/** The rejection recorded for a gate that gave no reason of its own. */
export const NOT_ACCEPTED = 'the step did not accept its result';

/** `why (missing: a, b)`: a rejected row's reason and what was missing, in one line. */
export function rejectionLine(result: Pick<StepResult, 'annotations'>): string {
  const why = result.annotations?.rejected ?? NOT_ACCEPTED;
  const missing = result.annotations?.missing ?? [];
  return missing.length > 0 ? `${why} (missing: ${missing.join('; ')})` : why;
}

/** Current time in epoch seconds. */
export function epochSeconds(at: number = Date.now()): number {
  return at / 1000;
}

/** A fresh result for a step that starts now. */
export function newStepResult(step: string, run: string, startedAt: number = epochSeconds()): StepResult {
  return {
    step,
    sessionId: null,
    ok: false,
    costUsd: 0,
    numTurns: 0,
    text: '',
    error: null,
    startedAt,
    endedAt: 0,
    attempts: 1,
    errors: [],
    resumed: false,
    retired: [],
    context: 0,
    durationS: 0,
    run,
  };
}

/** Stamps the end time and the derived duration. */
export function finishStepResult(result: StepResult, endedAt: number = epochSeconds()): void {
  result.endedAt = endedAt;
  result.durationS = Math.round((endedAt - result.startedAt) * 100) / 100;
}

/**
 * Marks a step that was still running when the process got a termination signal: it ends now,
 * and keeps an earlier, more specific error if it had one.
 */
export function markKilledBySignal(result: StepResult, at: number = epochSeconds()): void {
  if (result.endedAt === 0) finishStepResult(result, at);
  result.ok = false;
  result.error ??= KILLED_BY_SIGNAL;
}

/** One manifest row: the on-disk shape of a `StepResult`. */
export interface ManifestRow extends RowAnnotations {
  step: string;
  session_id: string | null;
  ok: boolean;
  cost_usd: number;
  num_turns: number;
  text: string;
  error: string | null;
  started_at: number;
  ended_at: number;
  attempts: number;
  errors: string[];
  resumed: boolean;
  retired: string[];
  context: number;
  duration_s: number;
  run: string;
  /** The main thread's ledger; absent in rows written before the ledger existed. */
  main?: ThreadLedger;
  /** One entry per worker of the step; absent in older rows. */
  workers?: WorkerLedger[];
  handoff_at?: number;
  rewrites?: ResumeRewrite[];
  /** Only present when the session store missed transcript entries (see `TranscriptRisk`). */
  transcript?: TranscriptRisk;
}

/** The manifest row for `result`, keys in the documented order. Arrays are copied. */
export function toManifestRow(result: StepResult): ManifestRow {
  return {
    step: result.step,
    session_id: result.sessionId,
    ok: result.ok,
    cost_usd: result.costUsd,
    num_turns: result.numTurns,
    text: result.text,
    error: result.error,
    started_at: result.startedAt,
    ended_at: result.endedAt,
    attempts: result.attempts,
    errors: [...result.errors],
    resumed: result.resumed,
    retired: [...result.retired],
    context: result.context,
    duration_s: result.durationS,
    run: result.run,
    ...(result.ledger
      ? { main: { ...result.ledger.main }, workers: result.ledger.workers.map((w) => ({ ...w })) }
      : {}),
    ...(result.handoffAt !== undefined ? { handoff_at: result.handoffAt } : {}),
    ...(result.rewrites?.length ? { rewrites: result.rewrites.map((rewrite) => ({ ...rewrite })) } : {}),
    ...structuredClone(result.annotations ?? {}),
    ...(result.transcript
      ? { transcript: { ...result.transcript, sessions: [...result.transcript.sessions] } }
      : {}),
  };
}
