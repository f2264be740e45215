/**
 * How long `go`'s questions wait for an answer. With standard input not a terminal (CI, cron,
 * `nohup`, a pipe that stays open) nobody can answer, and each question used to wait the full 30
 * minutes for nobody. So a non-terminal stdin means unattended (`--timeout 0`) unless `--timeout`
 * was typed, and the run says so in one line.
 *
 * Pure: the caller supplies what it knows about the terminal and the flag.
 */

export interface QuestionWaitInput {
  /** The `--timeout` value (typed, or its default). */
  readonly timeoutSeconds: number;
  /** Whether `--timeout` was typed on the command line. */
  readonly timeoutGiven: boolean;
  /** Whether standard input is a terminal someone can type into. */
  readonly stdinIsTerminal: boolean;
}

export interface QuestionWait {
  /** What the human channel gets: 0 or less never waits. */
  readonly timeoutSeconds: number;
  /** The one line to show when flower chose unattended by itself. */
  readonly notice?: string;
}

export const UNATTENDED_NOTICE =
  '- standard input is not a terminal: questions are not waited for (as with --timeout 0); ' +
  'the agent decides and records its assumptions. Give --timeout <seconds> to wait anyway.';

export function questionWait(input: QuestionWaitInput): QuestionWait {
  if (input.stdinIsTerminal || input.timeoutGiven) return { timeoutSeconds: input.timeoutSeconds };
  return { timeoutSeconds: 0, notice: UNATTENDED_NOTICE };
}
