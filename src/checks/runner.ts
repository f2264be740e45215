/**
 * Runs the checks of a goal: flower itself, not a model, executes each command in the workspace and
 * reads its exit code — inside its own bubblewrap wall with the worker's policy, unless the user
 * said `--no-sandbox` (then on the host, as the user).
 *
 * Why walled: a check is the user's command, but it runs code a worker just wrote (a test that
 * reads `~/.config/flower/.env` and prints it, issue 19 observation 5). Inside the wall it has the
 * worker's reach and no more.
 *
 * Invariants:
 * - Walled (`wall` given and enabled): the command runs under `wallPlan('worker', …)`: it writes
 *   the workspace (and the extra directories), the package caches and a scratch directory of its
 *   own, and nothing else; every credential store (the run directory `runs/` among them) is
 *   unreadable; the network is the host's only for a worker reach of `any` (bubblewrap cannot filter
 *   by domain). The scratch directory is private (0700), made per check, is the check's TMPDIR (the
 *   wall keeps /tmp read-only) and is removed when the check ends.
 * - Each command runs in a process group of its own (`detached`), so the whole group can be ended:
 *   at its time limit (SIGTERM, then SIGKILL after a grace period), when the command's shell exits
 *   (a server a check started in the background must not outlive the check and hold its port in the
 *   next round), and when flower itself exits or is told to stop. Walled, the group is bubblewrap's:
 *   bubblewrap ends at the first signal and its PID namespace goes with it (the kernel kills every
 *   process in it, `setsid` or not), so a walled check ends at once at its limit, with no grace for
 *   the command; `--die-with-parent` ends it too when flower dies without running its handlers.
 * - Output is one pipe for stdout and stderr (the shell joins them before it runs the command, so
 *   they keep the order they came in) that streams into the check's log (capped-log.ts): private
 *   (0600 in a 0700 round directory, whatever the umask; a round directory an older run left
 *   readable is tightened) and capped while the check runs, its head and tail kept and the cut said
 *   in the middle, and written through the output sink (secrets masked, controls inert). A check
 *   that prints 100 MB costs a 128 KiB log and never 100 MB of memory; only the log's tail
 *   (`tailBytes`, whole lines) goes to the judge. Walled, the second pipe carries only bubblewrap's
 *   own words (the command's stderr is joined before it runs).
 * - The tail the judge and the worker read is masked too, but not made into control pictures:
 *   escape sequences are removed from it (see `tailOf`).
 * - The environment is `checkEnvironment`: no credentials, no endpoint, no flower settings; walled,
 *   also no variable whose name says it holds a secret (as the workers' commands), and TMPDIR set.
 * - Nothing a check does is an exception here: a command that cannot be read, cannot start (a wall
 *   that cannot be built: bubblewrap missing or refused its namespaces), has a syntax error, fails or
 *   hangs is a failing `CheckRun` with the reason in `problem` or the output.
 * - Checks run one after another, in checklist order: they may share ports, files and builds.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { EnvMap } from '../config/paths.js';
import { shown } from '../output/sink.js';
import { walledCommand, wallPlan } from '../runtime/sandbox/bubblewrap.js';
import { isSecretVariable, type SandboxPlaces } from '../runtime/sandbox/places.js';
import type { SandboxPolicy } from '../runtime/sandbox/policy.js';
import { onTerminationSignal } from '../runtime/signals.js';
import {
  CappedLog,
  type CappedLogSummary,
  type CheckLogPolicy,
  defaultCheckLogPolicy,
  privateDirectory,
  writePrivateFile,
} from './capped-log.js';
import { checkEnvironment } from './environment.js';
import { type CheckSpec, type ItemCheck, readCheck } from './syntax.js';

export interface CheckPolicy {
  /** A check without its own limit gets this long: a whole test suite fits, a hang does not last the night. */
  readonly timeoutMs: number;
  /** How much of the log's end makes the tail. */
  readonly tailBytes: number;
  /** At most this many lines of that end make the tail (a prompt needs the verdict, not the log). */
  readonly tailLines: number;
  /** Between SIGTERM and SIGKILL at expiry: long enough for a test runner to clean up, short enough to wait for. */
  readonly killGraceMs: number;
  /** What each check's log keeps of its output (head and tail; the middle is cut with a notice). */
  readonly log: CheckLogPolicy;
}

