/**
 * `flower log [step]`: the command's flags and help. `--raw` is the one place flower prints stored
 * transcripts unmasked (they hold what the model saw, keys and escape sequences included), so it is
 * a flag of its own, valid only with `--format jsonl`, and the command says so on stderr. The implementation (`log-action.ts`) opens the
 * session store, so it is imported only when the command runs.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { globalOptions } from '../command-line/global-options.js';
import type { LogFlags } from './log-action.js';

const FORMATS = ['markdown', 'jsonl'] as const;

function parseFormat(value: string): (typeof FORMATS)[number] {
  if ((FORMATS as readonly string[]).includes(value)) return value as (typeof FORMATS)[number];
  throw new InvalidArgumentError(`choose ${FORMATS.join(' or ')}`);
}

export function registerLog(program: Command): void {
  program
    .command('log')
    .description("a step's transcript, main thread and workers: readable Markdown, or the stored JSON lines")
    // Optional so that a run that does not exist is named as such, and a step left out is answered
    // with the steps there are, rather than commander's bare "missing required argument".
    .argument('[step]', 'the step, as `flower status` lists it (clarify, work, work:verdict#1, ...)')
    .addOption(
      new Option('--format <format>', 'markdown or jsonl').default('markdown').argParser(parseFormat),
    )
    .option('--run <id>', 'the run the step belongs to (default: its latest run)')
    .option(
      '--raw',
      'with --format jsonl: the entries exactly as stored, secrets and escape sequences unmasked (for tools, not terminals)',
    )
    .action(async (step: string | undefined, flags: LogFlags, command: Command) => {
      const { runLog } = await import('./log-action.js');
      await runLog(step, flags, globalOptions(command));
    });
}
