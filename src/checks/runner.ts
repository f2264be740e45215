/**
 * Runs the checks of a goal on the host: flower itself, not a model, executes each command in the
 * workspace and reads its exit code.
 *
 * Invariants:
 * - Each command runs in a process group of its own (`detached`), so the whole group can be ended:
 *   at its time limit (SIGTERM, then SIGKILL after a grace period), when the command's shell exits
 *   (a server a check started in the background must not outlive the check and hold its port in the
 *   next round), and when flower itself exits or is told to stop.
 * - Output goes straight from the child to a file (the file descriptor is the child's stdout and
 *   stderr), never through this process's memory: a check that prints 50 MB costs a 50 MB file, and
 *   only the tail of that file (`tailBytes`, whole lines) is ever read back.
 * - The environment is `checkEnvironment`: no credentials, no endpoint, no flower settings.
 * - Nothing a check does is an exception here: a command that cannot be read, cannot start, has a
 *   syntax error, fails or hangs is a failing `CheckRun` with the reason in `problem` or the output.
 * - Checks run one after another, in checklist order: they may share ports, files and builds.
 */
import { spawn } from 'node:child_process';
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  openSync,
  readSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import type { EnvMap } from '../config/paths.js';
import { onTerminationSignal } from '../runtime/signals.js';
import { checkEnvironment } from './environment.js';
import { type CheckSpec, type ItemCheck, readCheck } from './syntax.js';

export interface CheckPolicy {
  /** A check without its own limit gets this long: a whole test suite fits, a hang does not last the night. */
  readonly timeoutMs: number;
  /** How much of the output's end is read back for the tail. */
  readonly tailBytes: number;
  /** At most this many lines of that end make the tail (a prompt needs the verdict, not the log). */
  readonly tailLines: number;
  /** Between SIGTERM and SIGKILL at expiry: long enough for a test runner to clean up, short enough to wait for. */
  readonly killGraceMs: number;
}

export const defaultCheckPolicy: CheckPolicy = {
  timeoutMs: 10 * 60_000,
  tailBytes: 4096,
  tailLines: 40,
  killGraceMs: 2000,
};

export interface CheckRun {
  /** The checklist item as written. */
  readonly item: string;
  /** The item without its annotation. */
  readonly description: string;
  /** The command (empty when the annotation could not be read). */
  readonly command: string;
  /** The shell's exit code; null when it was ended by a signal or never started. */
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Ended at its time limit. */
  readonly timedOut: boolean;
  readonly passed: boolean;
  readonly durationS: number;
  /** The whole output (stdout and stderr as they came). */
  readonly outputPath: string;
  /** Size of the whole output in bytes. */
  readonly outputBytes: number;
  /** The last lines of the output, escape sequences removed. */
  readonly tail: string;
  /** Why the check could not run at all (an unreadable annotation, a start failure). */
  readonly problem?: string;
}

export interface RunCheckOptions {
  /** Where the command runs (the workspace). */
  readonly cwd: string;
  /** The file that receives its output. */
  readonly outputPath: string;
  /** The environment to start from; the credentials are removed from it. Default: this process's. */
  readonly env?: EnvMap;
  readonly policy?: Partial<CheckPolicy>;
}

/** `bash` where there is one (what people write checks for), else the POSIX shell. */
function shellPath(env: EnvMap): string {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, 'bash');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return '/bin/sh';
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  startError?: string;
}

/** Runs `command` in its own process group with both output streams on `fd`. */
function runInGroup(
  command: string,
  cwd: string,
  env: Record<string, string>,
  fd: number,
  timeoutMs: number,
  graceMs: number,
): Promise<Exit> {
  return new Promise((resolve) => {
    let timedOut = false;
    let settled = false;
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(shellPath(env), ['-c', command], { cwd, env, detached: true, stdio: ['ignore', fd, fd] });
    } catch (error) {
      resolve({ code: null, signal: null, timedOut, startError: (error as Error).message });
      return;
    }
    const endGroup = (signal: NodeJS.Signals) => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, signal);
      } catch {
        // The group is gone already.
      }
    };
    let killTimer: NodeJS.Timeout | undefined;
    const limitTimer = setTimeout(() => {
      timedOut = true;
      endGroup('SIGTERM');
      killTimer = setTimeout(() => endGroup('SIGKILL'), graceMs);
    }, timeoutMs);
    // flower going away must not leave a check running on its own.
    const endNow = () => endGroup('SIGKILL');
    process.on('exit', endNow);
    const stopRescue = onTerminationSignal(endNow);
    const finish = (exit: Omit<Exit, 'timedOut'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(limitTimer);
      clearTimeout(killTimer);
      // Whatever the shell left behind in its group (a background server) ends with it.
      endGroup('SIGKILL');
      process.off('exit', endNow);
      stopRescue();
      resolve({ ...exit, timedOut });
    };
    child.on('error', (error) => finish({ code: null, signal: null, startError: error.message }));
    child.on('exit', (code, signal) => finish({ code, signal }));
  });
}

