/**
 * The events and the final document of `--output-format json|stream-json`, shaped from what a run
 * sees: flower's events, the agent runs (steps) starting and ending, and what gates record on them.
 *
 * Invariants:
 * - Every event and the document carry `type` and `output_version` (OUTPUT_VERSION); keys are
 *   snake_case like `report --json`; new keys may be added, none renamed.
 * - A step is one agent run, one manifest row (`work`, `work#round2`, `work:verdict#1`), named as
 *   `report` names it, with the same outcomes: ok, verdict, rejected, failed.
 * - Only what a script acts on becomes an event (steps, workers, questions, checks, verdicts,
 *   rejections, spend, notices, errors); prose and tool calls stay on the human screen.
 * - Pure bookkeeping: no I/O and no clock; masking happens where the lines are written.
 */
import type { FlowerEvent } from '../../runtime/events.js';
import type { ManifestCheck, RowAnnotations, StepResult } from '../../runtime/step-result.js';
import { WorkerTally } from '../terminal/worker-tally.js';
import { OUTPUT_VERSION } from './output-format.js';

export type MachineEvent = { type: string; output_version: number } & Record<string, unknown>;

/** The commands that print machine output. */
export type MachineCommand = 'go' | 'run' | 'once';

/**
 * How the command ended, as its exit code says it: every step passed (0); a deliberate stop (budget,
 * brake, no rounds left) or a failure (1); something typed that cannot run (2); Ctrl-C (130).
 */
export type RunOutcome = 'ok' | 'stopped' | 'failed' | 'usage' | 'interrupted';

export type StepOutcome = 'ok' | 'verdict' | 'rejected' | 'failed';

export interface VerdictRecord {
  step: string;
  verdict: string;
  reason: string;
  not_passed: string[];
  round: number | null;
  rounds: number | null;
  checks: ManifestCheck[];
}

export interface StepRecord {
  step: string;
  role: string;
  outcome: StepOutcome;
  ok: boolean;
  cost_usd: number;
  num_turns: number;
  duration_s: number;
  session_id: string | null;
  error: string | null;
  /** For `rejected`: why, and what was missing. */
  rejected: string | null;
  missing: string[];
  verdict: VerdictRecord | null;
}

/** What the command knows when it ends, beyond the steps. */
export interface RunEnd {
  outcome: RunOutcome;
  /** The stop or failure line (what `flower: …` says on standard error); null when ok. */
  reason: string | null;
  runCostUsd: number;
  /** What the whole task has spent so far (every run and aside); null when unknown. */
  taskCostUsd: number | null;
  workspace: string;
  runDir: string;
  manifest: string | null;
  /**
   * The session that continues the work: the one `once --resume` takes; for `go`/`run`, the last
   * workflow step's (not a judge's or the closing bequest's). Null: the last agent run's.
   */
  sessionId: string | null;
  /** Each workflow step's session, by step name (what the next run in this directory resumes). */
  sessions: Record<string, string>;
}

function event(type: string, fields: Record<string, unknown>): MachineEvent {
  return { type, output_version: OUTPUT_VERSION, ...fields };
}

function outcomeOf(result: StepResult): StepOutcome {
  if (!result.ok) return 'failed';
  if (result.annotations?.verdict !== undefined) return 'verdict';
  if (result.annotations?.rejected !== undefined) return 'rejected';
  return 'ok';
}

function verdictOf(step: string, fields: RowAnnotations): VerdictRecord | null {
  if (fields.verdict === undefined) return null;
  return {
    step,
    verdict: fields.verdict,
    reason: fields.reason ?? '',
    not_passed: [...(fields.not_passed ?? [])],
    round: fields.round ?? null,
    rounds: fields.rounds ?? null,
    checks: [...(fields.checks ?? [])],
  };
}

function stepRecord(result: StepResult, role: string): StepRecord {
  return {
    step: result.step,
    role,
    outcome: outcomeOf(result),
    ok: result.ok,
    cost_usd: result.costUsd,
    num_turns: result.numTurns,
    duration_s: result.durationS,
    session_id: result.sessionId,
    error: result.error,
    rejected: result.annotations?.rejected ?? null,
    missing: [...(result.annotations?.missing ?? [])],
    verdict: verdictOf(result.step, result.annotations ?? {}),
  };
}

type QuestionPayload = {
  kind?: unknown;
  id?: unknown;
  state?: unknown;
  options?: unknown;
  answer?: unknown;
  remaining?: unknown;
  askedBy?: unknown;
};

/**
 * One run's machine view: feed it steps, annotations and events; it returns the events to stream
 * and keeps what the final document needs.
 */
export class MachineRecord {
  private readonly steps: StepRecord[] = [];
  private readonly results = new Map<StepResult, { record: StepRecord; role: string }>();
  private readonly tally = new WorkerTally();
  private readonly workers = new Map<string, string>();
  private lastVerdict: VerdictRecord | null = null;
  private spentUsd = 0;

