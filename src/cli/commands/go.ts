/**
 * `flower [go] [request] [flags]`: the one-command path. Clarify the request into a brief, set a
 * goal, work on it with a coordinator and a worker, have each round judged, and pick up where the
 * last run stopped when run again in the same directory.
 *
 * Invariants:
 * - Nothing costs money before the request is known and the flow is built: credentials, the wake
 *   check (read-only), the request prompt, `--isolate`'s git check all come first.
 * - `/new` (as the request or typed at the prompt) is `--new`: the brief, goal and lineage are
 *   archived and the prompt asks again, now for a fresh request.
 * - On `go`, `-T` and `-W` do nothing: trimming is on unless `--no-trim`, and the starter flow
 *   brings its own workbench.
 */
import { homedir } from 'node:os';
import { type Command, InvalidArgumentError } from 'commander';
import { createColors } from 'picocolors';
import { loadEnvironment } from '../../config/env-chain.js';
import type { Runtime } from '../../runtime/runtime.js';
import { starterFlow, type WakeState, WORK_STEP, wakeState } from '../../workflow/starter.js';
import type { Workflow } from '../../workflow/workflow.js';
import { ensureCredentials } from '../credentials-gate.js';
import { drive } from '../drive.js';
import { type GlobalOptions, globalOptions } from '../global-options.js';
import { formatTokens } from '../plain-renderer.js';
import { readRequest, START_OVER_COMMAND } from '../request-prompt.js';
import { Terminal } from '../terminal.js';
import { settingsLines } from './once.js';

export interface GoFlags {
  asks: number;
  rounds: number;
  goal: boolean;
  judgeCanRun: boolean;
  timeout: number;
  isolate: boolean;
  window?: number;
  handoff: boolean;
  new: boolean;
  clarifyOnly: boolean;
  trim: boolean;
}

export function parseInteger(value: string): number {
  if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError('expected a whole number.');
  return Number(value);
}

export function parseSeconds(value: string): number {
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isFinite(seconds))
    throw new InvalidArgumentError('expected a number of seconds.');
  return seconds;
}

/** `~/proj` for paths under the home directory. */
export function tildePath(path: string, home: string = homedir()): string {
  return home && (path === home || path.startsWith(`${home}/`)) ? `~${path.slice(home.length)}` : path;
}

/** The one-line wake banner: what is already settled, and how often this directory has been woken. */
export function wakeBanner(workspace: string, state: WakeState, workContext: number): string {
  const parts = ['brief confirmed'];
  if (state.checks > 0) parts.push(`goal: ${state.checks} check${state.checks === 1 ? '' : 's'}`);
  if (workContext > 0) parts.push(`work context ${formatTokens(workContext)}`);
  parts.push(`wake ${state.woke + 1}`);
  return `<- continuing in ${tildePath(workspace)}  ${parts.join(' · ')}`;
}

async function runGo(request: string, flags: GoFlags, global: GlobalOptions): Promise<void> {
  const color = Boolean(process.stdout.isTTY);
  const paint = createColors(color);
  loadEnvironment();
  if (global.verbose) for (const line of settingsLines()) process.stderr.write(`${line}\n`);
  await ensureCredentials({
    interactive: Boolean(process.stdin.isTTY && process.stdout.isTTY),
    say: (line) => process.stdout.write(`${paint.yellow(line)}\n`),
  });

  const location = { workspace: global.workspace, runDir: global.runDir, isolate: flags.isolate };
  let startOver = flags.new;
  const state = wakeState(location);
  let waking = state.waking && !startOver;
  const terminal = new Terminal({ input: process.stdin, output: process.stdout });
  let workflow: Workflow;
  try {
    if (request === START_OVER_COMMAND) {
      startOver = true;
      waking = false;
      request = '';
    }
    if (request === '') request = await readRequest(terminal, waking, paint.cyan);
    while (request === START_OVER_COMMAND) {
      startOver = true;
      waking = false;
      request = await readRequest(terminal, false, paint.cyan);
    }
    workflow = starterFlow({
      ...location,
      request,
      startOver,
      clarifyOnly: flags.clarifyOnly,
      goal: flags.goal,
      rounds: flags.rounds,
      judgeCanRun: flags.judgeCanRun,
      ...(flags.asks >= 0 ? { maxAsks: flags.asks } : {}),
      timeoutSeconds: flags.timeout,
    });
  } catch (error) {
    // The request prompt may have put the terminal in raw mode; give it back before the message.
    terminal.close();
    throw error;
  }
  await drive({
    workflow,
    global,
    terminal,
    trim: flags.trim,
    handoff: flags.handoff ? (flags.window ? { window: flags.window } : true) : false,
    interactive: true,
    color,
    ...(waking
      ? {
          banner: (runtime: Runtime) => {
            const workSession = state.steps[WORK_STEP];
            const context = workSession ? runtime.contextOf(workSession) : 0;
            return [paint.cyan(wakeBanner(global.workspace, state, context))];
          },
        }
      : {}),
  });
}

export function registerGo(program: Command): void {
  program
    .command('go', { isDefault: false })
    .summary('clarify a request, set a goal, work on it until a judge agrees (the default command)')
    .description(
      'Clarify the request into a brief (asking you questions), freeze a goal with a checklist, then ' +
        'have a coordinator dispatch workers until an independent judge rules the goal achieved. ' +
        'Run it again in the same directory to continue where it stopped. Without a request it asks for one.',
    )
    .argument('[request...]', 'what you want done, in one sentence (quotes optional)')
    .option('--asks <n>', 'how many questions the agents may ask you; negative = no limit', parseInteger, -1)
    .option('--rounds <n>', 'work rounds in total; after each one the judge rules', parseInteger, 3)
    .option('--no-goal', 'no goal and no judge: the work step finishing means done')
    .option('--judge-can-run', 'let the judge run commands (Bash) to check the result')
    .option(
      '--timeout <seconds>',
      'how long a question waits for your answer; 0 or less = never wait (fully automatic)',
      parseSeconds,
      1800,
    )
    .option('--isolate', 'give each worker its own git worktree (the workspace must be a git repository)')
    .option('--window <tokens>', "the model's context window, for deciding when to hand off", parseInteger)
    .option(
      '--no-handoff',
      'no handoff to a fresh session near a full context; let Claude Code compact instead',
    )
    .option('--new', 'start a new task here: archive the brief, goal and lineage first (nothing is deleted)')
    .option('--clarify-only', 'only clarify the request into a brief, then stop')
    .option('--no-trim', 'on resume, keep old large tool results in full instead of pointers to files')
    .addHelpText(
      'after',
      '\nGlobal flags (-w -r -v -W -T, see `flower --help`) may come before or after the request.\n' +
        'Examples:\n' +
        '  flower "write a CLI that counts words"\n' +
        '  flower -w ~/proj --rounds 5 "get the build green"\n' +
        '  flower --timeout 0 "port utils.py to TypeScript"   # nobody will answer questions\n' +
        '  flower go run                                     # the word "run" as the request',
    )
    .action(async (words: string[], flags: GoFlags, command: Command) => {
      await runGo(words.join(' ').trim(), flags, globalOptions(command));
    });
}