/** A policy with any fields left out, the log's too. */
export type CheckPolicyOverrides = Partial<Omit<CheckPolicy, 'log'>> & {
  readonly log?: Partial<CheckLogPolicy>;
};

export const defaultCheckPolicy: CheckPolicy = {
  timeoutMs: 10 * 60_000,
  tailBytes: 4096,
  tailLines: 40,
  killGraceMs: 2000,
  log: defaultCheckLogPolicy,
};

/** The default policy with `overrides` applied. */
export function checkPolicy(overrides: CheckPolicyOverrides = {}): CheckPolicy {
  return { ...defaultCheckPolicy, ...overrides, log: { ...defaultCheckPolicy.log, ...overrides.log } };
}

/**
 * After the shell exits (and its group is killed), how long its output may take to drain: a process
 * that left the group (`setsid`) can hold the pipe open for ever, and the check must still end.
 */
const DRAIN_MS = 1000;

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
  /** The check's log: its output (stdout and stderr as they came), the middle cut when it was long. */
  readonly outputPath: string;
  /** How many bytes the check printed in all (the log may hold less). */
  readonly outputBytes: number;
  /** Bytes cut from the middle of the log (0 when it holds the whole output). */
  readonly cutBytes: number;
  /** The last lines of the output, escape sequences removed and secrets masked (`tailOf`). */
  readonly tail: string;
  /** Why the check could not run at all (an unreadable annotation, a start failure). */
  readonly problem?: string;
}

/** The wall checks run in: the task's sandbox policy and the places it is drawn around. */
export interface CheckWall {
  readonly policy: SandboxPolicy;
  readonly places: SandboxPlaces;
}

export interface RunCheckOptions {
  /** Where the command runs (the workspace). */
  readonly cwd: string;
  /** The file that receives its output (created afresh, 0600; masked and inert). */
  readonly outputPath: string;
  /** The environment to start from; the credentials are removed from it. Default: this process's. */
  readonly env?: EnvMap;
  readonly policy?: CheckPolicyOverrides;
  /**
   * The wall to run in (the worker's policy). Undefined, or a policy that is not enabled, runs the
   * command on the host: only the user's `--no-sandbox` gives that.
   */
  readonly wall?: CheckWall;
}

/** `bash` where there is one (what people write checks for), else the POSIX shell. */
function shellPath(env: EnvMap): string {
  // Stryker disable next-line StringLiteral: with no PATH, a made-up directory holds no bash either
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
  /** bubblewrap's own complaint when it could not build the wall (the command never ran). */
  wallError?: string;
}

/** What to start: the shell itself, or bubblewrap with the shell inside. */
interface Launch {
  readonly file: string;
  readonly args: readonly string[];
  /** Started through bubblewrap: its stderr is read for its own complaints. */
  readonly walled: boolean;
}

/** How much of bubblewrap's stderr is kept: its complaint is one line. */
const WALL_STDERR_BYTES = 4096;

/** bubblewrap's complaint in what it printed, when it printed one ("bwrap: Creating new namespace failed: …"). */
function wallComplaint(stderr: string): string | undefined {
  return stderr
    .split('\n')
    .map((line) => line.trim())
    .find((line) => line.startsWith('bwrap:'));
}

/**
 * The shell's arguments: a first shell joins stderr to stdout, then replaces itself (same process,
 * same group) with the shell that runs the command as its `-c` text, exactly as written — no line
 * of flower's own before it, so its line numbers and `$0` are what the author expects.
 */
