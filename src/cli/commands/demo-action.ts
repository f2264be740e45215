/**
 * What `flower demo [dir]` does (its argument lives in `demo.ts`): the whole starter flow, offline,
 * in about a minute. A scripted model on 127.0.0.1 (the package's mock Messages API) plays every
 * role; the real Claude Code binary runs the agents, hooks and tools exactly as in a real run.
 *
 * Invariants:
 * - No credentials and no network: the agents' environment is built from scratch for the mock model
 *   (host ANTHROPIC_* and CLAUDE_* settings are dropped), with a throw-away CLAUDE_CONFIG_DIR.
 * - It works in a fresh directory: a temporary one, or the one given, which must be empty or new,
 *   so the demo never wakes up an earlier task or writes into someone's project.
 * - The demo answers its own question (by number, as a person would), so it needs no keyboard.
 * - It ends by saying where everything flower left behind is, so it can be looked at.
 * - Imported only when the command runs: it pulls in the mock model, the SDK and the workflow layer.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createColors } from 'picocolors';
import { mockModelEnv } from '../../testing/env.js';
import { startMockModel } from '../../testing/server.js';
import { starterFlow, starterPaths } from '../../workflow/starter.js';
import type { GlobalOptions } from '../command-line/global-options.js';
import { drive } from '../interaction/drive.js';
import { Terminal } from '../terminal/terminal.js';
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

/** The demo's workspace: `dir` (created; must be empty) or a new temporary directory. */
function demoWorkspace(dir: string | undefined): string {
  if (dir === undefined) return mkdtempSync(join(tmpdir(), 'flower-demo-'));
  const workspace = resolve(dir);
  mkdirSync(workspace, { recursive: true });
  if (readdirSync(workspace).length > 0) {
    throw new Error(
      `${workspace} is not empty; the demo needs a fresh directory. Give a new path, or none for a temporary one.`,
    );
  }
  return workspace;
}

export async function runDemo(
  dir: string | undefined,
  globalFlags: GlobalOptions,
  policy: DemoPolicy = defaultDemoPolicy,
): Promise<void> {
  const workspace = demoWorkspace(dir);
  const global = { ...globalFlags, workspace, runDir: join(workspace, 'runs') };
  const color = Boolean(process.stdout.isTTY);
  const paint = createColors(color);
  const terminal = new Terminal({ input: process.stdin, output: process.stdout });
  const configDir = mkdtempSync(join(tmpdir(), 'flower-demo-claude-'));
  const model = await startMockModel(demoScript(workspace));
  model.setDelay(policy.replyDelayMs);
  try {
    terminal.print([
      paint.bold('flower demo'),
      paint.dim(
        'A scripted model on 127.0.0.1 plays every role; the real Claude Code binary runs the agents.',
      ),
      paint.dim('No credentials, no network.'),
      `workspace: ${workspace}`,
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
      handoff: true,
      env: mockModelEnv(model, { configDir, maxRetries: policy.maxRetries }),
      interactive: false,
      color,
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
    terminal.print([
      '',
      paint.green(`The judge's verdict: ${verdict}. Everything flower left behind:`),
      `  ${global.runDir}/`,
      '      sessions.db     every transcript (SQLite), manifest.json cost and turns per step, lineage.json',
      `  ${paths.workbench.root}/`,
      '      notes/          brief.md, goal.md, qa-log.md (the question and your answer)',
      `  ${join(workspace, DEMO_PROGRAM)}   the program the worker wrote and ran`,
      paint.dim(`Run \`flower\` in ${workspace} to wake the same task up again.`),
    ]);
    if (model.unmatched.length > 0) {
      terminal.print([
        paint.yellow(
          `! the scripted model was asked ${model.unmatched.length} thing(s) it had no script for`,
        ),
      ]);
    }
  } finally {
    terminal.close();
    await model.close();
    rmSync(configDir, { recursive: true, force: true });
  }
}
