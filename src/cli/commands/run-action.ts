/**
 * What `flower run <file-or-module>:<export>` does (its arguments live in `run.ts`): run a workflow
 * the user wrote against the public API, with the same terminal UI as `go` (questions, mail,
 * asides, Ctrl-C, the final cost line).
 *
 * Invariants:
 * - The target's shape is checked first; credentials before the user's module is imported (importing may build roles,
 *   channels and workbenches; none of that should happen for a run that cannot start).
 * - The task's lock is taken before the workflow is imported, and held until the process ends; the
 *   sandbox gate comes before the lock (a refusal creates nothing).
 * - Every malformed target exits 2 with one line saying what to type instead; a target whose code
 *   fails to load or to build its workflow exits 1 (workflow-target.ts).
 * - A factory export is called with the resolved `{ workspace, runDir }`, so `-w` and `-r` decide
 *   where the workflow's files go, exactly as they decide where `runs/` goes.
 * - `-T` turns trimming on and `-W` gives the run a workbench when the workflow has none; handoff
 *   uses its defaults.
 * - Imported only when the command runs: it pulls in the SDK and the runtime.
 */

import { loadEnvironment } from '../../config/env-chain.js';
import { writeErr } from '../../output/sink.js';
import type { GlobalOptions } from '../command-line/global-options.js';
import { resolveSandboxPolicy, type SandboxFlags } from '../command-line/sandbox-flags.js';
import { requireWritable } from '../command-line/writable-directories.js';
import { ensureCredentials } from '../interaction/credentials-gate.js';
import { drive } from '../interaction/drive.js';
import { ensureSandbox, sandboxLine } from '../interaction/sandbox-gate.js';
import { holdTask } from '../interaction/task-store.js';
import { type MachineOutput, runWithOutput } from '../machine-output/machine-output.js';
import { applyModelFlag, type MachineFlags } from '../machine-output/output-format.js';
import { colorEnabled } from '../terminal/colors.js';
import { settingsLines } from '../terminal/settings-lines.js';
import { Terminal } from '../terminal/terminal.js';
import { loadWorkflow, parseTarget } from './workflow-target.js';

export async function runWorkflow(
  target: string,
  global: GlobalOptions,
  budget?: number,
  flags: SandboxFlags & MachineFlags = {},
): Promise<void> {
  // A target that cannot be right is reported before anything else is looked at (a usage error,
  // before any document: nothing was started).
  parseTarget(target);
  await runWithOutput(flags.outputFormat, 'run', global, (output) =>
    run(target, global, budget, flags, output),
  );
}

async function run(
  target: string,
  global: GlobalOptions,
  budget: number | undefined,
  flags: SandboxFlags & MachineFlags,
  output: MachineOutput,
): Promise<void> {
  // Before anything is asked or created; a workflow may only read the workspace.
  requireWritable({ ...global, writesWorkspace: false });
  applyModelFlag(flags.model, process.env);
  loadEnvironment();
  if (global.verbose) for (const line of settingsLines()) writeErr(`${line}\n`);
  const interactive = output.interactive;
  const sandbox = await ensureSandbox(resolveSandboxPolicy(flags, process.env), {
    interactive,
    say: (line) => output.say(`${line}\n`),
  });
  if (global.verbose) writeErr(`${sandboxLine(sandbox)}\n`);
  // One writer per task (task-lock.ts), held until this process ends.
  const shared = await holdTask(global);
  try {
    await ensureCredentials({
      interactive,
      say: (line) => output.say(`${line}\n`),
    });
    const workflow = await loadWorkflow(target, { workspace: global.workspace, runDir: global.runDir });
    await drive({
      workflow,
      global,
      terminal: new Terminal({ input: process.stdin, output: output.screen }),
      trim: global.trim,
      sandbox,
      handoff: true,
      interactive: true,
      color: colorEnabled(process.env, Boolean(output.screen.isTTY)),
      output,
      ...(shared ? { shared } : {}),
      ...(budget === undefined ? {} : { budget }),
    });
  } finally {
    await shared?.close();
  }
}
