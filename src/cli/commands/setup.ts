/**
 * `flower setup`: the command's help. The implementation (`setup-action.ts`, also the dialog the
 * credentials gate reuses) is imported only when the command actually runs.
 */
import type { Command } from 'commander';

export function registerSetup(program: Command): void {
  program
    .command('setup')
    .description(
      'configure credentials (API key or gateway), endpoint, model and window in ~/.config/flower/.env',
    )
    .action(async () => {
      const { runSetup } = await import('./setup-action.js');
      await runSetup();
    });
}
