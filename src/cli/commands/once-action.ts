/**
 * What `flower once` does (its flags live in `once.ts`): run one ad-hoc agent (step `ad-hoc`)
 * directly, with no workflow, no clarifying questions and no judge, and print what it does line by
 * line. Imported only when the command runs, because it pulls in the SDK and the runtime.
 *
 * Invariants:
 * - The agent is walled to its tool list (`-t`): the whitelist guard denies any other hands-on
 *   tool on the main thread, so `-t Read,Glob,Grep` really means read-only. A wake-up or cron job
 *   is refused like in every role: the process ends with the agent's turn (guards/later-turns.ts).
 * - Exit 0 on success; 1 with the reason on failure (missing credentials, a failed step); 2 for
 *   bad arguments (commander's usage errors, and a `-t` name that is no tool, checked first).
 * - `once` keeps no lineage: continuing is explicit (`--resume <session id>`), so the session id
 *   and the command that continues it are always printed (not only with `-v`), failed runs too.
 * - A resumed session's old large tool results reach the model as pointers to files, as on `go`
 *   (`--no-trim` keeps them whole; `-T` changes nothing here): resuming a long session without it
 *   sent 20.9 MB where trimming sent 4.3 MB, and nothing told the user (issue 23).
 * - It holds the task's lock from before it creates anything in the run directory until it exits:
 *   a second flower on the same task stops with one line naming the first. The sandbox gate comes
 *   before the lock: a sandbox that cannot run, unattended and without `--no-sandbox`, creates nothing.
 */

import { join } from 'node:path';
import type { PermissionMode } from '@anthropic-ai/claude-agent-sdk';
import { laterTurnGuard } from '../../agents/guards/later-turns.js';
import { whitelistGuard } from '../../agents/guards/whitelist.js';
import { workbenchHooks } from '../../agents/guards/workbench-hooks.js';
import { Workbench } from '../../agents/workbench.js';
import { checkCredentials } from '../../config/credentials.js';
import { chainMistakesNotice, loadEnvironment } from '../../config/env-chain.js';
import { maskSecrets } from '../../output/secrets.js';
import { writeErr } from '../../output/sink.js';
import type { AgentSpec } from '../../runtime/agent-spec.js';
import { mergeHooks } from '../../runtime/agent-spec.js';
import { Runtime } from '../../runtime/runtime.js';
import type { GlobalOptions } from '../command-line/global-options.js';
import { resolveSandboxPolicy, type SandboxFlags } from '../command-line/sandbox-flags.js';
import { requireWritable } from '../command-line/writable-directories.js';
import { ensureSandbox, sandboxLine } from '../interaction/sandbox-gate.js';
import { holdTask } from '../interaction/task-store.js';
import { type MachineOutput, runWithOutput, taskSpendOrNull } from '../machine-output/machine-output.js';
import { applyModelFlag, type MachineFlags } from '../machine-output/output-format.js';
import { colorEnabled, colorsFor } from '../terminal/colors.js';
import { formatElapsed, formatTurns } from '../terminal/format.js';
import { LiveStatus, showLiveStatus } from '../terminal/live-status.js';
import { TerminalRenderer } from '../terminal/renderer.js';
import { settingsLines } from '../terminal/settings-lines.js';
import { shownMessage } from '../terminal/shown-text.js';
import { Terminal } from '../terminal/terminal.js';
import { requireKnownTools } from './tool-list.js';

/** The manifest step name of every `once` run. */
export const ONCE_STEP = 'ad-hoc';

export interface OnceFlags extends SandboxFlags, MachineFlags {
  instructions: string;
  tools: string[];
  permissionMode: PermissionMode;
  budget?: number;
  resume?: string;
  fork?: boolean;
  /** `--no-trim` turns it off (see the module header). */
  trim: boolean;
}

/** The ad-hoc agent: the flags' tools and mode, walled to those tools, plus the workbench when `-W`. */
export function adHocSpec(flags: OnceFlags, workbench?: Workbench): AgentSpec {
  const wall = whitelistGuard(flags.tools, ONCE_STEP);
  const spec: AgentSpec = {
    name: ONCE_STEP,
    instructions: flags.instructions,
    allowedTools: flags.tools,
    permissionMode: flags.permissionMode,
    hooks: mergeHooks(
      wall && { PreToolUse: [wall] },
      { PreToolUse: [laterTurnGuard()] },
      workbench && workbenchHooks(workbench),
    ),
  };
  if (flags.budget !== undefined) spec.maxBudgetUsd = flags.budget;
  if (workbench) {
    spec.sessionPreamble = () => {
      workbench.refresh();
      return workbench.promptBlock();
    };
    if (workbench.external) spec.addDirs = [workbench.root];
  }
  return spec;
}

/** A path as a shell word: left alone when it is plain, else in single quotes. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./~-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}

/**
 * `session <id> — continue it with: flower [-w DIR] [-r DIR] once --resume <id> "..."`: the line a
 * person needs to continue the session, with the directories when they are not the defaults.
 */
export function resumeLine(sessionId: string, global: GlobalOptions, cwd: string = process.cwd()): string {
  const where = [
    ...(global.workspace === cwd ? [] : ['-w', shellWord(global.workspace)]),
    ...(global.runDir === join(global.workspace, 'runs') ? [] : ['-r', shellWord(global.runDir)]),
  ];
  const command = ['flower', ...where, 'once', '--resume', sessionId, '"..."'].join(' ');
  return `session ${sessionId} — continue it with: ${command}`;
}

