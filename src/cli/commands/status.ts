/**
 * `flower status`: the command's help. The implementation (`status-action.ts`) reads the run
 * directory and the workbench, so it is imported only when the command runs.
 *
 * A command, not a request: `flower status` never becomes a paid task. It reads only (no lock),
 * so it works while another flower holds the task.
 */
import type { Command } from 'commander';
import { globalOptions } from '../command-line/global-options.js';

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description(
      'where the task in this directory stands: the request, the goal, the last verdict, each step, the spend so far, and what to type next',
    )
    .action(async (_flags: unknown, command: Command) => {
      const { runStatus } = await import('./status-action.js');
      await runStatus(globalOptions(command));
    });
}