function shellArguments(shell: string, command: string): string[] {
  return ['-c', 'exec 2>&1; exec "$0" -c "$1"', shell, command];
}

/** Runs `launch` in its own process group with both of the command's output streams going into `log`. */
function runInGroup(
  launch: Launch,
  cwd: string,
  env: Record<string, string>,
  log: CappedLog,
  timeoutMs: number,
  graceMs: number,
): Promise<Exit> {
  return new Promise((resolve) => {
    let timedOut = false;
    let settled = false;
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(launch.file, launch.args, {
        cwd,
        env,
        detached: true,
        stdio: ['ignore', 'pipe', launch.walled ? 'pipe' : 'ignore'],
      });
    } catch (error) {
      resolve({ code: null, signal: null, timedOut, startError: (error as Error).message });
      return;
    }
    const endGroup = (signal: NodeJS.Signals) => {
      // Stryker disable next-line ConditionalExpression: process.kill(NaN) throws, and the catch below ignores it just the same
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
      // Stryker disable next-line StringLiteral: process.kill reads an empty signal name as SIGTERM
      endGroup('SIGTERM');
      killTimer = setTimeout(() => endGroup('SIGKILL'), graceMs);
    }, timeoutMs);
    // flower going away must not leave a check running on its own.
    const endNow = () => endGroup('SIGKILL');
    process.on('exit', endNow);
    const stopRescue = onTerminationSignal(endNow);
    // Read as it comes, never paused: the log holds at most its head and tail, and a check never blocks on a full pipe.
    const output = child.stdout;
    // Stryker disable next-line OptionalChaining: stdout is always a pipe here (stdio 'pipe')
    output?.on('data', (chunk: Buffer) => log.write(chunk));
    // Only bubblewrap writes here (the shell joined the command's stderr to its stdout).
    let wallStderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      // Stryker disable next-line ConditionalExpression,EqualityOperator: only bubblewrap writes this pipe, a line or two, never near the cap
      if (wallStderr.length < WALL_STDERR_BYTES) wallStderr += chunk.toString('utf8');
    });
    const drained = new Promise<void>((done) => {
      // Stryker disable next-line ConditionalExpression: stdout is always a pipe here, so the check never holds; this also hides the `true` replacement, the same mutant as the BooleanLiteral `output`, which the late-output test kills
      if (!output) return done();
      // Stryker disable next-line StringLiteral: a stream that ends also closes, and either settles the drain
      output.once('end', done);
      // Stryker disable next-line StringLiteral: a stream that closes has ended or failed, and either settles the drain
      output.once('close', done);
      // Stryker disable next-line StringLiteral,ArrowFunction: a stream that fails also closes, which settles the drain
      output.once('error', () => done());
    });
    const finish = (exit: Omit<Exit, 'timedOut'>) => {
      // Stryker disable next-line ConditionalExpression: a second finish only repeats idempotent steps, and the promise keeps its first result
      if (settled) return;
      // Stryker disable next-line BooleanLiteral: as above
      settled = true;
      clearTimeout(limitTimer);
      clearTimeout(killTimer);
      // Whatever the shell left behind in its group (a background server) ends with it.
      endGroup('SIGKILL');
      process.off('exit', endNow);
      stopRescue();
      let drainTimer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((done) => {
        drainTimer = setTimeout(done, DRAIN_MS);
      });
      void Promise.race([drained, late]).then(() => {
        clearTimeout(drainTimer);
        // Stryker disable next-line OptionalChaining: stdout is always a pipe here (stdio 'pipe')
        output?.destroy();
        child.stderr?.destroy();
        // bubblewrap exits 1 with its complaint when it cannot build the wall; a command's own
        // failure never reaches this pipe, so a complaint here means the command did not run.
        // Stryker disable next-line ConditionalExpression,LogicalOperator: bubblewrap prints a complaint only when it exits 1 without running the command
        const complaint = exit.code !== 0 && !timedOut ? wallComplaint(wallStderr) : undefined;
        // Stryker disable next-line ConditionalExpression: a wallError key holding undefined reads as no wallError
        resolve({ ...exit, timedOut, ...(complaint === undefined ? {} : { wallError: complaint }) });
      });
    };
    child.on('error', (error) => finish({ code: null, signal: null, startError: error.message }));
    child.on('exit', (code, signal) => finish({ code, signal }));
  });
}