export async function runOnce(prompt: string, flags: OnceFlags, global: GlobalOptions): Promise<void> {
  requireKnownTools(flags.tools);
  await runWithOutput(flags.outputFormat, 'once', global, (output) => once(prompt, flags, global, output));
}

async function once(
  prompt: string,
  flags: OnceFlags,
  global: GlobalOptions,
  output: MachineOutput,
): Promise<void> {
  // Before anything is asked or created; the agent may only read the workspace (the default tools).
  requireWritable({ ...global, writesWorkspace: false });
  const err = (line: string) => writeErr(`${line}\n`);
  // Human lines go where people read them: standard output, or standard error beside JSON.
  const pc = colorsFor(output.screen);
  applyModelFlag(flags.model, process.env);
  // The same one line go and run print: a .env mistake doctor would show, pointing at doctor.
  const mistakes = chainMistakesNotice(loadEnvironment(), process.env);
  if (mistakes !== undefined) err(pc.yellow(mistakes));
  if (global.verbose) for (const line of settingsLines()) err(line);
  const missing = checkCredentials(process.env);
  if (missing !== undefined) throw new Error(missing);
  if (prompt.trim() === '')
    throw new Error("give the agent something to do, e.g. flower once 'list the TODOs in src/'");
  const sandbox = await ensureSandbox(resolveSandboxPolicy(flags, process.env), {
    interactive: output.interactive,
    say: (line) => err(pc.yellow(line)),
  });
  if (global.verbose) writeErr(`${sandboxLine(sandbox)}\n`);
  // One writer per task, held until this process ends (task-lock.ts).
  const shared = await holdTask(global);
  try {
    const workbench = global.workbench
      ? new Workbench(global.workspace, { home: join(global.runDir, 'workbench') }).ensure()
      : undefined;
    // The same renderer and screen as `go`: a pipe gets no colour, a terminal without a size 80
    // columns, and while the model works a live status row says what it is waiting for.
    const terminal = new Terminal({ input: process.stdin, output: output.screen });
    // Warnings go to stderr, except on a screen with a status row, where they must pass above it.
    const note = (line: string) => (terminal.drawsFooter ? terminal.print([line]) : err(line));
    const mask = maskSecrets;
    const runtime = new Runtime({
      workspace: global.workspace,
      runDir: global.runDir,
      store: { trim: { enabled: flags.trim } },
      sandbox,
      ...(shared ? { shared } : {}),
      ...(workbench ? { notesDir: workbench.notes } : {}),
      onWarning: (line) => note(pc.yellow(`! ${shownMessage(line)}`)),
      ...(global.verbose ? { onVerbose: (line: string) => note(pc.dim(shownMessage(line))) } : {}),
    });
    const renderer = new TerminalRenderer({
      verbose: global.verbose,
      color: colorEnabled(process.env, Boolean(output.screen.isTTY)),
      width: () => terminal.width(),
      mask,
    });
    const live = new LiveStatus();
    const stopLive = showLiveStatus(terminal, live, { paint: pc.dim });
    try {
      output.emit([output.record.stepStarted(ONCE_STEP, ONCE_STEP, flags.resume)]);
      const result = await runtime.run(adHocSpec(flags, workbench), prompt, {
        stepName: ONCE_STEP,
        ...(flags.resume ? { resume: flags.resume, fork: flags.fork ?? false } : {}),
        onEvent: (event) => {
          live.observe(event);
          const lines = renderer.render(event);
          // The step's own end line ('+ done …') would say what the run's end line below says again.
          if (event.kind !== 'result') terminal.print(lines);
          output.emit(output.record.observe(event));
        },
      });
      stopLive();
      output.emit([output.record.stepEnded(result, ONCE_STEP)]);
      output.note({
        runCostUsd: runtime.totalCost(),
        taskCostUsd: taskSpendOrNull(global.runDir),
        manifest: runtime.manifestPath,
        ...(result.sessionId
          ? { sessionId: result.sessionId, sessions: { [ONCE_STEP]: result.sessionId } }
          : {}),
      });
      const summary = `${formatTurns(result.numTurns)} · $${result.costUsd.toFixed(4)} · ${formatElapsed(result.durationS * 1000)}`;
      // Without lineage, this line is the only way back into the session: always shown, failed runs too.
      const session = result.sessionId ? [pc.dim(`  ${resumeLine(result.sessionId, global)}`)] : [];
      if (!result.ok) {
        output.say([pc.red(`  x failed · ${summary}`), ...session, ''].join('\n'));
        throw new Error(`step "${ONCE_STEP}" failed: ${result.error ?? 'unknown reason'}`);
      }
      output.say([pc.green(`  + finished · ${summary}`), ...session, ''].join('\n'));
      if (global.verbose) err(pc.dim(`manifest ${runtime.manifestPath}`));
      const unsaved = runtime.transcriptProblem();
      if (unsaved !== undefined) throw new Error(unsaved);
    } finally {
      stopLive();
      terminal.close();
      runtime.close();
    }
  } finally {
    await shared?.close();
  }
}