// CSI and OSC sequences and the other control characters a terminal would act on; tabs and newlines stay.
const ESCAPES =
  /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f]/g;

/** The end of a file: at most `bytes` bytes, cut to whole lines, at most `lines` of them. */
export function readTail(path: string, bytes: number, lines: number): { tail: string; size: number } {
  let size = 0;
  try {
    size = statSync(path).size;
  } catch {
    return { tail: '', size };
  }
  const start = Math.max(0, size - bytes);
  const buffer = Buffer.alloc(size - start);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, buffer, 0, buffer.length, start);
  } finally {
    closeSync(fd);
  }
  let text = buffer.toString('utf8').replace(/\r\n?/g, '\n');
  // Reading from the middle of the file: the first line is a fragment (maybe half a character).
  if (start > 0) text = text.slice(text.indexOf('\n') + 1);
  const kept = text.replace(ESCAPES, '').replace(/\n+$/, '').split('\n').slice(-lines);
  return { tail: kept.join('\n'), size };
}

/** Runs one check and reports how it went; never throws. */
export async function runCheck(item: string, check: CheckSpec, options: RunCheckOptions): Promise<CheckRun> {
  const policy = { ...defaultCheckPolicy, ...options.policy };
  const timeoutMs = check.timeoutMs ?? policy.timeoutMs;
  const base = {
    item,
    description: check.description,
    command: check.command,
    outputPath: options.outputPath,
  };
  if (!existsSync(options.cwd)) {
    return failedToStart(base, `the workspace ${options.cwd} does not exist`);
  }
  mkdirSync(dirname(options.outputPath), { recursive: true });
  const fd = openSync(options.outputPath, 'w');
  const started = performance.now();
  let exit: Exit;
  try {
    exit = await runInGroup(
      check.command,
      options.cwd,
      checkEnvironment(options.env ?? process.env),
      fd,
      timeoutMs,
      policy.killGraceMs,
    );
  } finally {
    closeSync(fd);
  }
  const durationS = Math.round((performance.now() - started) / 10) / 100;
  if (exit.startError !== undefined) return failedToStart(base, `it could not start: ${exit.startError}`);
  const { tail, size } = readTail(options.outputPath, policy.tailBytes, policy.tailLines);
  return {
    ...base,
    exitCode: exit.code,
    signal: exit.signal,
    timedOut: exit.timedOut,
    passed: exit.code === 0 && !exit.timedOut,
    durationS,
    outputBytes: size,
    tail,
  };
}

/** A check that never ran: the reason is its output, so the output path always leads somewhere. */
function failedToStart(
  base: Pick<CheckRun, 'item' | 'description' | 'command' | 'outputPath'>,
  problem: string,
): CheckRun {
  try {
    mkdirSync(dirname(base.outputPath), { recursive: true });
    writeFileSync(base.outputPath, `${problem}\n`);
  } catch {
    // The reason still travels in `problem`.
  }
  return {
    ...base,
    exitCode: null,
    signal: null,
    timedOut: false,
    passed: false,
    durationS: 0,
    outputBytes: Buffer.byteLength(`${problem}\n`),
    tail: problem,
    problem,
  };
}

export interface RunChecksOptions {
  readonly cwd: string;
  /** The directory of this round's outputs (`.flower/artifacts/checks/<round>/`). */
  readonly dir: string;
  readonly env?: EnvMap;
  readonly policy?: Partial<CheckPolicy>;
  /** Told each result as soon as it is known (the terminal shows one line per check). */
  readonly onResult?: (run: CheckRun) => void;
}

/** The checklist items that carry a check (readable or not), with their place in the list. */
export function checkedItems(
  items: readonly string[],
): Array<{ index: number; item: string; check: ItemCheck }> {
  return items
    .map((item, index) => ({ index, item, check: readCheck(item) }))
    .filter((entry) => entry.check.kind !== 'none');
}

/**
 * Runs every check among `items` in order; an annotation that cannot be read counts as a failing
 * check. Each output is `<dir>/item-<n>.log`, n being the item's place in the checklist.
 */
export async function runChecks(items: readonly string[], options: RunChecksOptions): Promise<CheckRun[]> {
  const runs: CheckRun[] = [];
  for (const { index, item, check } of checkedItems(items)) {
    const outputPath = join(options.dir, `item-${index + 1}.log`);
    const run =
      check.kind === 'check'
        ? await runCheck(item, check, { ...options, outputPath })
        : check.kind === 'malformed'
          ? failedToStart(
              { item, description: check.description, command: '', outputPath },
              `the check on this item cannot be read: ${check.problem}. Write it as check: \`command\` at the end of the item in goal.md.`,
            )
          : undefined;
    if (run === undefined) continue;
    runs.push(run);
    options.onResult?.(run);
  }
  return runs;
}
