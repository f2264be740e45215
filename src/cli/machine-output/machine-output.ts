/**
 * Where `--output-format` sends things: the human screen (standard output for `text`, standard
 * error otherwise), and the JSON lines (`stream-json`: one per event, the document last; `json`:
 * the document only).
 *
 * Invariants:
 * - In json and stream-json, standard output holds JSON lines and nothing else: every human line
 *   goes to `screen`, standard error, and dialogs that would write to standard output are not
 *   offered (`dialogs`).
 * - Every JSON line passes through the output sink's `shownJsonLine` (secrets masked, controls
 *   escaped) and `writeOut` (the last pass): a key the model or a check printed never leaks.
 * - The document is written exactly once, however the command ends (`finish`); a command that
 *   fails before it could start still gets one, with outcome `failed` and the reason.
 * - In text mode no JSON is written at all, and the human lines stay on standard output.
 * - The process streams are handed in by the command, as it hands them to its Terminal.
 */
import { shownJsonLine, writeErr, writeOut } from '../../output/sink.js';
import type { AgentSpec } from '../../runtime/agent-spec.js';
import type { RowAnnotations, StepResult } from '../../runtime/step-result.js';
import { taskSpend } from '../../runtime/task-spend.js';
import { type StepRunner, wrapRunner } from '../../workflow/runner.js';
import { InterruptedError, UsageError } from '../command-line/exit-errors.js';
import type { TerminalOutput } from '../terminal/terminal.js';
import { type MachineCommand, type MachineEvent, MachineRecord, type RunEnd } from './machine-events.js';
import type { OutputFormat } from './output-format.js';

/** What the command learnt about how it ended, as it ended (the drive loop fills it in). */
export type EndFacts = Partial<Omit<RunEnd, 'outcome' | 'reason'>> & {
  /** A deliberate stop (budget, brake, no rounds left): its line. */
  stopped?: string;
};

/** The process's streams, handed in by the command (a Terminal guards what it writes to them). */
export interface ProcessStreams {
  readonly stdin: { readonly isTTY?: boolean };
  readonly stdout: TerminalOutput;
  readonly stderr: TerminalOutput;
}

export class MachineOutput {
  readonly record: MachineRecord;
  private facts: EndFacts = {};
  private finished = false;

  constructor(
    readonly format: OutputFormat,
    command: MachineCommand,
    private readonly location: { workspace: string; runDir: string },
    private readonly streams: ProcessStreams,
    private readonly write: (line: string) => void = (line) => writeOut(line),
  ) {
    this.record = new MachineRecord(command);
  }

  /** JSON goes to standard output: people read the screen on standard error instead. */
  get machine(): boolean {
    return this.format !== 'text';
  }

  /** The stream the human lines go to. */
  get screen(): TerminalOutput {
    return this.machine ? this.streams.stderr : this.streams.stdout;
  }

  /** Whether a dialog that writes to standard output (setup, the sandbox question) may be offered. */
  get dialogs(): boolean {
    return !this.machine;
  }

  /** Whether the gates may ask a person (both ends are terminals, and dialogs are allowed). */
  get interactive(): boolean {
    return this.dialogs && Boolean(this.streams.stdin.isTTY && this.streams.stdout.isTTY);
  }

  /** Writes human text where people read it (standard output for text, else standard error). */
  say(text: string): void {
    if (this.machine) writeErr(text);
    else writeOut(text);
  }

  /** Streams `events` (stream-json only). */
  emit(events: readonly MachineEvent[]): void {
    if (this.format !== 'stream-json') return;
    for (const event of events) this.write(`${shownJsonLine(event)}\n`);
  }

  /** Notes what is known about the end (costs, manifest, session, a deliberate stop). */
  note(facts: EndFacts): void {
    this.facts = { ...this.facts, ...facts };
  }

  /** Writes the document once: outcome ok without `error`, else interrupted, usage, stopped or failed. */
  finish(error?: unknown): void {
    if (this.finished || !this.machine) return;
    this.finished = true;
    const reason = error === undefined ? null : error instanceof Error ? error.message : String(error);
    const outcome =
      error === undefined
        ? 'ok'
        : error instanceof InterruptedError
          ? 'interrupted'
          : error instanceof UsageError
            ? 'usage'
            : this.facts.stopped !== undefined
              ? 'stopped'
              : 'failed';
    const document = this.record.document({
      outcome,
      reason,
      runCostUsd: this.facts.runCostUsd ?? 0,
      taskCostUsd: this.facts.taskCostUsd ?? null,
      workspace: this.facts.workspace ?? this.location.workspace,
      runDir: this.facts.runDir ?? this.location.runDir,
      manifest: this.facts.manifest ?? null,
      sessionId: this.facts.sessionId ?? null,
      sessions: this.facts.sessions ?? {},
    });
    this.write(`${shownJsonLine(document)}\n`);
  }

  /**
   * A runner that streams each agent run's start and end, and what gates record on it. `role`
   * names the agent (`spec.role ?? spec.name`).
   */
  observingRunner(inner: StepRunner): StepRunner {
    if (!this.machine) return inner;
    const wrapped = wrapRunner(inner, async (spec: AgentSpec, prompt, options = {}) => {
      const role = spec.role ?? spec.name;
      this.emit([this.record.stepStarted(options.stepName ?? spec.name, role, options.resume)]);
      const result = await inner.run(spec, prompt, options);
      this.emit([this.record.stepEnded(result, role)]);
      return result;
    });
    return {
      ...wrapped,
      annotate: (result: StepResult, fields: RowAnnotations) => {
        if (inner.annotate) inner.annotate(result, fields);
        else result.annotations = { ...result.annotations, ...fields };
        this.emit(this.record.annotated(result, fields));
      },
    };
  }
}

/** Runs `work`, then writes the document (with the reason when it threw) and rethrows. */
export async function withDocument(output: MachineOutput, work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (error) {
    output.finish(error);
    throw error;
  }
  output.finish();
}

/**
 * Runs a command that starts agents (`go`, `run`, `once`) with its `--output-format` on this
 * process's streams: the one document is written however `work` ends.
 */
export function runWithOutput(
  format: OutputFormat | undefined,
  command: MachineCommand,
  location: { workspace: string; runDir: string },
  work: (output: MachineOutput) => Promise<void>,
): Promise<void> {
  const output = new MachineOutput(format ?? 'text', command, location, {
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
  });
  return withDocument(output, () => work(output));
}

/** The whole task's spend so far, or null when the books cannot be read (never a reason to fail). */
export function taskSpendOrNull(runDir: string): number | null {
  try {
    return taskSpend(runDir).totalUsd;
  } catch {
    return null;
  }
}
