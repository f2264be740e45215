/**
 * `flower doctor`: the command's flags and help. The implementation (`doctor-action.ts`) reads the
 * whole configuration chain, so it is imported only when the command actually runs.
 */
import type { Command } from 'commander';
import { globalOptions } from '../command-line/global-options.js';
import type { DoctorFlags } from './doctor-action.js';

export function registerDoctor(program: Command): void {
  program
    .command('doctor')
    .description(
      'show the configuration flower sees, where each value came from, .env mistakes, and whether the sandbox can run here',
    )
    .option('--probe', 'also send one small real request to check the credentials, endpoint and model')
    .action(async (flags: Pick<DoctorFlags, 'probe'>, command: Command) => {
      const { runDoctor } = await import('./doctor-action.js');
      const { store, workspace, runDir, verbose } = globalOptions(command);
      await runDoctor({ ...flags, workspace, runDir, verbose, ...(store === undefined ? {} : { store }) });
    });
}
