/**
 * What `flower [go] [request]` does (its flags live in `go.ts`): the one-command path. Clarify the
 * request into a brief, set a goal, work on it with a coordinator and a worker, have each round
 * judged, and pick up where the last run stopped when run again in the same directory.
 *
 * Invariants:
 * - Nothing costs money before the request is known and the flow is built: credentials, the wake
 *   check (read-only), the request prompt, `--isolate`'s git check all come first.
 * - The sandbox gate comes before everything that writes (the lock included): a sandbox that
 *   cannot run, off a terminal and without `--no-sandbox`, ends the command with nothing created.
 * - One writer per task: the task's lock is taken before anything in it is read or changed, and
 *   held until the process ends (task-lock.ts). With a store URL it is PostgreSQL's, and the run
 *   directory is pulled up to date before the wake state is read (cli/interaction/task-store.ts).
 * - `/new` (as the request or typed at the prompt) is `--new`: the brief, goal and lineage are
 *   archived and the prompt asks again, now for a fresh request.
 * - A wake first says what happened last time (the ruling, when, what was spent). A task the judge
 *   ruled achieved is left alone unless someone says what else to do; a new request for a directory
 *   that has a task is asked about on a terminal and announced off one, never appended silently.
 * - On `go`, `-T` and `-W` do nothing: trimming is on unless `--no-trim`, and the starter flow
 *   brings its own workbench.
 * - Standard input that is not a terminal means unattended (`--timeout 0`) unless `--timeout` was
 *   typed, said in one line (question-wait.ts); at a wake, its end (no words given) means "carry
 *   on", also said in one line, so cron, nohup and systemd continue a task after a crash.
 * - Imported only when the command runs: it pulls in the SDK, the workflow layer and the roles.
 */

import { homedir } from 'node:os';
import { loadEnvironment } from '../../config/env-chain.js';
import { writeErr } from '../../output/sink.js';
import type { Runtime } from '../../runtime/runtime.js';
import {
  startOver as archiveTask,
  starterFlow,
  starterPaths,
  type WakeState,
  WORK_STEP,
  wakeState,
} from '../../workflow/starter.js';
import type { Workflow } from '../../workflow/workflow.js';
import type { GlobalOptions } from '../command-line/global-options.js';
import { resolveSandboxPolicy, type SandboxFlags } from '../command-line/sandbox-flags.js';
import { requireWritable } from '../command-line/writable-directories.js';
import { ensureCredentials } from '../interaction/credentials-gate.js';
import { drive } from '../interaction/drive.js';
import { questionWait } from '../interaction/question-wait.js';
import { CONTINUING_NOTICE, readRequest, START_OVER_COMMAND } from '../interaction/request-prompt.js';
import { ensureSandbox, sandboxLine } from '../interaction/sandbox-gate.js';
import {
  ACHIEVED_PROMPT,
  addedToBriefLine,
  addOrNewQuestion,
  clarifiedLines,
  isAchieved,
  lastTimeLines,
  NOTHING_TO_DO,
  pendingRemarkLine,
} from '../interaction/task-notice.js';
import { holdTask } from '../interaction/task-store.js';
import { type MachineOutput, runWithOutput } from '../machine-output/machine-output.js';
import { applyModelFlag, type MachineFlags } from '../machine-output/output-format.js';
import { colorEnabled, colorsFor } from '../terminal/colors.js';
import { formatTokens } from '../terminal/format.js';
import { settingsLines } from '../terminal/settings-lines.js';
import { Terminal } from '../terminal/terminal.js';

export interface GoFlags extends SandboxFlags, MachineFlags {
  asks: number;
  rounds: number;
  goal: boolean;
  judgeCanRun: boolean;
  timeout: number;
  isolate: boolean;
  window?: number;
  handoff: boolean;
  new: boolean;
  clarifyOnly: boolean;
  trim: boolean;
  /** `--timeout` was typed (not its default): it then holds even when stdin is not a terminal. */
  timeoutGiven?: boolean;
  budget?: number;
  stall: number;
  bequest: boolean;
}

/** `~/proj` for paths under the home directory. */
export function tildePath(path: string, home: string = homedir()): string {
  return home && (path === home || path.startsWith(`${home}/`)) ? `~${path.slice(home.length)}` : path;
}

/** The one-line wake banner: what is already settled, and how often this directory has been woken. */
export function wakeBanner(workspace: string, state: WakeState, workContext: number): string {
  const parts = ['brief confirmed'];
  // Items, not checks: only the items with a command are checks flower runs (issue 21).
  if (state.items > 0)
    parts.push(
      `goal: ${state.items} item${state.items === 1 ? '' : 's'}${state.hostChecks > 0 ? ` (${state.hostChecks} checked by flower)` : ''}`,
    );
  const ruling = state.lastRuling;
  if (ruling && ruling.verdict !== 'achieved')
    parts.push(
      `judge: ${ruling.verdict ?? 'not yet'} (${ruling.rounds ? `${ruling.round}/${ruling.rounds}` : `round ${ruling.round}`})`,
    );
  if (workContext > 0) parts.push(`work context ${formatTokens(workContext)}`);
  parts.push(`wake ${state.woke + 1}`);
  return `<- continuing in ${tildePath(workspace)}  ${parts.join(' · ')}`;
}

/** Said when --new moved the old task away: where to find it again. */
export function archivedLine(archive: string, runDir: string): string {
  return `- the previous task is archived in ${archive} (its brief, goal and lineage); its transcripts and spend stay in ${runDir}`;
}

