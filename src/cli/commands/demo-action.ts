/**
 * What `flower demo [dir]` does (its argument lives in `demo.ts`): the whole starter flow, offline,
 * in about a minute. A scripted model on 127.0.0.1 (the package's mock Messages API) plays every
 * role; the real Claude Code binary runs the agents, hooks and tools exactly as in a real run.
 *
 * Invariants:
 * - No credentials and no network: the agents' environment is built from scratch for the mock model
 *   (host ANTHROPIC_* and CLAUDE_* settings are dropped), with a throw-away CLAUDE_CONFIG_DIR.
 * - It works in a fresh directory: a temporary one, or the one given, which must be empty or new,
 *   so the demo never wakes up an earlier task or writes into someone's project. The one exception
 *   is a demo of its own that was stopped (it leaves `runs/demo.json`): that one is continued, and
 *   the demo says so, so that crash recovery can be watched without credentials.
 * - The worker's commands run in the sandbox like in a real run, with no network at all (the demo
 *   needs none). The sandbox gate comes first, before any directory is made: where the sandbox
 *   cannot run, a terminal is asked and anything else is refused, unless `--no-sandbox`.
 * - The demo answers its own question (by number, as a person would), so it needs no keyboard.
 * - It ends by saying where everything flower left behind is, so it can be looked at.
 * - Every dollar figure it shows says it is simulated: the scripted model reports token usage, the
 *   binary prices it, and none of it was paid.
 * - However it ends — finished, failed, Ctrl-C (exit 130), SIGTERM/SIGHUP, or a closed output pipe
 *   (`flower demo | head`, EPIPE) — the temporary Claude configuration is removed and the mock model
 *   closed (`cleanUpDemo`), and a demo that did not finish says where its partial workspace is.
 * - Imported only when the command runs: it pulls in the mock model, the SDK and the workflow layer.
 */

import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ensurePrivateDirectory } from '../../config/private-files.js';
import { writeErr, writeOut } from '../../output/sink.js';
import { DEMO_MARKER } from '../../runtime/demo-run.js';
import { peekManifest } from '../../runtime/manifest.js';
import type { SandboxPolicy } from '../../runtime/sandbox/policy.js';
import { mockModelEnv } from '../../testing/env.js';
import { type MockModel, startMockModel } from '../../testing/server.js';
import { BEQUEST_FILES } from '../../workflow/bequest-turn.js';
import { starterFlow, starterPaths } from '../../workflow/starter.js';
import { UsageError } from '../command-line/exit-errors.js';
import type { GlobalOptions } from '../command-line/global-options.js';
import { unwritableMessage, writeProblem } from '../command-line/writable-directories.js';
import { drive } from '../interaction/drive.js';
import { ensureSandbox } from '../interaction/sandbox-gate.js';
import { colorsFor, stdoutColor } from '../terminal/colors.js';
import { Terminal } from '../terminal/terminal.js';
import { endChildren } from './child-processes.js';
import { DEMO_ANSWER, DEMO_PROGRAM, DEMO_REQUEST, demoScript } from './demo-script.js';

export interface DemoPolicy {
  /** Pause before the scripted human answers, so the question can be read first. */
  readonly answerDelayMs: number;
  /** The binary's own retries against the mock (it never fails, so few are enough). */
  readonly maxRetries: number;
  /** Each scripted reply waits this long, so the screen moves at a pace a newcomer can follow. */
  readonly replyDelayMs: number;
}

export const defaultDemoPolicy: DemoPolicy = { answerDelayMs: 800, maxRetries: 2, replyDelayMs: 1000 };

interface DemoWorkspace {
  workspace: string;
  /** An earlier demo in this directory stopped before the judge ruled: this run continues it. */
  continuing: boolean;
}

const DEMO_UNWRITABLE_ADVICE = 'Give the demo a directory you can write, or none for a temporary one.';

/** Whether an earlier demo in `workspace` got as far as the judge's ruling. */
function demoFinished(workspace: string): boolean {
  return peekManifest(join(workspace, 'runs')).document.some(
    (row) => typeof row.step === 'string' && row.step.includes(':verdict#') && row.ok === true,
  );
}

/**
 * The demo's workspace: a new temporary directory; `dir` when it is new or empty; or `dir` again
 * when an earlier demo there was stopped (killed, the terminal closed): then the demo continues it
 * against the built-in mock, which answers resumed sessions too. Any other directory with files is
 * refused: the demo never wakes up someone's real task or writes into their project.
 */
