/**
 * Runs a workflow in front of a person: the shared driver of `go`, `run` and `demo`.
 *
 * Invariants:
 * - One Runtime, one renderer and one recent-events window per process, so cost, elapsed time and
 *   the oracle's view are real.
 * - The terminal is restored and the runtime closed whatever happens (the `finally`), after waiting
 *   a bounded time for side questions still being answered.
 * - The last line always says what this process spent (its asides included), what the whole task
 *   has spent so far, and where the manifest is.
 * - The screen says who speaks: before each agent run the renderer is told the role (`judge`,
 *   `coordinator`, …) through a runner that wraps the real one; workers are named by their dispatch.
 * - While an agent works, a live status says what is being waited for (live-status.ts).
 * - A workflow that stopped at a failed step ends the command with exit 1 and a one-line reason
 *   naming the step; a credential failure says how to fix the credentials and, on a terminal,
 *   offers the setup dialog right away (the next run then continues where this one stopped).
 * - A deliberate stop (a spent budget, the no-progress brake, no rounds left, nobody to decide)
 *   ends with exactly its own line, which names what continues the task.
 * - `budget` caps every step of the run at what is left of the task's budget (`workflow/budget.ts`).
 * - The one sandbox policy (after the gate, sandbox-gate.ts) reaches every Runtime the run builds:
 *   the workflow's and each aside's.
 * - With `--output-format json|stream-json` (`output`), every event, step and ruling is also told to
 *   the machine output, which learns how the run ended before the command's error is thrown; the
 *   setup dialog, which writes to standard output, is then not offered.
 */
import { join } from 'node:path';
import { createColors } from 'picocolors';
import { workbenchHooks } from '../../agents/guards/workbench-hooks.js';
import { Workbench } from '../../agents/workbench.js';
import type { EnvMap } from '../../config/paths.js';
import type { HandoffPolicyOptions } from '../../config/policies.js';
import { maskSecrets, rememberSecrets } from '../../output/secrets.js';
import { totalLine } from '../../report/total-line.js';
import type { AgentSpec } from '../../runtime/agent-spec.js';
import { mergeHooks } from '../../runtime/agent-spec.js';
import type { EventSink, FlowerEvent } from '../../runtime/events.js';
import { Runtime } from '../../runtime/runtime.js';
import type { SandboxPolicy } from '../../runtime/sandbox/policy.js';
import type { RuntimeSharing } from '../../runtime/shared/sharing.js';
import { rejectionLine } from '../../runtime/step-result.js';
import { budgetedRunner, isBudgetStop, TaskBudget } from '../../workflow/budget.js';
import type { WorkflowContext } from '../../workflow/context.js';
import { type StepRunner, wrapRunner } from '../../workflow/runner.js';
import type { Workflow } from '../../workflow/workflow.js';
import type { GlobalOptions } from '../command-line/global-options.js';
import { type MachineOutput, taskSpendOrNull } from '../machine-output/machine-output.js';
import { LiveStatus, showLiveStatus } from '../terminal/live-status.js';
import { TerminalRenderer } from '../terminal/renderer.js';
import { shownMessage } from '../terminal/shown-text.js';
import type { Terminal } from '../terminal/terminal.js';
import { answerAside } from './aside.js';
import { configure } from './credentials-gate.js';
import { Interaction } from './interaction.js';
import { RecentEvents } from './recent-events.js';

export interface DrivePolicy {
  /** How long to wait at exit for side questions still being answered. */
  readonly asideDrainMs: number;
}

export const defaultDrivePolicy: DrivePolicy = { asideDrainMs: 120_000 };

export interface DriveOptions {
  readonly workflow: Workflow;
  readonly global: GlobalOptions;
  readonly terminal: Terminal;
  /** Rewrite old big tool results on resume. */
  readonly trim: boolean;
  /** What the agents' commands may touch, as the sandbox gate let it through. */
  readonly sandbox: SandboxPolicy;
  /** Handoff settings (`false`: let the harness compact instead). */
  readonly handoff: boolean | HandoffPolicyOptions;
  /** Environment for the agents (the demo points them at its mock model); default process.env. */
  readonly env?: EnvMap;
  /** Read the keyboard during the run (questions, mail, asides, Ctrl-C). The demo answers itself. */
  readonly interactive: boolean;
  /** Sees every event after it is rendered (the demo's scripted human). */
  readonly observe?: EventSink;
  /** Lines printed before the run starts (the wake banner); gets the runtime to look sessions up. */
  readonly banner?: (runtime: Runtime) => readonly string[];
  readonly color: boolean;
  /** The model is scripted (the demo): every dollar figure is marked as simulated. */
  readonly simulatedCost?: boolean;
  readonly policy?: DrivePolicy;
  /** Quit the process (second Ctrl-C); default `process.exit`. */
  readonly quit?: (code: number) => void;
  /** The task's budget in USD (`--budget`), across every run in this run directory. */
  readonly budget?: number;
  /** The task's state is also kept in PostgreSQL (cli/interaction/task-store.ts). */
  readonly shared?: RuntimeSharing;
  /** `--output-format json|stream-json`: where the events and the final document go. */
  readonly output?: MachineOutput;
}