export async function runGo(request: string, flags: GoFlags, global: GlobalOptions): Promise<void> {
  await runWithOutput(flags.outputFormat, 'go', global, (output) => go(request, flags, global, output));
}

async function go(
  request: string,
  flags: GoFlags,
  global: GlobalOptions,
  output: MachineOutput,
): Promise<void> {
  // Before anything is asked or created: the brief, the goal and the run directory live here.
  requireWritable({ ...global, writesWorkspace: true });
  // Human lines go where people read them: standard output, or standard error beside JSON.
  const color = colorEnabled(process.env, Boolean(output.screen.isTTY));
  const paint = colorsFor(output.screen);
  applyModelFlag(flags.model, process.env);
  loadEnvironment();
  if (global.verbose) for (const line of settingsLines()) writeErr(`${line}\n`);
  // Before the lock or anything else is created: a refusal leaves the workspace untouched.
  const sandbox = await ensureSandbox(resolveSandboxPolicy(flags, process.env), {
    interactive: output.interactive,
    say: (line) => output.say(`${paint.yellow(line)}\n`),
  });
  if (global.verbose) writeErr(`${sandboxLine(sandbox)}\n`);
  // Before the wake state is read or anything is archived; held until this process ends.
  const shared = await holdTask(global);
  try {
    await ensureCredentials({
      interactive: output.interactive,
      say: (line) => output.say(`${paint.yellow(line)}\n`),
    });

    const location = { workspace: global.workspace, runDir: global.runDir, isolate: flags.isolate };
    let startOver = flags.new;
    const state = wakeState(location);
    let waking = state.waking && !startOver;
    const terminal = new Terminal({ input: process.stdin, output: output.screen });
    const wait = questionWait({
      timeoutSeconds: flags.timeout,
      timeoutGiven: flags.timeoutGiven ?? false,
      stdinIsTerminal: terminal.inputIsTerminal,
    });
    let workflow: Workflow;
    try {
      if (request === START_OVER_COMMAND) {
        startOver = true;
        waking = false;
        request = '';
      }
      const given = request !== '';
      if (waking) terminal.print(lastTimeLines(state).map((line) => paint.cyan(line)));
      if (waking && state.pendingRemark !== '' && !flags.clarifyOnly)
        terminal.print([paint.cyan(pendingRemarkLine(state))]);
      if (!given) {
        // Achieved already: another round would only pay for the same answer, unless asked for more.
        const achieved = waking && isAchieved(state);
        // Off a terminal, input that simply ends reads as Enter when waking (request-prompt.ts).
        request = achieved
          ? await readRequest(terminal, { waking: true, paint: paint.cyan, header: ACHIEVED_PROMPT })
          : await readRequest(terminal, { waking, paint: paint.cyan });
        if (achieved && request === '') {
          terminal.close();
          output.say(`${NOTHING_TO_DO}\n`);
          return;
        }
        if (waking && request === '' && !terminal.inputIsTerminal)
          terminal.print([paint.dim(CONTINUING_NOTICE)]);
      } else if (waking) {
        if (terminal.inputIsTerminal) {
          if (
            (await readRequest(terminal, {
              waking: true,
              paint: paint.cyan,
              header: addOrNewQuestion(state),
            })) === START_OVER_COMMAND
          ) {
            startOver = true;
            waking = false;
          }
        } else {
          terminal.print([paint.yellow(`! ${addedToBriefLine(state)}`)]);
        }
      }
      while (request === START_OVER_COMMAND) {
        startOver = true;
        waking = false;
        request = await readRequest(terminal, { waking: false, paint: paint.cyan });
      }
      if (wait.notice) terminal.print([paint.dim(wait.notice)]);
      // Archived here rather than inside starterFlow, so the screen can say where the old task went.
      const archived = startOver ? archiveTask(location) : undefined;
      if (archived) terminal.print([paint.cyan(archivedLine(archived, global.runDir))]);
      workflow = starterFlow({
        ...location,
        request,
        startOver: false,
        clarifyOnly: flags.clarifyOnly,
        goal: flags.goal,
        rounds: flags.rounds,
        judgeCanRun: flags.judgeCanRun,
        ...(flags.asks >= 0 ? { maxAsks: flags.asks } : {}),
        timeoutSeconds: wait.timeoutSeconds,
        stall: flags.stall,
        bequest: flags.bequest,
      });
    } catch (error) {
      // The request prompt may have put the terminal in raw mode; give it back before the message.
      terminal.close();
      throw error;
    }
    await drive({
      workflow,
      global,
      terminal,
      trim: flags.trim,
      sandbox,
      handoff: flags.handoff ? (flags.window ? { window: flags.window } : true) : false,
      interactive: true,
      color,
      output,
      ...(shared ? { shared } : {}),
      ...(flags.budget === undefined ? {} : { budget: flags.budget }),
      ...(waking
        ? {
            banner: (runtime: Runtime) => {
              const workSession = state.steps[WORK_STEP];
              const context = workSession ? runtime.contextOf(workSession) : 0;
              return [paint.cyan(wakeBanner(global.workspace, state, context))];
            },
          }
        : {}),
    });
    if (flags.clarifyOnly) {
      // Only the brief was written: say where it is and what turns it into work.
      const added = wakeState(location).pendingRemark !== '';
      for (const line of clarifiedLines(starterPaths(location).brief, tildePath(global.workspace), added))
        output.say(`${paint.cyan(line)}\n`);
    }
  } finally {
    await shared?.close();
  }
}