// CSI and OSC sequences and the other control characters a terminal would act on; tabs and newlines stay.
// (A function, not a module constant: as a constant, StrykerJS reported its mutants surviving the tests that catch them.)
const escapes = (): RegExp =>
  /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f]/g;

/**
 * The end of a check's log as the judge and the worker read it: at most `bytes` bytes, cut to whole
 * lines, at most `lines` of them, taken from the log's raw text (`CappedLogSummary.raw`).
 *
 * Decided (issue 20, observation 5): the model gets what it needs to judge and to fix, the failing
 * lines, and no more than a person reading the file does.
 * - Secrets are masked here as in the file: no verdict and no fix needs a credential's value (the
 *   mask keeps its first characters and its length, enough to see which kind of key it was), while
 *   a value in a prompt is sent to the API and kept in clear in the stored transcript for good.
 * - Escape sequences are removed, not turned into pictures as in the file: a colour code is noise
 *   to a model, and what is left reads as the terminal would have shown it. The few controls the
 *   removal leaves (C1, bidi) are made visible, as everywhere else.
 * - Masking runs over the whole kept text before it is cut, so a private key block whose first line
 *   falls outside the window is still masked whole.
 */
export function tailOf(raw: string, bytes: number, lines: number): string {
  const whole = Buffer.from(shown(raw.replace(/\r\n?/g, '\n').replace(escapes(), '')));
  const start = Math.max(0, whole.length - bytes);
  let text = whole.subarray(start).toString('utf8');
  // Cut from the middle of the text: the first line is a fragment (maybe half a character).
  if (start > 0) text = text.slice(text.indexOf('\n') + 1);
  return text.replace(/\n+$/, '').split('\n').slice(-lines).join('\n');
}

/** Runs one check and reports how it went; never throws. */
export async function runCheck(item: string, check: CheckSpec, options: RunCheckOptions): Promise<CheckRun> {
  const policy = checkPolicy(options.policy);
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
  let log: CappedLog;
  try {
    log = CappedLog.create(options.outputPath, policy.log);
  } catch (error) {
    return failedToStart(base, `its log could not be created: ${(error as Error).message}`);
  }
  const walled = options.wall?.policy.enabled === true;
  const env = checkEnvironment(options.env ?? process.env);
  const shell = shellPath(env);
  const command = [shell, ...shellArguments(shell, check.command)];
  let scratch: string | undefined;
  const started = performance.now();
  let exit: Exit;
  let printed: CappedLogSummary;
  try {
    // Stryker disable next-line BooleanLiteral: on the host the shell joins stderr to stdout, so a piped stderr stays empty
    let launch: Launch = { file: shell, args: command.slice(1), walled: false };
    let launchEnv = env;
    if (walled && options.wall) {
      // Per check, so nothing one check leaves in its temporary files is there for the next.
      scratch = mkdtempSync(join(tmpdir(), 'flower-check-'));
      // Stryker disable next-line StringLiteral: wallPlan and reachOf single out 'read-only' alone; any other role draws the worker's wall
      const plan = wallPlan('worker', options.wall.policy, options.wall.places, options.cwd, scratch);
      launch = { ...walledCommand(plan, command), walled: true };
      launchEnv = { ...walledEnvironment(env), TMPDIR: scratch };
    }
    exit = await runInGroup(launch, options.cwd, launchEnv, log, timeoutMs, policy.killGraceMs);
  } catch (error) {
    // Only the wall's own preparation throws (a scratch directory that cannot be made).
    // Stryker disable next-line BooleanLiteral: only a walled check gets here, and its failure is reported by failedToStart, which reads no timedOut
    exit = { code: null, signal: null, timedOut: false, wallError: (error as Error).message };
  } finally {
    printed = log.close();
    // Stryker disable next-line BooleanLiteral: the scratch directory exists here (mkdtemp made it), so force changes nothing
    if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  }
  const durationS = Math.round((performance.now() - started) / 10) / 100;
  if (walled && (exit.wallError !== undefined || exit.startError !== undefined))
    return failedToStart(base, wallProblem(exit));
  if (exit.startError !== undefined) return failedToStart(base, `it could not start: ${exit.startError}`);
  const tail = tailOf(printed.raw, policy.tailBytes, policy.tailLines);
  return {
    ...base,
    exitCode: exit.code,
    signal: exit.signal,
    timedOut: exit.timedOut,
    passed: exit.code === 0 && !exit.timedOut,
    durationS,
    outputBytes: printed.printedBytes,
    cutBytes: printed.cutBytes,
    tail,
  };
}

