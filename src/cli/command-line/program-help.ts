/**
 * What `flower --help` says after the commands: a few examples, the exit codes and the environment
 * variables, so a newcomer or a CI script needs no other page to start. Kept short: each command's
 * own `--help` has its flags and examples, the README the details.
 *
 * Invariants:
 * - The exit codes are printed from `EXIT`, the values `main` returns, so the two cannot disagree.
 * - Every variable listed is one flower reads (a test checks each name against the sources).
 */
import { EXIT } from './exit-errors.js';

/** The environment variables a user sets, with what each does, in the order a newcomer needs them. */
export const HELP_VARIABLES: ReadonlyArray<readonly [name: string, meaning: string]> = [
  ['ANTHROPIC_API_KEY', 'an Anthropic API key (or ANTHROPIC_AUTH_TOKEN: a gateway token)'],
  ['ANTHROPIC_BASE_URL', 'a gateway or proxy instead of api.anthropic.com'],
  ['ANTHROPIC_MODEL', 'the model (--model wins)'],
  ['FLOWER_WINDOW', "the model's context window in tokens"],
  ['FLOWER_ENV', 'one more .env file, read before ./.env'],
  ['FLOWER_STORE_URL', 'keep the task state in PostgreSQL too (--store wins)'],
  ['FLOWER_NETWORK', 'where the workers may connect (--network wins)'],
  ['FLOWER_SANDBOX_HIDE', 'more credential stores to hide from the agents (paths joined by :)'],
  ['FLOWER_NO_PROBE', 'set: skip the start-up credential check'],
  ['FLOWER_NO_UPDATE', 'set: no update notice'],
  ['NO_COLOR', 'set: no colour (FORCE_COLOR=1 forces it)'],
];

const EXAMPLES: ReadonlyArray<readonly [command: string, meaning: string]> = [
  ['flower "write a CLI that counts words"', 'start a task here, or add to the one here'],
  ['flower', 'continue the task here (or ask what to do)'],
  ['flower status', 'where the task stands and what to type next'],
  ['flower -w ~/proj --timeout 0 "fix the lint"', 'unattended: questions are not waited for'],
  ['flower demo', 'watch the whole flow offline, no credentials'],
  ['flower help go', "a command's flags and examples"],
];

const EXIT_CODES: ReadonlyArray<readonly [code: number, meaning: string]> = [
  [EXIT.ok, 'done'],
  [EXIT.failed, 'failed or stopped, with one line saying why and what to do next'],
  [EXIT.usage, 'the command line cannot be run as typed (a flag value, a directory, a command name)'],
  [EXIT.interrupted, 'interrupted (Ctrl-C)'],
];

/** Two columns, the first padded to its widest entry. */
function table(rows: ReadonlyArray<readonly [string | number, string]>): string[] {
  const width = Math.max(...rows.map(([left]) => String(left).length));
  return rows.map(([left, right]) => `  ${String(left).padEnd(width)}  ${right}`);
}

/** The text after the command list of `flower --help`. */
export function programHelpAfter(): string {
  return [
    '',
    'Examples:',
    ...table(EXAMPLES),
    '',
    'Exit codes:',
    ...table(EXIT_CODES),
    '',
    'Environment (or in ./.env or ~/.config/flower/.env; `flower doctor` shows what is in force):',
    ...table(HELP_VARIABLES),
  ].join('\n');
}
