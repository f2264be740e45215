/**
 * `flower [go] [request] [flags]`: the command's flags and help. The implementation
 * (`go-action.ts`) pulls in the SDK, the workflow layer and the roles, so it is imported only when
 * the command actually runs; `--help` and every other command never pay for it.
 *
 * Every flag is declared here even though only the action reads it: the default-command rewrite
 * (`shapeOf(program)`) learns which flags take a value from this registration.
 */
import type { Command } from 'commander';
import { parseInteger, parseWaitSeconds, wholeNumberAtLeast } from '../command-line/flag-values.js';
import { globalOptions } from '../command-line/global-options.js';
import { NETWORK_HELP, NO_SANDBOX_HELP, parseNetworkFlag } from '../command-line/sandbox-flags.js';
import { BUDGET_HELP, parseBudgetUsd, parseStallRounds, STALL_HELP } from '../command-line/task-limits.js';
import { MODEL_HELP, outputFormatOption, parseModel } from '../machine-output/output-format.js';
import type { GoFlags } from './go-action.js';

export { parseInteger, parseWaitSeconds };

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
    .option(
      '--rounds <n>',
      'work rounds for the current goal, counted across runs (at least 1); after each one the judge rules',
      wholeNumberAtLeast(1, '--rounds 3'),
      3,
    )
    .option('--no-goal', 'no goal and no judge: the work step finishing means done')
    .option('--judge-can-run', 'let the judge run commands (Bash) to check the result')
    .option(
      '--timeout <seconds>',
      'how long a question waits for your answer; 0 = never wait (fully automatic), ' +
        'which is also the default when standard input is not a terminal',
      parseWaitSeconds,
      1800,
    )
    .option('--isolate', 'give each worker its own git worktree (the workspace must be a git repository)')
    .option(
      '--window <tokens>',
      "the model's context window, for deciding when to hand off",
      wholeNumberAtLeast(1, '--window 200000'),
    )
    .option(
      '--no-handoff',
      'no handoff to a fresh session near a full context; let Claude Code compact instead',
    )
    .option('--new', 'start a new task here: archive the brief, goal and lineage first (nothing is deleted)')
    .option('--clarify-only', 'only clarify the request into a brief, then stop')
    .option('--no-trim', 'on resume, keep old large tool results in full instead of pointers to files')
    .option('--budget <usd>', BUDGET_HELP, parseBudgetUsd)
    .option('--stall <n>', STALL_HELP, parseStallRounds, 2)
    .option('--no-bequest', 'do not leave a handoff for the next tool in CLAUDE.md and AGENTS.md at the end')
    .option('--network <policy>', NETWORK_HELP, parseNetworkFlag)
    .option('--no-sandbox', NO_SANDBOX_HELP)
    .addOption(outputFormatOption())
    .option('--model <name>', MODEL_HELP, parseModel)
    .addHelpText(
      'after',
      '\nGlobal flags (-w -r -v -W -T, see `flower --help`) may come before or after the request.\n' +
        'Examples:\n' +
        '  flower "write a CLI that counts words"\n' +
        '  flower -w ~/proj --rounds 5 "get the build green"\n' +
        '  flower --timeout 0 "port utils.py to TypeScript"   # nobody will answer questions\n' +
        '  flower --network registries,github.com "vendor the deps"   # workers may also reach github.com\n' +
        '  flower go run                                     # the word "run" as the request\n' +
        '  flower --timeout 0 --output-format json "fix the lint" > result.json   # CI: one JSON document',
    )
    .action(async (words: string[], flags: GoFlags, command: Command) => {
      const { runGo } = await import('./go-action.js');
      // Whether --timeout was typed decides what a non-terminal stdin means (see go-action.ts).
      const timeoutGiven = command.getOptionValueSource('timeout') === 'cli';
      await runGo(words.join(' ').trim(), { ...flags, timeoutGiven }, globalOptions(command));
    });
}