function demoWorkspace(dir: string | undefined): DemoWorkspace {
  const workspace = dir === undefined ? mkdtempSync(join(tmpdir(), 'flower-demo-')) : resolve(dir);
  // Before the recursive mkdir below, which never returns under /proc and says only EACCES elsewhere.
  const problem = writeProblem(workspace);
  if (problem !== undefined)
    throw new UsageError(unwritableMessage('workspace', workspace, problem, DEMO_UNWRITABLE_ADVICE));
  mkdirSync(workspace, { recursive: true });
  const marker = join(workspace, 'runs', DEMO_MARKER);
  if (readdirSync(workspace).length > 0) {
    if (!existsSync(marker)) {
      throw new Error(
        `${workspace} is not empty; the demo needs a fresh directory. Give a new path, or none for a temporary one.`,
      );
    }
    if (demoFinished(workspace)) {
      throw new Error(
        `The demo in ${workspace} already finished; look at what it left there, or give a new path (or none) to watch it again.`,
      );
    }
    return { workspace, continuing: true };
  }
  ensurePrivateDirectory(join(workspace, 'runs'));
  writeFileSync(marker, `${JSON.stringify({ demo: true, startedAt: new Date().toISOString() })}\n`, {
    mode: 0o600,
  });
  return { workspace, continuing: false };
}

/** What a demo holds while it runs, and must give back however it ends. */
export interface DemoResources {
  /** The throw-away CLAUDE_CONFIG_DIR. */
  readonly configDir: string;
  readonly model: Pick<MockModel, 'close'>;
}

/**
 * Gives back what the demo holds: the temporary Claude configuration is deleted and the mock model
 * closed. Call it once the agent binaries have ended (they write into the configuration). Safe to
 * call more than once. The workspace is never touched: it is the demo's result.
 */
export function cleanUpDemo(resources: DemoResources): Promise<void> {
  rmSync(resources.configDir, { recursive: true, force: true });
  return resources.model.close().catch(() => undefined);
}

/** How a demo that did not finish tells where its partial workspace is. */
export function partialWorkspaceNote(workspace: string, why: string): string {
  return (
    `flower demo: ${why}. The partial workspace is at ${workspace} (runs/ and .flower/ hold what was ` +
    'done so far); the temporary Claude configuration was removed.'
  );
}

const STOP_SIGNALS = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 } as const;

/** The watch `endDemoOnInterruption` keeps over a running demo. */
interface InterruptionWatch {
  /** Stops watching (the demo ended by itself). */
  readonly release: () => void;
  /**
   * Once a signal or a closed output began ending the demo: a promise that never settles (the
   * process exits when `stop` is done). Undefined until then.
   */
  readonly ending: () => Promise<never> | undefined;
}

/**
 * Until `release` is called, a signal or a closed standard output ends the demo: `stop` runs (it
 * ends the agent binaries first, then cleans up, then says so in one line), and the process exits
 * with the signal's code (EPIPE: 1). Node would otherwise die on SIGINT without running any
 * `finally`, and crash with a stack trace on EPIPE, leaving the configuration directory behind
 * either way. A second signal while `stop` is still waiting exits at once.
 *
 * Ending the agent binaries makes the running step fail; the demo waits on `ending` instead of
 * reporting that failure, so Ctrl-C prints one line, not "did not finish", the step's stop and the
 * interruption on top of each other.
 */
function endDemoOnInterruption(stop: (why: string) => Promise<void>): InterruptionWatch {
  let ending: Promise<never> | undefined;
  const end = (why: string, code: number) => {
    if (ending !== undefined) process.exit(code);
    ending = stop(why).finally(() => process.exit(code)) as Promise<never>;
  };
  const handlers = Object.entries(STOP_SIGNALS).map(([signal, code]) => {
    const handler = () => end(signal === 'SIGINT' ? 'interrupted (Ctrl-C)' : `stopped by ${signal}`, code);
    process.on(signal, handler);
    return () => process.off(signal, handler);
  });
  const onOutputError = (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    // Every later write fails the same way; only the first one means anything.
    if (ending === undefined) end('its output was closed', 1);
  };
  process.stdout.on('error', onOutputError);
  return {
    release: () => {
      for (const remove of handlers) remove();
      process.stdout.off('error', onOutputError);
    },
    ending: () => ending,
  };
}

