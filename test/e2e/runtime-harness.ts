/**
 * Shared setup for the runtime's end-to-end tests: a mock model, a fresh workspace and config
 * directory, the child environment pointing at the mock, and resilience timings shrunk so an
 * outage test takes seconds, not minutes. Everything else is the real SDK and binary.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FlowerEvent } from '../../src/runtime/events.js';
import type { ResiliencePolicy } from '../../src/runtime/resilience.js';
import { Runtime, type RuntimeOptions } from '../../src/runtime/runtime.js';
import {
  type MockModel,
  type MockScript,
  type MockStep,
  mockModelEnv,
  startMockModel,
} from '../../src/testing/index.js';

export const repoRoot = join(import.meta.dirname, '..', '..');
export const distRoot = join(repoRoot, 'dist');

/** Outage handling with every wait cut to milliseconds; the logic is unchanged. */
export const fastResilience: Partial<ResiliencePolicy> = {
  baseDelayMs: 20,
  maxDelayMs: 100,
  probeTimeoutMs: 500,
  probeIntervalMs: 100,
  maxOfflineWaitMs: 20_000,
};

export interface Harness {
  model: MockModel;
  root: string;
  workspace: string;
  /** What the runtime and the agent process see. */
  env: Record<string, string>;
  runtime(options?: Partial<RuntimeOptions>): Runtime;
  cleanup(): Promise<void>;
}

export async function startHarness(
  script: MockScript | MockStep[],
  extraEnv: Record<string, string> = {},
): Promise<Harness> {
  const model = await startMockModel(script);
  const root = mkdtempSync(join(tmpdir(), 'flower-rt-'));
  const workspace = join(root, 'ws');
  const env = mockModelEnv(model, {
    configDir: mkdtempSync(join(root, 'claude-config-')),
    maxRetries: 0,
    extra: { XDG_CONFIG_HOME: join(root, 'xdg'), FLOWER_NO_UPDATE: '1', ...extraEnv },
  });
  const runtimes: Runtime[] = [];
  return {
    model,
    root,
    workspace,
    env,
    runtime(options = {}) {
      const runtime = new Runtime({ workspace, env, resilience: fastResilience, ...options });
      runtimes.push(runtime);
      return runtime;
    },
    async cleanup() {
      for (const runtime of runtimes) runtime.close();
      await model.close();
      // An agent process whose parent was killed may still be finishing writes in its config
      // directory; a leftover temp directory is not worth failing a test over.
      try {
        rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
      } catch {}
    },
  };
}

/** Collects events, for asserting on what a run showed. */
export function eventLog(): {
  events: FlowerEvent[];
  sink: (event: FlowerEvent) => void;
  texts(kind: FlowerEvent['kind']): string[];
} {
  const events: FlowerEvent[] = [];
  return {
    events,
    sink: (event) => events.push(event),
    texts: (kind) => events.filter((event) => event.kind === kind).map((event) => event.text),
  };
}

export interface ChildRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `node <args>` with `env`; resolves when it exits. `onSpawn` gets the child (to signal it). */
export function runNode(
  args: string[],
  env: Record<string, string>,
  options: {
    cwd?: string;
    /** Own process group, so the child and the agent process it starts can be killed together. */
    detached?: boolean;
    onSpawn?: (child: ChildProcess) => void;
  } = {},
): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      env,
      cwd: options.cwd ?? repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: options.detached ?? false,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    options.onSpawn?.(child);
  });
}

/**
 * A tiny program that runs one step through the built runtime (`dist/`), the way an application
 * embedding flower would: `node -e <driver> <workspace> <step> <prompt> [<options JSON>]`.
 * Continuity on; the JSON is merged into the `Runtime` options; warnings are printed as
 * `warning <line>`. The agent may use Read, Glob and Grep, or the comma-separated tools in
 * `DRIVER_TOOLS`.
 */
export const stepDriver = `
const [workspace, step, prompt, extra] = process.argv.slice(1);
const { Runtime } = await import(${JSON.stringify(join(distRoot, 'runtime', 'runtime.js'))});
const runtime = new Runtime({
  workspace,
  resilience: false,
  onWarning: (line) => console.log('warning ' + line),
  ...(extra ? JSON.parse(extra) : {}),
});
const result = await runtime.run(
  { name: step, instructions: '', allowedTools: (process.env.DRIVER_TOOLS ?? 'Read,Glob,Grep').split(','), permissionMode: 'default' },
  prompt,
  { continuous: true, onSession: (id) => console.log('session ' + id) },
);
runtime.close();
console.log('result ' + JSON.stringify(result));
`;

export interface DriverOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  sessions: string[];
  warnings: string[];
  result: Record<string, unknown> | undefined;
  stderr: string;
}

/** Runs `stepDriver` in its own process group (so a test can kill it with its agent process). */
export async function driveStep(
  h: Harness,
  step: string,
  prompt: string,
  options: { runtime?: Record<string, unknown>; onSpawn?: (child: ChildProcess) => void } = {},
): Promise<DriverOutcome> {
  const args = ['--input-type=module', '-e', stepDriver, h.workspace, step, prompt];
  if (options.runtime !== undefined) args.push(JSON.stringify(options.runtime));
  const run = await runNode(args, h.env, {
    ...(options.onSpawn ? { onSpawn: options.onSpawn } : {}),
    detached: true,
  });
  const lines = run.stdout.split('\n');
  const tagged = (tag: string) =>
    lines.filter((line) => line.startsWith(`${tag} `)).map((line) => line.slice(tag.length + 1));
  const [resultLine] = tagged('result');
  return {
    code: run.code,
    signal: run.signal,
    sessions: tagged('session'),
    warnings: tagged('warning'),
    result: resultLine ? (JSON.parse(resultLine) as Record<string, unknown>) : undefined,
    stderr: run.stderr,
  };
}
