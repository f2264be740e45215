/**
 * `flower run <file-or-module>:<export>`: the command's argument and help. The implementation
 * (`run-action.ts`) pulls in the SDK and the runtime, so it is imported only when the command
 * actually runs; `--help` and every other command never pay for it.
 */
import type { Command } from 'commander';
import { globalOptions } from '../command-line/global-options.js';
import {
  NETWORK_HELP,
  NO_SANDBOX_HELP,
  parseNetworkFlag,
  type SandboxFlags,
} from '../command-line/sandbox-flags.js';
import { BUDGET_HELP, parseBudgetUsd } from '../command-line/task-limits.js';
import {
  type MachineFlags,
  MODEL_HELP,
  outputFormatOption,
  parseModel,
} from '../machine-output/output-format.js';

export function registerRun(program: Command): void {
  program
    .command('run')
    .summary('run a workflow you wrote (a Workflow exported from a .ts/.js file or a module)')
    .description(
      'Import a workflow and run it with the same terminal UI as `flower go`. The target is ' +
        '<file-or-module>:<export>; the export is a Workflow or a function returning one. ' +
        'TypeScript files are compiled on the fly with the typescript package.',
    )
    .argument('<target>', 'for example ./examples/my-flow.ts:main or my-package/flows:main')
    .option('--budget <usd>', BUDGET_HELP, parseBudgetUsd)
    .option('--network <policy>', NETWORK_HELP, parseNetworkFlag)
    .option('--no-sandbox', NO_SANDBOX_HELP)
    .addOption(outputFormatOption())
    .option('--model <name>', MODEL_HELP, parseModel)
    .addHelpText(
      'after',
      '\nExample:\n  flower run ./examples/my-flow.ts:main\n  flower -w /tmp/proj -T run ./flows.js:nightly',
    )
    .action(
      async (target: string, flags: { budget?: number } & SandboxFlags & MachineFlags, command: Command) => {
        const { runWorkflow } = await import('./run-action.js');
        await runWorkflow(target, globalOptions(command), flags.budget, flags);
      },
    );
}
