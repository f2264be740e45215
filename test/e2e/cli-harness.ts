/**
 * Running the built `flower` binary from the CLI end-to-end tests: a child environment that sees
 * no host credentials or settings, and an async spawn (the mock model lives in the test process,
 * so the test must keep its event loop free while the child runs).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mockModelEnv } from '../../src/testing/env.js';

export const repoRoot = join(import.meta.dirname, '..', '..');
export const flowerBin = join(repoRoot, 'dist', 'cli', 'bin.js');

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `flower-${prefix}-`));
}

/**
 * The child's environment: no ANTHROPIC_/CLAUDE_ variables from the host, a fresh HOME (so no
 * user .env or Claude Code settings are found), no update notice, no probe; plus `extra`.
 */
export function isolatedEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || name.startsWith('ANTHROPIC_') || name.startsWith('CLAUDE_')) continue;
    env[name] = value;
  }
  const home = tempDir('home');
  return {
    ...env,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    FLOWER_NO_UPDATE: '1',
    FLOWER_NO_PROBE: '1',
    ...extra,
  };
}

/** isolatedEnv pointed at a mock model, with a fresh CLAUDE_CONFIG_DIR and few binary retries. */
export function mockedEnv(
  model: { url: string },
  extra: Record<string, string> = {},
): Record<string, string> {
  const base = isolatedEnv();
  return mockModelEnv(model, { configDir: tempDir('claude'), maxRetries: 1, base, extra });
}

export interface FlowerRun {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface FlowerRunOptions {
  cwd?: string;
  env?: Record<string, string>;
  /** Written to stdin, which is then closed; default: stdin closed at once. */
  input?: string;
  timeoutMs?: number;
}

/** Run `flower <args>` to completion without blocking the test's event loop. */
export function runFlower(args: string[], options: FlowerRunOptions = {}): Promise<FlowerRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [flowerBin, ...args], {
      cwd: options.cwd ?? tempDir('cwd'),
      env: options.env ?? isolatedEnv(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(`flower ${args.join(' ')} did not finish in time.\nstdout:\n${stdout}\nstderr:\n${stderr}`),
      );
    }, options.timeoutMs ?? 110_000);
    child.on('error', reject);
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}
