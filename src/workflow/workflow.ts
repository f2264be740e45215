/**
 * `Workflow`: runs steps in order, with retries, verdict gates and cross-process continuity.
 *
 * Invariants ("red lines"):
 * - A gate runs exactly once per attempt and only for an ok attempt; its answer is reused.
 * - The session hook that writes lineage is attached only around the step's own `runner.run`.
 *   A gate that runs another agent on the same runner (the judge) must never be recorded as the
 *   step's session, or the next wake would resume the judge instead of the work.
 * - Only plain step names enter lineage; attempt labels (`#retryN`, `#roundN`) never do.
 * - A step list that cannot run is refused when the workflow is built, before anything is paid
 *   for: two steps with one name (outputs, results and lineage are keyed by name, so the second
 *   would take over the first one's conversation), or a `resumeFrom` that names no earlier step
 *   (on a first run it could never have a session; that used to surface only when the step was
 *   reached, after the steps before it had run).
 * - An explicit `resumeFrom` that names a step without a session is an error, never a silent
 *   fresh start. A lineage record whose session is gone is silently ignored: continuity is a
 *   bonus and its failure must not stop anyone from working.
 * - Per-attempt prompt, resume id and fork flag are locals; the step objects are never changed.
 * - Every rejection by a gate is told to the sink (`system`/`gate_rejected`, with the `onReject`
 *   text that goes back to the session, or the recorded reason and what was missing), so a person
 *   sees why a step goes round again — the last attempt too.
 * - Every rejected attempt's row carries `rejected` (and the gate's `missing`, when it said): a gate
 *   that recorded nothing gets NOT_ACCEPTED, so no rejected row reads as a bare `ok: true`.
 * - A `StepAbort` — from a step's `when`, its gate or the runner (a spent budget) — stops the
 *   workflow at that step with its message in `ctx.aborted`, never as an exception: it is a
 *   decision with a reason, not a crash.
 */

import type { HumanChannel } from '../agents/human/channel.js';
import type { Workbench } from '../agents/workbench.js';
import type { EventSink, FlowerEvent, StepPayload } from '../runtime/events.js';
import { Lineage } from '../runtime/lineage.js';
import { NOT_ACCEPTED, newStepResult, rejectionLine, type StepResult } from '../runtime/step-result.js';
import { newContext, type WorkflowContext } from './context.js';
import { annotateResult, type StepRunner } from './runner.js';
import { attemptLabel, renderPrompt, type Step, StepAbort } from './step.js';

export interface WorkflowOptions {
  name?: string;
  /** Initial context; the same object is reused by every run of this workflow. */
  context?: WorkflowContext;
  /**
   * The human channel; a driver answers questions through it. To have its events reach the sink of
   * whichever run is active, build it with `onEvent: (event) => context.onEvent?.(event)`.
   */
  channel?: HumanChannel;
  /** The workbench the steps write into; a driver must hand this same object to the Runtime. */
  workbench?: Workbench;
  /** Same workspace and run directory = same conversation for each step name (default true). */
  continuous?: boolean;
  /**
   * Runs after the steps, whether they all passed or the workflow stopped at one (not after an
   * exception): the task's closing act, such as the starter flow's bequest.
   */
  onEnd?: (ctx: WorkflowContext, runner: StepRunner) => Promise<void>;
}

/**
 * Where a workflow runs, as `flower run` resolved it from `-w`/`-r`: a factory export receives it,
 * so the workflow's own workbench and files land in the same workspace as `runs/`.
 */
export interface WorkflowLocation {
  /** Absolute workspace (the agents' working directory). */
  readonly workspace: string;
  /** Absolute run directory (sessions, manifest, lineage). */
  readonly runDir: string;
}

/** What `flower run <file>:<export>` accepts besides a Workflow: a function building one. */
export type WorkflowFactory = (location: WorkflowLocation) => Workflow | Promise<Workflow>;

export interface WorkflowRunOptions {
  onEvent?: EventSink;
  /** Called after every step that ran, passed or failed. */
  onStep?: (step: Step, result: StepResult) => void;
}

/**
 * What makes `steps` unable to run as a workflow, one sentence each (empty when nothing does): a
 * name used twice, a `resumeFrom` naming no step, itself, or a step that runs after it.
 */
