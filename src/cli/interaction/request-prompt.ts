/**
 * The request prompt of a bare `flower`: one line typed at `> `, so no shell quoting gets in the way
 * (full-width quotes, `!`, apostrophes are all fine).
 *
 * Invariants:
 * - The header appears only on a terminal; piped input gives the first line as the request.
 * - Ctrl-C quits like Ctrl-C anywhere else (exit 130, nothing was started); an empty line cancels
 *   a fresh start but means "carry on" when waking.
 * - End of input cancels (exit 1, "cancelled") — except when waking off a terminal, where it means
 *   "carry on", as it already means "nobody answers" for questions: cron, nohup and systemd give
 *   flower an empty standard input, and a restart after a crash must continue the task, not stop at
 *   a prompt nobody sees (seen: `flower go --timeout 0 </dev/null` exited 1 "cancelled"). A pipe
 *   that stays open and silent (a CI runner) carries on too, after `WAKE_PIPE_WAIT_MS`; words that
 *   come later reach the run as mail, like any line typed while it works. The caller says so in one
 *   line (`CONTINUING_NOTICE`).
 * - The prompt reads through the same Terminal as the run, so lines typed or piped after the request
 *   are kept for the run instead of being swallowed.
 */
import { InterruptedError } from '../command-line/exit-errors.js';
import type { Terminal } from '../terminal/terminal.js';

export const REQUEST_HEADERS = {
  fresh: 'What should flower do? One sentence is enough; Enter starts (Ctrl-C quits).',
  waking:
    'Continue from last time? Enter = carry on; or say something new; /new = start something else (Ctrl-C quits).',
} as const;

/** Typed at the prompt (or given as the request): archive this task and start a new one. */
export const START_OVER_COMMAND = '/new';

/**
 * How long a wake off a terminal waits for piped words before it carries on. Piped words are there
 * at once (`echo … | flower`); an open pipe that never speaks would otherwise hold a restart for
 * ever. Short against any run, long against a pipe's first line.
 */
export const WAKE_PIPE_WAIT_MS = 5_000;

/**
 * Said when a wake off a terminal carries on because standard input gave no words. (The wake
 * banner right after it names the directory.)
 */
export const CONTINUING_NOTICE =
  '- standard input is not a terminal: continuing the task, as Enter would. To add to it, give ' +
  'the words as the request (flower "…"); --new starts a separate task.';

/** How `readRequest` asks. */
export interface RequestAsk {
  /** A task is there to continue: an empty answer (Enter) continues it instead of failing. */
  waking: boolean;
  /** Colours the header on a terminal. */
  paint: (text: string) => string;
  /** The line above the prompt. Default: the fresh or waking header. */
  header?: string;
  /** How long a wake off a terminal waits for piped words. Default: WAKE_PIPE_WAIT_MS. */
  pipeWaitMs?: number;
}

export async function readRequest(terminal: Terminal, ask: RequestAsk): Promise<string> {
  const { waking, paint, pipeWaitMs = WAKE_PIPE_WAIT_MS } = ask;
  const header = ask.header ?? (waking ? REQUEST_HEADERS.waking : REQUEST_HEADERS.fresh);
  if (terminal.inputIsTerminal) terminal.print([paint(header)]);
  terminal.start();
  terminal.showPrompt(() => '> ');
  const offTerminalWake = waking && !terminal.inputIsTerminal;
  const event = await terminal.nextWithin(offTerminalWake ? pipeWaitMs : undefined);
  terminal.hidePrompt();
  if (event === undefined) return ''; // an open, silent pipe: carry on
  if (event.kind === 'interrupt') throw new InterruptedError('quit (Ctrl-C); nothing was started');
  if (event.kind !== 'submit') {
    if (offTerminalWake) return '';
    throw new Error('cancelled');
  }
  const request = event.line.trim();
  if (request === '' && !waking) {
    throw new Error(
      'the request is empty. Run `flower` and type it at the prompt, or: flower "build me an X"',
    );
  }
  return request;
}
