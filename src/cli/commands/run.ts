/**
 * `flower run <file-or-module>:<export>`: run a workflow the user wrote against the public API,
 * with the same terminal UI as `go` (questions, mail, asides, Ctrl-C, the final cost line).
 *
 * Invariants:
 * - The target's shape is checked first; credentials before the user's module is imported (importing may build roles,
 *   channels and workbenches; none of that should happen for a run that cannot start).
 * - Every malformed target exits 1 with one line saying what to type instead (workflow-target.ts).
 * - `-T` turns trimming on and `-W` gives the run a workbench when the workflow has none; handoff
 *   uses its defaults.
 */
import type { Command } from 'commander';
import { loadEnvironment } from '../../config/env-chain.js';
import { ensureCredentials } from '../credentials-gate.js';
import { drive } from '../drive.js';
import { globalOptions } from '../global-options.js';
import { Terminal } from '../terminal.js';
import { loadWorkflow, parseTarget } from '../workflow-target.js';
import { settingsLines } from './once.js';

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
    .addHelpText(
      'after',
      '\nExample:\n  flower run ./examples/my-flow.ts:main\n  flower -w /tmp/proj -T run ./flows.js:nightly',
    )
    .action(async (target: string, _flags: unknown, command: Command) => {
      const global = globalOptions(command);
      // A target that cannot be right is reported before anything else is looked at.
      parseTarget(target);
      loadEnvironment();
      if (global.verbose) for (const line of settingsLines()) process.stderr.write(`${line}\n`);
      await ensureCredentials({
        interactive: Boolean(process.stdin.isTTY && process.stdout.isTTY),
        say: (line) => process.stdout.write(`${line}\n`),
      });
      const workflow = await loadWorkflow(target);
      await drive({
        workflow,
        global,
        terminal: new Terminal({ input: process.stdin, output: process.stdout }),
        trim: global.trim,
        handoff: true,
        interactive: true,
        color: Boolean(process.stdout.isTTY),
      });
    });
}
