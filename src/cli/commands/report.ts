/**
 * `flower report`: the command's flags and help. The implementation (`report-action.ts`) opens the
 * session store and builds the report, so it is imported only when the command runs.
 */
import type { Command } from 'commander';
import { globalOptions } from '../command-line/global-options.js';
import type { ReportFlags } from './report-action.js';

export function registerReport(program: Command): void {
  program
    .command('report')
    .description(
      'what the runs in this directory did and cost: per step and per worker, main thread vs workers, context, cache, tools, outages; read-only, works while a flower runs',
    )
    .option('--json', 'write the report as one JSON document to standard output')
    .option(
      '--html <file>',
      'write a self-contained HTML page with charts to <file> instead of the text report',
    )
    .option('--all', 'list every run, not only the last one (totals always cover the whole task)')
    .action(async (flags: ReportFlags, command: Command) => {
      const { runReport } = await import('./report-action.js');
      await runReport(flags, globalOptions(command));
    });
}
