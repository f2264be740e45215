/**
 * `flower demo [dir]`: the command's argument and help. The implementation (`demo-action.ts`) pulls
 * in the scripted mock model, the SDK and the workflow layer, so it is imported only when the
 * command actually runs; `--help` and every other command never pay for it.
 */
import type { Command } from 'commander';
import { globalOptions } from '../command-line/global-options.js';
import { NO_SANDBOX_HELP } from '../command-line/sandbox-flags.js';

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .summary('watch the whole flow offline: a scripted model, the real agent binary, no credentials')
    .description(
      'Run the starter flow end to end against a built-in scripted model: the clarifier asks a ' +
        'question (the demo answers it), the judge sets a goal, the coordinator dispatches a worker that ' +
        'writes and runs a small program, and the judge rules on it. Takes about a minute; needs no ' +
        'credentials and no network. Afterwards, look at runs/ and .flower/ in the directory it names. ' +
        "The worker's commands run in the sandbox, as in a real run (Linux needs bubblewrap and socat).",
    )
    .argument('[dir]', 'an empty or new directory to work in (default: a new temporary directory)')
    .option('--no-sandbox', NO_SANDBOX_HELP)
    .action(async (dir: string | undefined, flags: { sandbox?: boolean }, command: Command) => {
      const { runDemo } = await import('./demo-action.js');
      await runDemo(dir, globalOptions(command), undefined, flags.sandbox !== false);
    });
}
