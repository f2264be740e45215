/**
 * Runs one shell command inside flower's bubblewrap wall and keeps what it printed: for the
 * coordinator's glances, which flower runs itself (agents/guards/delegate.ts) so that they get the
 * read-only wall and not the workers' sandbox their session shares.
 *
 * Invariants:
 * - stdout and stderr go into one file, in the order the command wrote them (the shell joins them
 *   before the command runs, as the Bash tool shows them), capped at `maxBytes` as it streams: past
 *   the cap nothing more is written, the command is ended, and the file ends saying it was cut.
 * - The command ends at `timeoutMs` (SIGTERM to the wall, then SIGKILL), and the outcome says so.
 * - The environment is the caller's minus every secret variable (places.ts).
 * - Never throws for the command's sake: a bubblewrap that cannot be started (not on PATH, no file
 *   descriptor left) is an outcome with exit code 126 and the reason in the file; a wall bubblewrap
 *   refuses to build ends as bubblewrap ends it (exit code 1) with its own words (its stderr) in the
 *   file.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync, writeSync } from 'node:fs';
import type { EnvMap } from '../../config/paths.js';
import { type WallPlan, walledCommand } from './bubblewrap.js';
import { isSecretVariable } from './places.js';

export interface WalledRunOptions {
  /** Where the output goes (created, 0600). */
  outputPath: string;
  timeoutMs: number;
  maxBytes: number;
  env: EnvMap;
  /** The shell that runs the command (default `bash`, as the Bash tool's). */
  shell?: string;
}

export interface WalledRunOutcome {
  /** The shell's exit code; 124 after the time limit, 126 when bubblewrap could not be started. */
  exitCode: number;
  timedOut: boolean;
  /** The output reached `maxBytes` and the command was ended. */
  cut: boolean;
}

/** The environment a walled command gets. */
export function walledEnvironment(env: EnvMap): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(env))
    if (value !== undefined && !isSecretVariable(name)) result[name] = value;
  return result;
}

const KILL_GRACE_MS = 1000;

export function runWalled(
  plan: WallPlan,
  command: string,
  options: WalledRunOptions,
): Promise<WalledRunOutcome> {
  const fd = openSync(options.outputPath, 'w', 0o600);
  const { file, args } = walledCommand(plan, [options.shell ?? 'bash', '-c', `exec 2>&1\n${command}`]);
  return new Promise((resolve) => {
    let timedOut = false;
    let cut = false;
    let settled = false;
    const child = spawn(file, args, {
      env: walledEnvironment(options.env),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const end = () => {
      try {
        // Stryker disable next-line StringLiteral: process.kill takes an empty signal name for SIGTERM, the same signal
        process.kill(-(child.pid as number), 'SIGTERM');
      } catch /* Stryker disable next-line BlockStatement: a group already gone makes the SIGKILL a second later fail the same way (caught); the return only spares a signal to a number the system may have reused */ {
        return; // Gone already.
      }
      setTimeout(() => {
        try {
          process.kill(-(child.pid as number), 'SIGKILL');
        } catch {
          // Gone.
        }
      }, KILL_GRACE_MS).unref();
    };
    const timer = setTimeout(() => {
      timedOut = true;
      end();
    }, options.timeoutMs);
    let written = 0;
    const keep = (chunk: Buffer) => {
      if (cut || settled) return;
      const room = options.maxBytes - written;
      writeSync(fd, chunk, 0, Math.min(room, chunk.length));
      written += Math.min(room, chunk.length);
      if (chunk.length >= room) {
        cut = true;
        end();
      }
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    const finish = (exitCode: number, note?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (note) writeSync(fd, note);
      if (cut) writeSync(fd, `\n[output cut at ${options.maxBytes} bytes; the command was ended]\n`);
      if (timedOut)
        writeSync(fd, `\n[the command was ended after ${Math.round(options.timeoutMs / 1000)} s]\n`);
      closeSync(fd);
      resolve({ exitCode: timedOut ? 124 : exitCode, timedOut, cut });
    };
    child.on('error', (error) => finish(126, `The sandbox could not start (${error.message}).\n`));
    child.on('close', (code, signal) => finish(code ?? (signal ? 128 + 15 : 1)));
  });
}
