/**
 * The starter flow (brief and goal frozen: straight to work) run as a real `flower` process would
 * run it — the built package (`dist/`, made by `npm run build`), its own process group, unattended
 * — so a test can end it with SIGKILL at a chosen request and start it again in the same directory.
 * Every process of one test shares one Claude Code config directory, as runs on one machine do.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { type MockModel, type MockScript, mockModelEnv, startMockModel } from '../../src/testing/index.js';
import { processGone } from '../support/processes.js';
import { freeze } from './scenario-harness.js';

const repoRoot = join(import.meta.dirname, '..', '..');
const dist = (path: string) => pathToFileURL(join(repoRoot, 'dist', path)).href;

/** Prints `warning <line>` for each of the runtime's warnings and `done <json>` at the end. */
const DRIVER = `
const { Runtime } = await import(${JSON.stringify(dist('runtime/runtime.js'))});
const { starterFlow } = await import(${JSON.stringify(dist('index.js'))});
const workspace = process.argv[1];
const flow = starterFlow({ workspace, timeoutSeconds: 0, rounds: 5 });
const runtime = new Runtime({
  workspace,
  resilience: false,
  notesDir: flow.workbench.notes,
  onWarning: (line) => console.log('warning ' + line),
});
const ctx = await flow.run(runtime, {});
runtime.close();
console.log('done ' + JSON.stringify({ failedAt: ctx.failedAt ?? null }));
`;

export interface StarterRun {
  child: ChildProcess;
  /** Everything it printed, once it has exited. */
  exited: Promise<string>;
}

export interface StarterHarness {
  root: string;
  workspace: string;
  runDir: string;
  mock: MockModel;
  env: Record<string, string>;
  /** Starts the flow in its own process group. */
  start(): StarterRun;
  /** Starts the flow and SIGKILLs its process group once `ready` resolves; resolves with its output. */
  killWhen(ready: () => Promise<unknown>): Promise<string>;
  cleanup(): Promise<void>;
}

/** Resolves once an entry of the session store contains `text` (the SDK mirrors in the background). */
export async function storedText(runDir: string, text: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const db = new Database(join(runDir, 'sessions.db'), { readonly: true, fileMustExist: true });
      try {
        if (db.prepare('SELECT 1 FROM entries WHERE instr(payload, ?) > 0 LIMIT 1').get(text)) return;
      } finally {
        db.close();
      }
    } catch {
      // Not created yet.
    }
    if (Date.now() > deadline) throw new Error(`"${text}" never reached ${runDir}/sessions.db`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Ends the process group (flower and its Claude Code child) with SIGKILL, as a crash would. */
export async function killGroup(child: ChildProcess): Promise<void> {
  const group = child.pid as number;
  process.kill(-group, 'SIGKILL');
  for (let poll = 0; poll < 100; poll += 1) {
    try {
      process.kill(-group, 0);
    } catch {
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await processGone(group);
}

export async function startStarterHarness(
  script: (workspace: string) => MockScript,
): Promise<StarterHarness> {
  const root = mkdtempSync(join(tmpdir(), 'flower-starter-'));
  const workspace = join(root, 'ws');
  mkdirSync(workspace);
  freeze(workspace);
  const mock = await startMockModel(script(workspace));
  const env = mockModelEnv(mock, {
    configDir: join(root, 'claude-config'),
    extra: { FLOWER_NO_UPDATE: '1', XDG_CONFIG_HOME: join(root, 'xdg'), HOME: root },
  });
  const children = new Set<ChildProcess>();
  const start = (): StarterRun => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', DRIVER, workspace], {
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    return { child, exited: new Promise((resolve) => child.on('close', () => resolve(output))) };
  };
  return {
    root,
    workspace,
    runDir: join(workspace, 'runs'),
    mock,
    env,
    start,
    async killWhen(ready) {
      const run = start();
      const early = await Promise.race([ready().then(() => undefined), run.exited]);
      if (early !== undefined) throw new Error(`the run ended before the kill:\n${early}`);
      await killGroup(run.child);
      return run.exited;
    },
    async cleanup() {
      for (const child of children) {
        try {
          process.kill(-(child.pid as number), 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
      await mock.close();
      rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    },
  };
}