  constructor(private readonly command: MachineCommand) {}

  /** An agent run is about to start. */
  stepStarted(step: string, role: string, resume: string | undefined): MachineEvent {
    return event('step_start', { step, role, resume_session_id: resume ?? null });
  }

  /** An agent run ended (before any gate looked at it). */
  stepEnded(result: StepResult, role: string): MachineEvent {
    const record = stepRecord(result, role);
    this.steps.push(record);
    this.results.set(result, { record, role });
    return event('step_end', { ...record });
  }

  /**
   * A gate recorded something on a step that ended (a ruling on the judge's row, a rejection on
   * the work row): the document's row is updated, and the news is streamed.
   */
  annotated(result: StepResult, fields: RowAnnotations): MachineEvent[] {
    const known = this.results.get(result);
    const merged = { ...result.annotations, ...fields };
    if (known) {
      const index = this.steps.indexOf(known.record);
      const record = stepRecord({ ...result, annotations: merged }, known.role);
      this.steps[index] = record;
      known.record = record;
    }
    const verdict = verdictOf(result.step, fields);
    if (verdict) {
      this.lastVerdict = verdict;
      return [event('verdict', { ...verdict })];
    }
    if (fields.rejected !== undefined)
      return [
        event('step_rejected', {
          step: result.step,
          reason: fields.rejected,
          missing: [...(fields.missing ?? merged.missing ?? [])],
        }),
      ];
    return [];
  }

  /** The events a flower event becomes (often none). */
  observe(flower: FlowerEvent): MachineEvent[] {
    this.tally.observe(flower);
    switch (flower.kind) {
      case 'dispatch':
        if (flower.payload.subagent) return [];
        this.workers.set(flower.payload.id, flower.payload.subagentType);
        return [
          event('worker_start', {
            id: flower.payload.id,
            agent_type: flower.payload.subagentType,
            description: flower.payload.description,
          }),
        ];
      case 'tool_result':
        return flower.payload.subagent
          ? []
          : this.workerEnded(flower.payload.toolUseId, flower.payload.isError);
      case 'task':
        return flower.payload.phase === 'notification' && flower.payload.toolUseId
          ? this.workerEnded(flower.payload.toolUseId, flower.payload.status === 'failed')
          : [];
      case 'ask':
        return [this.question(flower.text, flower.payload as QuestionPayload)];
      case 'result':
        this.spentUsd += flower.payload.costUsd;
        return [
          event('spend', {
            cost_usd: flower.payload.costUsd,
            num_turns: flower.payload.numTurns,
            run_cost_usd: Math.round(this.spentUsd * 1e6) / 1e6,
          }),
        ];
      case 'system': {
        const check = (flower.payload.data as { check?: unknown }).check;
        if (check !== undefined && typeof check === 'object' && check !== null)
          return [event('check', { ...(check as ManifestCheck), text: flower.text })];
        if (flower.payload.warning) return [event('notice', { level: 'warning', text: flower.text })];
        if (flower.payload.notice)
          return [event('notice', { level: flower.payload.notice, text: flower.text })];
        return [];
      }
      case 'error':
        return [event('error', { text: flower.text })];
      default:
        return [];
    }
  }

  /** The final document. */
  document(end: RunEnd): MachineEvent {
    return event('result', {
      command: this.command,
      outcome: end.outcome,
      reason: end.reason,
      verdict: this.lastVerdict,
      steps: this.steps,
      spend: { run_cost_usd: roundUsd(end.runCostUsd), task_cost_usd: end.taskCostUsd },
      session_id: end.sessionId ?? this.steps.at(-1)?.session_id ?? null,
      sessions: end.sessions,
      workspace: end.workspace,
      run_dir: end.runDir,
      manifest: end.manifest,
    });
  }

  private workerEnded(id: string, isError: boolean): MachineEvent[] {
    const agentType = this.workers.get(id);
    if (agentType === undefined) return [];
    this.workers.delete(id);
    const ledger = this.tally.ledgerOf(id);
    return [
      event('worker_end', {
        id,
        agent_type: agentType,
        is_error: isError,
        turns: ledger?.turns ?? 0,
        cost_usd: ledger?.cost_usd ?? null,
      }),
    ];
  }

  private question(text: string, payload: QuestionPayload): MachineEvent {
    if (payload.kind === 'mail')
      return event('mail', { id: String(payload.id ?? ''), state: String(payload.state ?? ''), text });
    return event('question', {
      id: String(payload.id ?? ''),
      state: String(payload.state ?? ''),
      text,
      options: Array.isArray(payload.options) ? payload.options.map(String) : [],
      answer: typeof payload.answer === 'string' ? payload.answer : '',
      remaining: typeof payload.remaining === 'number' ? payload.remaining : -1,
      asked_by: payload.askedBy === 'workflow' ? 'workflow' : 'agent',
    });
  }
}

function roundUsd(usd: number): number {
  return Math.round(usd * 1e6) / 1e6;
}