export function stepListProblems(steps: readonly Step[]): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const step of steps) {
    if (seen.has(step.name)) {
      problems.push(
        `Two steps are named "${step.name}": each step needs its own name (outputs, results and the ` +
          'conversation it continues are kept by name). Rename one of them.',
      );
    }
    seen.add(step.name);
  }
  const names = steps.map((step) => step.name);
  for (const [index, step] of steps.entries()) {
    if (step.resumeFrom === undefined) continue;
    const from = names.indexOf(step.resumeFrom);
    const where =
      from < 0
        ? `there is no step "${step.resumeFrom}" (the steps are: ${names.map((name) => `"${name}"`).join(', ')})`
        : from === index
          ? 'that is the step itself (a step continues its own earlier session without resumeFrom)'
          : `"${step.resumeFrom}" runs after it`;
    if (from < 0 || from >= index) {
      problems.push(
        `Step "${step.name}" resumes from "${step.resumeFrom}", but ${where}. ` +
          'resumeFrom must name an earlier step of the same workflow.',
      );
    }
  }
  return problems;
}

export class Workflow {
  readonly steps: readonly Step[];
  readonly name: string;
  readonly context: WorkflowContext;
  readonly channel: HumanChannel | undefined;
  readonly workbench: Workbench | undefined;
  readonly continuous: boolean;
  private readonly onEnd: WorkflowOptions['onEnd'];

  /** Throws when the steps cannot run as given (see `stepListProblems`), before anything is paid for. */
  constructor(steps: readonly Step[], options: WorkflowOptions = {}) {
    const problems = stepListProblems(steps);
    if (problems.length > 0) {
      const name = options.name === undefined ? 'This workflow' : `Workflow "${options.name}"`;
      throw new Error(`${name} cannot run: ${problems.join(' ')}`);
    }
    // A copy, so the list checked here is the list every run uses.
    this.steps = Object.freeze([...steps]);
    this.name = options.name ?? 'workflow';
    this.context = options.context ?? newContext();
    this.channel = options.channel;
    this.workbench = options.workbench;
    this.continuous = options.continuous ?? true;
    this.onEnd = options.onEnd;
  }

  async run(runner: StepRunner, options: WorkflowRunOptions = {}): Promise<WorkflowContext> {
    const ctx = this.context;
    const { onEvent, onStep } = options;
    ctx.runtime = runner;
    ctx.onEvent = onEvent;

    await runner.prepare?.();
    const lineage = this.openLineage(runner);
    const total = this.steps.length;
    for (const [index, step] of this.steps.entries()) {
      try {
        if (step.when && !(await step.when(ctx))) continue;
      } catch (error) {
        if (!(error instanceof StepAbort)) throw error;
        ctx.aborted = error.message;
        ctx.failedAt = step.name;
        break;
      }
      const { resume, carried } = this.resumeSource(step, ctx);
      const header = (resumed: boolean): StepPayload => ({
        name: step.name,
        index: index + 1,
        total,
        resumed,
        woke: ctx.woke ?? 1,
        ...step.roundOf?.(ctx),
      });
      onEvent?.({ kind: 'step', text: step.name, payload: header(carried) });
      const { result, passed } = await runAttempts(step, ctx, runner, {
        prompt: renderPrompt(step, ctx, carried),
        resume,
        fork: Boolean(step.fork && step.resumeFrom),
        onEvent,
        lineage,
        header,
      });

      ctx.results[step.name] = result;
      if (result.sessionId) {
        ctx.sessions[step.name] = result.sessionId;
        lineage?.remember(step.name, result.sessionId);
      }
      if (passed) {
        ctx.outputs[step.name] = step.reduce ? step.reduce(result, ctx) : result.text;
      } else if (step.onFail === 'continue') {
        ctx.outputs[step.name] = result.text;
      }
      onStep?.(step, result);
      if (!passed && (step.onFail ?? 'stop') === 'stop') {
        ctx.failedAt = step.name;
        break;
      }
    }
    if (this.onEnd) await this.onEnd(ctx, runner);
    return ctx;
  }

  /** Opens lineage, counts the wake and pours still-existing sessions into the context. */
  private openLineage(runner: StepRunner): Lineage | undefined {
    if (!this.continuous || !runner.runDir || !runner.workspace) return undefined;
    const ctx = this.context;
    const lineage = Lineage.open(runner.runDir, runner.workspace);
    ctx.lineage = lineage;
    ctx.woke = lineage.bump();
    const exists = (sessionId: string) => runner.hasSession?.(sessionId) ?? true;
    for (const name of Object.keys(lineage.steps)) {
      const { sessionId } = lineage.sessionFor(name, exists);
      if (sessionId && !ctx.sessions[name]) ctx.sessions[name] = sessionId;
    }
    return lineage;
  }

  /** Which session the step starts in, and whether that continues its own earlier session. */
  private resumeSource(step: Step, ctx: WorkflowContext): { resume: string | undefined; carried: boolean } {
    if (step.resumeFrom !== undefined) {
      const resume = ctx.sessions[step.resumeFrom];
      if (!resume) {
        throw new Error(
          `Step "${step.name}" resumes from step "${step.resumeFrom}", but that step has no session ` +
            '(it has not run yet, or it failed before starting one). Order the steps so that ' +
            `"${step.resumeFrom}" runs first, or remove resumeFrom.`,
        );
      }
      return { resume, carried: false };
    }
    const resume = this.continuous ? ctx.sessions[step.name] : undefined;
    return { resume, carried: resume !== undefined };
  }
}

