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
 * - `once` keeps no lineage: continuing is explicit (`--resume <session id>`).
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
import { loadEnvironment } from '../../config/env-chain.js';
import { maskSecrets } from '../../output/secrets.js';
import { writeErr, writeOut } from '../../output/sink.js';
import type { AgentSpec } from '../../runtime/agent-spec.js';
import { mergeHooks } from '../../runtime/agent-spec.js';
import { Runtime } from '../../runtime/runtime.js';
import type { GlobalOptions } from '../command-line/global-options.js';
import { resolveSandboxPolicy, type SandboxFlags } from '../command-line/sandbox-flags.js';
import { ensureSandbox, sandboxLine } from '../interaction/sandbox-gate.js';
import { holdTask } from '../interaction/task-store.js';
import { pc, stdoutColor } from '../terminal/colors.js';
import { formatElapsed, formatTurns } from '../terminal/format.js';
import { LiveStatus, showLiveStatus } from '../terminal/live-status.js';
import { TerminalRenderer } from '../terminal/renderer.js';
import { settingsLines } from '../terminal/settings-lines.js';
import { shownMessage } from '../terminal/shown-text.js';
import { Terminal } from '../terminal/terminal.js';
import { requireKnownTools } from './tool-list.js';

/** The manifest step name of every `once` run. */
export const ONCE_STEP = 'ad-hoc';

export interface OnceFlags extends SandboxFlags {
  instructions: string;
  tools: string[];
  permissionMode: PermissionMode;
  budget?: number;
  resume?: string;
  fork?: boolean;
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

export async function runOnce(prompt: string, flags: OnceFlags, global: GlobalOptions): Promise<void> {
  const err = (line: string) => writeErr(`${line}\n`);
  requireKnownTools(flags.tools);
  loadEnvironment();
  if (global.verbose) for (const line of settingsLines()) err(line);
  const missing = checkCredentials(process.env);
  if (missing !== undefined) throw new Error(missing);
  if (prompt.trim() === '')
    throw new Error("give the agent something to do, e.g. flower once 'list the TODOs in src/'");
  const sandbox = await ensureSandbox(resolveSandboxPolicy(flags, process.env), {
    interactive: Boolean(process.stdin.isTTY && process.stdout.isTTY),
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
    const terminal = new Terminal({ input: process.stdin, output: process.stdout });
    // Warnings go to stderr, except on a screen with a status row, where they must pass above it.
    const note = (line: string) => (terminal.drawsFooter ? terminal.print([line]) : err(line));
    const mask = maskSecrets;
    const runtime = new Runtime({
      workspace: global.workspace,
      runDir: global.runDir,
      store: { trim: { enabled: global.trim } },
      sandbox,
      ...(shared ? { shared } : {}),
      ...(workbench ? { notesDir: workbench.notes } : {}),
      onWarning: (line) => note(pc.yellow(`! ${shownMessage(line)}`)),
      ...(global.verbose ? { onVerbose: (line: string) => note(pc.dim(shownMessage(line))) } : {}),
    });
    const renderer = new TerminalRenderer({
      verbose: global.verbose,
      color: stdoutColor(),
      width: () => terminal.width(),
      mask,
    });
    const live = new LiveStatus();
    const stopLive = showLiveStatus(terminal, live, { paint: pc.dim });
    try {
      const result = await runtime.run(adHocSpec(flags, workbench), prompt, {
        stepName: ONCE_STEP,
        ...(flags.resume ? { resume: flags.resume, fork: flags.fork ?? false } : {}),
        onEvent: (event) => {
          live.observe(event);
          terminal.print(renderer.render(event));
        },
      });
      stopLive();
      const summary = `${formatTurns(result.numTurns)} · $${result.costUsd.toFixed(4)} · ${formatElapsed(result.durationS * 1000)}`;
      if (!result.ok) {
        writeOut(`${pc.red(`  x failed · ${summary}`)}\n`);
        throw new Error(`step "${ONCE_STEP}" failed: ${result.error ?? 'unknown reason'}`);
      }
      writeOut(`${pc.green(`  + finished · ${summary}`)}\n`);
      if (global.verbose) err(pc.dim(`session ${result.sessionId} · ${runtime.manifestPath}`));
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
