/**
 * `flower doctor`: the command's flags and help. The implementation (`doctor-action.ts`) reads the
 * whole configuration chain, so it is imported only when the command actually runs.
 */
import type { Command } from 'commander';
import type { DoctorFlags } from './doctor-action.js';

export function registerDoctor(program: Command): void {
  program
    .command('doctor')
    .description('show the configuration flower sees, where each value came from, and .env mistakes')
    .option('--probe', 'also send one small real request to check the credentials, endpoint and model')
    .action(async (flags: DoctorFlags, command: Command) => {
      const { runDoctor } = await import('./doctor-action.js');
      const store = command.optsWithGlobals<{ store?: string }>().store;
      await runDoctor({ ...flags, ...(store === undefined ? {} : { store }) });
    });
}