interface AttemptStart {
  prompt: string;
  resume: string | undefined;
  fork: boolean;
  onEvent: EventSink | undefined;
  lineage: Lineage | undefined;
  /** The step header for a later round (only steps with `roundOf` get one per attempt). */
  header: (resumed: boolean) => StepPayload;
}

/** Runs the attempt loop of one step: run, gate, then retry fresh or resume the rejected session. */
async function runAttempts(
  step: Step,
  ctx: WorkflowContext,
  runner: StepRunner,
  start: AttemptStart,
): Promise<{ result: StepResult; passed: boolean }> {
  const retries = Math.max(0, step.retries ?? 0);
  let { prompt, resume, fork } = start;
  let result: StepResult | undefined;
  let passed = false;
  for (let attempt = 0; attempt <= retries; attempt++) {
    // A later round's header comes with the round's first event: a round the runner refuses to
    // start (a spent budget) must not put a second ruler for the same round on the screen.
    const headed =
      attempt > 0 && step.roundOf ? headedSink(step.name, start) : { sink: start.onEvent, ensure: () => {} };
    const onEvent = headed.sink;
    // The lineage hook lives only for this call: the gate below may run the judge on this runner.
    const lineage = start.lineage;
    const label = attemptLabel(step, attempt);
    let ran: StepResult | undefined;
    try {
      ran = await runner.run(step.spec, prompt, {
        stepName: label,
        ...(resume === undefined ? {} : { resume, fork }),
        ...(onEvent ? { onEvent } : {}),
        ...(lineage ? { onSession: (sessionId: string) => lineage.remember(step.name, sessionId) } : {}),
      });
      headed.ensure();
      result = ran;
      passed = ran.ok && (step.gate ? await step.gate(ran, ctx) : true);
    } catch (error) {
      if (!(error instanceof StepAbort)) throw error;
      ctx.aborted = error.message;
      // The runner refused before anything ran: this attempt still needs a result to report.
      if (ran === undefined) result = { ...newStepResult(label, ''), error: error.message };
      passed = false;
      break;
    }
    if (passed) break;
    // A failed attempt never reaches the gate, so an ok result here is one the gate turned down.
    const rejected = result.ok;
    const last = attempt === retries;
    const next =
      !last && rejected && step.onReject && result.sessionId ? await step.onReject(result, ctx) : '';
    if (rejected) {
      // A gate that said nothing still leaves its mark: the row must not read as a bare ok.
      if (result.annotations?.rejected === undefined)
        annotateResult(runner, result, { rejected: NOT_ACCEPTED });
      start.onEvent?.(gateRejection(step.name, attempt + 1, retries + 1, next, result));
    }
    if (last) break;
    if (next && result.sessionId) {
      prompt = next;
      resume = result.sessionId;
      fork = false;
    } else {
      ({ prompt, resume, fork } = start);
    }
  }
  // retries >= 0, so the loop ran at least once.
  return { result: result as StepResult, passed };
}

/**
 * `start.onEvent` that sends the step header before the first event that passes through it;
 * `ensure` sends it when the round ran without a single event.
 */
function headedSink(name: string, start: AttemptStart): { sink: EventSink | undefined; ensure: () => void } {
  const send = start.onEvent;
  if (!send) return { sink: undefined, ensure: () => {} };
  let headed = false;
  const ensure = () => {
    if (headed) return;
    headed = true;
    send({ kind: 'step', text: name, payload: start.header(false) });
  };
  return {
    sink: (event) => {
      ensure();
      send(event);
    },
    ensure,
  };
}

/** The `system` event (subtype `gate_rejected`) that shows a person why a step goes round again. */
export const GATE_REJECTED = 'gate_rejected';

function gateRejection(
  step: string,
  attempt: number,
  attempts: number,
  feedback: string,
  result: StepResult,
): FlowerEvent {
  const what = `gate rejected ${step} (attempt ${attempt}/${attempts})`;
  // Feedback that goes back to the session says why itself; otherwise the recorded reason does.
  const text =
    attempt !== attempts && feedback
      ? `${what}: ${feedback}`
      : `${what}: ${rejectionLine(result)}; ${attempt === attempts ? 'no attempts left' : 'the next attempt starts over'}`;
  const missing = result.annotations?.missing ?? [];
  return {
    kind: 'system',
    text,
    payload: {
      subtype: GATE_REJECTED,
      data: { step, attempt, attempts, feedback, reason: rejectionLine(result), missing: [...missing] },
      warning: true,
    },
  };
}