/** The environment a walled check gets: the check's, without any variable that says it is a secret. */
function walledEnvironment(env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !isSecretVariable(name)));
}

/** Why a walled check did not run, with what fixes it. */
function wallProblem(exit: Exit): string {
  const missing = exit.startError?.includes('ENOENT') === true;
  // Stryker disable next-line StringLiteral: runCheck asks only with a wallError or a startError, so the last fallback is never read; this also hides the first string's mutant, which the not-on-PATH test kills
  const said = missing ? 'bubblewrap (bwrap) is not on PATH' : (exit.wallError ?? exit.startError ?? '');
  return (
    `the sandbox could not start it (${said}), so it did not run. ` +
    '`flower doctor` says what the sandbox needs here; --no-sandbox runs checks on the host'
  );
}

/** A check that never ran: the reason is its output, so the output path always leads somewhere. */
function failedToStart(
  base: Pick<CheckRun, 'item' | 'description' | 'command' | 'outputPath'>,
  problem: string,
): CheckRun {
  try {
    writePrivateFile(base.outputPath, `${problem}\n`);
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
    cutBytes: 0,
    tail: problem,
    problem,
  };
}

export interface RunChecksOptions {
  readonly cwd: string;
  /** The directory of this round's outputs (`.flower/artifacts/checks/<round>/`). */
  readonly dir: string;
  readonly env?: EnvMap;
  readonly policy?: CheckPolicyOverrides;
  /** The wall every check runs in (see `RunCheckOptions.wall`); undefined only for `--no-sandbox`. */
  readonly wall?: CheckWall;
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
  const checked = checkedItems(items);
  // What a check prints can be a secret it read by mistake: the round's logs are the user's alone,
  // and a check whose log cannot be kept private does not run.
  let unsafe: string | undefined;
  try {
    if (checked.length > 0) privateDirectory(options.dir);
  } catch (error) {
    unsafe = `its log directory ${options.dir} could not be made private (${(error as Error).message}); make sure flower can create and change it, then run flower again`;
  }
  for (const { index, item, check } of checked) {
    // Stryker disable next-line ConditionalExpression,StringLiteral: checkedItems has left out the items without a check already
    if (check.kind === 'none') continue;
    const outputPath = join(options.dir, `item-${index + 1}.log`);
    const base = { item, description: check.description, outputPath };
    const run =
      unsafe !== undefined
        ? failedToStart({ ...base, command: check.kind === 'check' ? check.command : '' }, unsafe)
        : check.kind === 'check'
          ? await runCheck(item, check, { ...options, outputPath })
          : failedToStart(
              { ...base, command: '' },
              `the check on this item cannot be read: ${check.problem}. Write it as check: \`command\` at the end of the item in goal.md.`,
            );
    runs.push(run);
    options.onResult?.(run);
  }
  return runs;
}
