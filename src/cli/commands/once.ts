/**
 * `flower once <prompt>`: the command's flags and help. The implementation (`once-action.ts`) pulls
 * in the SDK and the runtime, so it is imported only when the command actually runs; `--help` and
 * every other command never pay for it.
 *
 * Bad flag values are usage errors (exit 2, mapped by `main`), reported by the parsers below.
 */
import type { PermissionMode } from '@anthropic-ai/claude-agent-sdk';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { globalOptions } from '../command-line/global-options.js';
import { NETWORK_HELP, NO_SANDBOX_HELP, parseNetworkFlag } from '../command-line/sandbox-flags.js';
import { MODEL_HELP, outputFormatOption, parseModel } from '../machine-output/output-format.js';
import type { OnceFlags } from './once-action.js';

/** Read-only by default: looking costs nothing, changing things should be asked for. */
const DEFAULT_TOOLS = ['Read', 'Glob', 'Grep'];

const PERMISSION_MODES: readonly PermissionMode[] = ['default', 'acceptEdits', 'plan', 'bypassPermissions'];

function parseBudget(value: string): number {
  const budget = Number(value);
  if (!Number.isFinite(budget) || budget <= 0) {
    throw new InvalidArgumentError('give the budget as a positive number of US dollars, e.g. -b 0.50');
  }
  return budget;
}

function parseTools(value: string): string[] {
  const tools = value.split(',').filter((tool) => tool !== '');
  if (tools.length === 0)
    throw new InvalidArgumentError('give at least one tool name, e.g. -t Read,Glob,Grep');
  return tools;
}

export function registerOnce(program: Command): void {
  program
    .command('once')
    .description('run one ad-hoc agent on a prompt (no clarifying, no judge) and print what it does')
    .argument('<prompt>', 'what the agent should do')
    .option('-i, --instructions <text>', "appended after Claude Code's own system prompt", '')
    .addOption(
      new Option('-t, --tools <list>', 'comma-separated tools it may use without asking')
        .argParser(parseTools)
        .default(DEFAULT_TOOLS, DEFAULT_TOOLS.join(',')),
    )
    .addOption(
      new Option('-p, --permission-mode <mode>', 'permission mode of the session')
        .choices(PERMISSION_MODES)
        .default('default'),
    )
    .option('-b, --budget <usd>', 'hard dollar cap for the run', parseBudget)
    .option('--resume <session-id>', 'continue that session')
    .option('--fork', 'with --resume: continue in a fork of the session')
    .option('--no-trim', 'on resume, keep old large tool results in full instead of pointers to files')
    .option('--network <policy>', NETWORK_HELP, parseNetworkFlag)
    .option('--no-sandbox', NO_SANDBOX_HELP)
    .addOption(outputFormatOption())
    .option('--model <name>', MODEL_HELP, parseModel)
    .addHelpText(
      'after',
      '\nIt ends with the session id and the command that continues the session (--resume).\n' +
        'Examples:\n' +
        "  flower once 'list the TODOs in src/'\n" +
        "  flower once --output-format json --model claude-sonnet-4-5 'summarise README.md' | jq -r .session_id",
    )
    .action(async (prompt: string, flags: OnceFlags, command: Command) => {
      const { runOnce } = await import('./once-action.js');
      await runOnce(prompt, flags, globalOptions(command));
    });
}
