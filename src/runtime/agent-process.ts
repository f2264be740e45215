/**
 * Starting the Claude Code process (the SDK's `spawnClaudeCodeProcess`) so that it goes with
 * flower, however flower ends.
 *
 * Measured (Claude Code 2.1.332, SDK 0.3.332): after `kill -9` of flower the agent process kept
 * running until its current request or tool call finished (32 s for a 30-second reply, 29 s for a
 * `sleep 30` in Bash), and its tools with it. Closing its input is not enough: the pipe from a dead
 * parent does close, but the binary finishes its turn first. A `finally`, an exit handler or a
 * process-group kill from flower cannot help either, since SIGKILL runs none of them.
 *
 * So each agent process gets a watchdog: a tiny `sh` in its own session that blocks reading a pipe
 * only flower holds (and keeps a copy of the agent's input open, so that the agent does not notice
 * flower's end before the watchdog does). When flower exits in any way the kernel closes that pipe; the watchdog reads
 * end-of-file and ends the agent and the tools it runs at once (see `WATCHDOG_SCRIPT`; measured:
 * within 0.1 s), instead of letting them run on unobserved. When the agent exits
 * first, flower writes `done` and the watchdog leaves quietly. No polling, one small `sh` per
 * agent process (POSIX only; elsewhere the SDK's own spawn is kept).
 *
 * Invariants:
 * - Everything else is what the SDK's own spawn does: the same command, arguments, directory,
 *   environment and abort signal, stdio pipes, `windowsHide`. The agent runs in a process group
 *   of its own (so the watchdog can end its tools too); it has no controlling terminal, which the
 *   SDK's pipes never gave it a use for.
 * - stderr is always read (a full pipe would block the agent) and handed to `onStderr` if given.
 * - An environment the kernel would refuse is reported before anything is started, naming the
 *   variable, instead of surfacing as a bare "spawn E2BIG".
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import type { Writable } from 'node:stream';
import type { SpawnedProcess, SpawnOptions } from '@anthropic-ai/claude-agent-sdk';
import { environmentSizeMessage } from '../config/environment-size.js';

/**
 * How the watchdog ends the agent, measured against the bundled binary:
 * - at once, as a kill of flower's whole group would have: SIGSTOP freezes the agent's group, then
 *   everything gets SIGKILL. Given SIGTERM instead, the binary went on for its grace period: it
 *   wrote "the tool call was interrupted" into its transcript and even sent one more request to
 *   the model, with nobody left to pay attention;
 * - the agent starts each tool shell in a session of its own, and a command in it may sit in a
 *   group of its own (seen: `sleep 30` in the Bash tool), so a kill of the agent's group alone left
 *   the tool running for 26 s: the sessions of the agent's direct children are ended too, found
 *   with `pgrep -P` (while the agent is frozen) and ended with `pkill -s` by those session ids only.
 * The group is written `-<pgid>` right after the signal name: dash (Debian's /bin/sh) rejects `--`.
 */
const WATCHDOG_SCRIPT = [
  "trap '' INT HUP TERM QUIT",
  // Fd 3 is a copy of the agent's input: while the watchdog holds it, flower's end does not reach
  // the agent as end-of-input, which it would act on (abort the call it waits for, ask the model
  // again) in the moment before it is frozen. flower says `release` before it closes that input
  // itself, and `done` when the agent has exited.
  'while IFS= read -r line; do',
  '  case "$line" in',
  '    release) exec 3>&- ;;',
  '    done) exit 0 ;;',
  '  esac',
  'done',
  'kill -STOP "-$1" 2>/dev/null',
  'children=$(pgrep -P "$1" 2>/dev/null)',
  'for child in $children; do pkill -KILL -s "$child" 2>/dev/null; kill -KILL "$child" 2>/dev/null; done',
  'pkill -KILL -s "$1" 2>/dev/null',
  'kill -KILL "-$1" 2>/dev/null',
  'exit 0',
].join('\n');

export interface AgentProcessOptions {
  /** Receives the agent's stderr (its own diagnostics). */
  onStderr?: (text: string) => void;
}

interface Watchdog {
  /** flower is about to close the agent's input (the SDK ends a session that way). */
  release(): void;
  /** The agent has exited: the watchdog leaves quietly. */
  done(): void;
}

/** Starts the watchdog for the agent `agent` (its process group has the same id). */
function startWatchdog(agent: ChildProcess): Watchdog | undefined {
  const group = agent.pid;
  if (group === undefined || agent.stdin === null) return undefined;
  const watchdog = spawn('/bin/sh', ['-c', WATCHDOG_SCRIPT, 'flower-agent-watchdog', String(group)], {
    stdio: ['pipe', 'ignore', 'ignore', agent.stdin],
    detached: true,
  });
  watchdog.on('error', () => {
    // No /bin/sh: the agent simply has no watchdog, as before.
  });
  watchdog.unref();
  const control = watchdog.stdin;
  control?.on('error', () => {});
  (control as Socket | null)?.unref?.();
  const say = (line: string, last: boolean) => {
    if (control === null || control.writableEnded) return;
    if (last) control.end(`${line}\n`);
    else control.write(`${line}\n`);
  };
  return { release: () => say('release', false), done: () => say('done', true) };
}

/** Makes `end` and `destroy` of the agent's input tell the watchdog first (see WATCHDOG_SCRIPT). */
function releasingInput(input: Writable, watchdog: Watchdog): void {
  const end = input.end.bind(input) as (...args: unknown[]) => Writable;
  const destroy = input.destroy.bind(input);
  input.end = ((...args: unknown[]) => {
    watchdog.release();
    return end(...args);
  }) as Writable['end'];
  input.destroy = ((error?: Error) => {
    watchdog.release();
    return destroy(error);
  }) as Writable['destroy'];
}

/** A `spawnClaudeCodeProcess` for the SDK (see the module comment). */
export function spawnAgentProcess(options: SpawnOptions, extra: AgentProcessOptions = {}): SpawnedProcess {
  const tooLarge = environmentSizeMessage(options.env, undefined, () => undefined);
  if (tooLarge !== undefined) throw new Error(tooLarge);
  const posix = process.platform !== 'win32';
  const child = spawn(options.command, options.args, {
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    env: options.env,
    stdio: ['pipe', 'pipe', 'pipe'],
    signal: options.signal,
    windowsHide: true,
    detached: posix,
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text: string) => extra.onStderr?.(text));
  child.stderr.on('error', () => {});
  const watchdog = posix ? startWatchdog(child) : undefined;
  if (watchdog !== undefined) {
    releasingInput(child.stdin, watchdog);
    child.once('exit', () => watchdog.done());
  }
  return child;
}