export interface DriveOutcome {
  readonly context: WorkflowContext;
  readonly totalCostUsd: number;
  readonly manifestPath: string;
}

/** Failure texts that mean "the credentials are wrong", as opposed to the work going wrong. */
const CREDENTIAL_FAILURE = /40[13]|invalid[_ ]?api[_ ]?key|authentication|unauthori[sz]ed/i;

/** Why the step failed, in its own words, for the one-line exit reason. */
function failureText(context: WorkflowContext, step: string): string {
  const result = context.results[step];
  const words = [result?.error, ...(result?.errors ?? [])].filter(Boolean).join('; ');
  if (words) return words;
  if (context.aborted) return context.aborted;
  // The agent finished but the step's own check rejected the result (every attempt): say what it
  // recorded as missing.
  return result?.ok ? `the agent finished, but ${rejectionLine(result)}` : '';
}

async function settleWithin(promises: Promise<unknown>[], ms: number): Promise<void> {
  if (promises.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([Promise.allSettled(promises), deadline]);
  clearTimeout(timer);
}

/**
 * A runner that gives every step the workbench's guards (index refresh, spill). Used for `-W` on a
 * workflow that brought no workbench of its own: its specs were written without one, so the hooks
 * are added here rather than expected from the author.
 */
export function withWorkbenchGuards(runtime: Runtime, workbench: Workbench): StepRunner {
  const guards = workbenchHooks(workbench);
  return wrapRunner(runtime, (spec, prompt, options) =>
    runtime.run({ ...spec, hooks: mergeHooks(spec.hooks, guards) }, prompt, options),
  );
}

/**
 * A runner that tells `onRun` which agent is about to run, then runs it on `runner`. The judge of a
 * goal runs through the same runner (from inside the work step's gate), so it is announced too.
 */
export function announcingRunner(runner: StepRunner, onRun: (spec: AgentSpec) => void): StepRunner {
  return wrapRunner(runner, (spec, prompt, options) => {
    onRun(spec);
    return runner.run(spec, prompt, options);
  });
}

export async function drive(options: DriveOptions): Promise<DriveOutcome> {
  const { workflow, global, terminal } = options;
  const paint = createColors(options.color);
  const policy = options.policy ?? defaultDrivePolicy;
  const print = (lines: string[]) => terminal.print(lines);

  const workbench =
    workflow.workbench ??
    (global.workbench
      ? new Workbench(global.workspace, { home: join(global.runDir, 'workbench') }).ensure()
      : undefined);
  rememberSecrets(options.env ?? process.env);
  let runtime: Runtime;
  try {
    runtime = new Runtime({
      workspace: global.workspace,
      runDir: global.runDir,
      ...(options.env ? { env: options.env } : {}),
      ...(options.shared ? { shared: options.shared } : {}),
      sandbox: options.sandbox,
      handoff: options.handoff,
      store: { trim: { enabled: options.trim } },
      ...(workbench ? { notesDir: workbench.notes } : {}),
      ...(workbench?.external ? { addDirs: [workbench.root] } : {}),
      onWarning: (line) => print([paint.yellow(`! ${shownMessage(line)}`)]),
      ...(global.verbose ? { onVerbose: (line: string) => print([paint.dim(shownMessage(line))]) } : {}),
    });
  } catch (error) {
    // The request prompt may have left the terminal raw; give it back before the message.
    terminal.close();
    throw error;
  }

  const renderer = new TerminalRenderer({
    verbose: global.verbose,
    color: options.color,
    width: () => terminal.width(),
    labelSpeakers: true,
    simulatedCost: options.simulatedCost ?? false,
    mask: maskSecrets,
  });
  const live = new LiveStatus();
  // With -v the oracle's own events are shown too, through a renderer of their own so that the
  // main run's status line never counts an aside's cost.
  const asideRenderer = new TerminalRenderer({
    verbose: true,
    color: options.color,
    width: () => terminal.width(),
    mask: maskSecrets,
  });
  const recent = new RecentEvents();

  // One budget for the whole task: the workflow's steps and the asides asked meanwhile.
  const budget =
    options.budget === undefined ? undefined : TaskBudget.forRunDir(options.budget, runtime.runDir);
  const interaction = options.interactive
    ? new Interaction({
        terminal,
        channel: workflow.channel,
        interrupt: (words) => runtime.interrupt(words),
        aside: (question) =>
          answerAside(question, {
            workspace: global.workspace,
            runDir: global.runDir,
            workbench,
            sandbox: options.sandbox,
            ...(options.env ? { env: options.env } : {}),
            recent: () => recent.lines(),
            ...(budget ? { budget } : {}),
            print,
            width: () => terminal.width(),
            paint,
            ...(global.verbose
              ? { onEvent: (event: FlowerEvent) => print(asideRenderer.render(event)) }
              : {}),
          }),
        quit: options.quit ?? ((code) => process.exit(code)),
        paint,
      })
    : undefined;

  const sink = (event: FlowerEvent) => {
    recent.add(event);
    live.observe(event);
    print(renderer.render(event));
    interaction?.observe(event);
    options.observe?.(event);
    options.output?.emit(options.output.record.observe(event));
  };

  if (options.banner) print([...options.banner(runtime)]);
  // Questions that would wait for nobody: say so, unless the run already never waits (--timeout 0).
  const questionsWait = workflow.channel !== undefined && (workflow.channel.timeoutSeconds ?? 1) > 0;
  if (interaction && questionsWait && !terminal.inputIsTerminal) {
    print([
      paint.yellow(
        '! standard input is not a terminal, so nobody can answer questions; add --timeout 0 to let it decide on its own',
      ),
    ]);
  }

  let context: WorkflowContext;
  const stopLive = showLiveStatus(terminal, live, { paint: paint.dim });
  // Asides answered from now on belong to this run's total line.
  const startedAt = Date.now() / 1000;
  try {
    interaction?.start();
    // -W on a workflow without a workbench of its own: its steps get the workbench's guards too.
    const guarded = workbench && !workflow.workbench ? withWorkbenchGuards(runtime, workbench) : runtime;
    const observed = options.output ? options.output.observingRunner(guarded) : guarded;
    const announcing = announcingRunner(observed, (spec) => renderer.speaker(spec.role ?? spec.name));
    // The budget goes outside, so a step it refuses is never announced.
    const runner = budget === undefined ? announcing : budgetedRunner(announcing, budget);
    context = await workflow.run(runner, { onEvent: sink });
  } finally {
    stopLive();
    interaction?.stop();
    const asides = interaction?.pendingAsides ?? [];
    if (asides.length > 0) {
      print([
        paint.dim(
          `(waiting for ${asides.length} side question${asides.length === 1 ? '' : 's'} to finish...)`,
        ),
      ]);
      await settleWithin(asides, policy.asideDrainMs);
    }
    runtime.close();
    terminal.close();
  }

  const totalCostUsd = runtime.totalCost();
  if (context.assumptions?.length) {
    print([paint.yellow(`! assumed, not verified on this machine: ${context.assumptions.join('; ')}`)]);
  }
  const costNote = options.simulatedCost ? ' (simulated)' : '';
  print([
    '',
    `${totalLine(global.runDir, totalCostUsd, startedAt, costNote)} · manifest ${runtime.manifestPath}`,
  ]);
  const unsaved = runtime.transcriptProblem();
  if (options.output) {
    // The session that continues the work is the last workflow step's that ran (not the judge's).
    const ran = workflow.steps.filter((step) => context.results[step.name] !== undefined).at(-1);
    const sessionId = ran === undefined ? undefined : context.sessions[ran.name];
    options.output.note({
      runCostUsd: totalCostUsd,
      taskCostUsd: taskSpendOrNull(global.runDir),
      manifest: runtime.manifestPath,
      sessions: { ...context.sessions },
      ...(sessionId ? { sessionId } : {}),
    });
  }

  if (context.failedAt !== undefined) {
    const failed = context.results[context.failedAt];
    // A budget or the loss of the task stops the run on purpose, with a whole line of its own.
    const deliberate =
      context.aborted ??
      (failed && (isBudgetStop(failed) || failed.ownershipLost) ? failed.error : undefined);
    if (deliberate) {
      options.output?.note({ stopped: deliberate });
      throw new Error(deliberate);
    }
    const reason = failureText(context, context.failedAt);
    let credentials = '';
    if (CREDENTIAL_FAILURE.test(reason)) {
      credentials =
        ' The API refused the credentials: run `flower setup`, then the same command again to continue.';
      if (options.interactive && terminal.inputIsTerminal && (options.output?.dialogs ?? true)) {
        print([paint.yellow(`! this looks like a credential problem: ${reason.slice(0, 120)}`)]);
        if (
          await configure(
            'Fix the credentials; then run the same command again and it continues where it stopped.',
          )
        ) {
          credentials =
            ' Credentials saved: run the same command again; this directory continues where it stopped.';
        }
      }
    }
    const detail = reason ? `: ${reason.split('\n')[0]?.slice(0, 200)}` : '';
    throw new Error(`stopped at step '${context.failedAt}'${detail}.${credentials}`);
  }
  // The work may have succeeded, but a run whose transcript is not safely stored is not a success.
  if (unsaved !== undefined) throw new Error(unsaved);
  return { context, totalCostUsd, manifestPath: runtime.manifestPath };
}