export async function runDemo(
  dir: string | undefined,
  globalFlags: GlobalOptions,
  policy: DemoPolicy = defaultDemoPolicy,
  sandboxed = true,
): Promise<void> {
  const paint = colorsFor();
  // The demo's worker writes one file and runs it: it needs no network, so it gets none.
  const wanted: SandboxPolicy = { enabled: sandboxed, workerNetwork: { kind: 'none' } };
  const sandbox = await ensureSandbox(wanted, {
    interactive: Boolean(process.stdin.isTTY && process.stdout.isTTY),
    say: (line) => writeOut(`${paint.yellow(line)}\n`),
  });
  const { workspace, continuing } = demoWorkspace(dir);
  const global = { ...globalFlags, workspace, runDir: join(workspace, 'runs') };
  const color = stdoutColor();
  const terminal = new Terminal({ input: process.stdin, output: process.stdout });
  const configDir = mkdtempSync(join(tmpdir(), 'flower-demo-claude-'));
  let resources: DemoResources = { configDir, model: { close: async () => undefined } };
  let finished = false;
  const watch = endDemoOnInterruption(async (why) => {
    terminal.close();
    // The agent binary writes into the configuration while it shuts down: end it before removing that.
    await endChildren();
    await cleanUpDemo(resources);
    writeErr(`${partialWorkspaceNote(workspace, why)}\n`);
  });
  try {
    const model = await startMockModel(demoScript(workspace));
    resources = { configDir, model };
    model.setDelay(policy.replyDelayMs);
    terminal.print([
      paint.bold('flower demo'),
      paint.dim(
        'A scripted model on 127.0.0.1 plays every role; the real Claude Code binary runs the agents.',
      ),
      paint.dim('No credentials, no network.'),
      ...(sandbox.enabled
        ? [
            paint.dim(
              "The worker's commands run in the sandbox: no network, writes only here and in temporary files.",
            ),
          ]
        : []),
      `workspace: ${workspace}`,
      ...(continuing
        ? [
            paint.yellow(
              'The demo in this directory was stopped before it finished: continuing it where it stopped.',
            ),
          ]
        : []),
      '',
      `> ${DEMO_REQUEST}`,
    ]);
    const workflow = starterFlow({
      workspace,
      runDir: global.runDir,
      request: DEMO_REQUEST,
      timeoutSeconds: 120,
    });
    const channel = workflow.channel;
    const outcome = await drive({
      workflow,
      global,
      terminal,
      trim: true,
      sandbox,
      handoff: true,
      env: mockModelEnv(model, { configDir, maxRetries: policy.maxRetries }),
      interactive: false,
      color,
      simulatedCost: true,
      observe: (event) => {
        const payload = event.payload as { kind?: unknown; state?: unknown; id?: unknown };
        if (event.kind !== 'ask' || payload.kind !== 'question' || payload.state !== 'asked') return;
        setTimeout(() => {
          terminal.print([paint.dim(`  (the demo answers for you) > ${DEMO_ANSWER}`)]);
          channel?.answer(String(payload.id), DEMO_ANSWER);
        }, policy.answerDelayMs);
      },
    });
    const paths = starterPaths({ workspace, runDir: global.runDir });
    const verdict = outcome.context.verdict?.state ?? 'no verdict';
    // The bequest's files are listed only when written (--no-bequest, or a write that failed).
    const bequest = BEQUEST_FILES.filter((name) => existsSync(join(workspace, name)));
    terminal.print([
      '',
      paint.green(`The judge's verdict: ${verdict}. Everything flower left behind:`),
      `  ${global.runDir}/`,
      '      sessions.db     every transcript (SQLite), manifest.json cost and turns per step, lineage.json',
      `  ${paths.workbench.root}/`,
      '      notes/          brief.md, goal.md, qa-log.md (the question and your answer)',
      `  ${join(workspace, DEMO_PROGRAM)}   the program the worker wrote and ran`,
      ...(bequest.length > 0
        ? [
            `  ${bequest.map((name) => join(workspace, name)).join(', ')}`,
            "      the bequest: what the next tool (Claude Code, Codex, …) should know about this task, in flower's block",
          ]
        : []),
      // Waking an achieved task does nothing: point at what shows the run instead (issue 21).
      paint.dim(
        `See what each step did and cost: flower report -w ${workspace}; a step's messages: flower log work -w ${workspace}`,
      ),
    ]);
    if (model.unmatched.length > 0) {
      terminal.print([
        paint.yellow(
          `! the scripted model was asked ${model.unmatched.length} thing(s) it had no script for`,
        ),
      ]);
    }
    finished = true;
  } catch (error) {
    // Interrupted: the step failed because its binary was ended; the interruption speaks instead.
    const ending = watch.ending();
    if (ending !== undefined) await ending;
    throw error;
  } finally {
    watch.release();
    terminal.close();
    await cleanUpDemo(resources);
    if (!finished) writeErr(`${partialWorkspaceNote(workspace, 'did not finish')}\n`);
  }
}
