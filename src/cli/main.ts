/**
 * The `flower` command. This file only assembles the command tree and maps outcomes to exit
 * codes. Each subcommand registers its flags and help in `src/cli/commands/<name>.ts` and imports
 * its implementation (`<name>-action.ts`) only when it runs, so `--version`, `--help` and the light
 * commands never load the SDK, the workflow layer or the native SQLite binding.
 *
 * The rooms of `cli/`:
 * - `command-line/`: reading argv (the default command, the global flags);
 * - `commands/`: one registration module and one action module per command, with what only that
 *   command uses (the `run` target loader, the demo's script);
 * - `interaction/`: a person and a running workflow (the driver, typed input, asides, the gate);
 * - `terminal/`: the screen itself (renderer, bottom prompt, line editor, text width, formats).
 *
 * Exit codes: 0 success, 1 a failure with a one-line reason (never a stack trace),
 * 2 bad usage, 130 interrupted.
 */

import { Command, CommanderError } from 'commander';
import { writeErr } from '../output/sink.js';
import { packageVersion } from '../version.js';
import { shapeOf, withDefaultCommand } from './command-line/default-command.js';
import { EXIT, InterruptedError, UsageError } from './command-line/exit-errors.js';
import { addGlobalOptions } from './command-line/global-options.js';
import { knownNames, mistypedCommandMessage } from './command-line/mistyped-command.js';
import { programHelpAfter } from './command-line/program-help.js';
import { registerDemo } from './commands/demo.js';
import { registerDoctor } from './commands/doctor.js';
import { registerGc } from './commands/gc.js';
import { registerGo } from './commands/go.js';
import { registerLog } from './commands/log.js';
import { registerOnce } from './commands/once.js';
import { registerReport } from './commands/report.js';
import { registerRun } from './commands/run.js';
import { registerSetup } from './commands/setup.js';
import { registerStatus } from './commands/status.js';
import { startUpdateNotice } from './update-notice.js';

export function buildProgram(): Command {
  const program = new Command('flower')
    .description(
      // commander wraps help text to the terminal itself; a hard line break here would break it twice.
      'Carry one long task with Claude Code: clarify it, work on it with a coordinator and workers, ' +
        'have an independent judge rule whether it is done, and resume after any interruption. ' +
        'Without a command, `flower [request]` means `flower go [request]`.',
    )
    .version(packageVersion, '-V, --version', 'print the flower version')
    .showHelpAfterError('(run "flower --help" for usage)')
    .addHelpText('after', programHelpAfter())
    .exitOverride();
  registerGo(program);
  registerRun(program);
  registerSetup(program);
  registerDoctor(program);
  addGlobalOptions(program);
  registerOnce(program);
  registerDemo(program);
  registerStatus(program);
  registerReport(program);
  registerLog(program);
  registerGc(program);
  return program;
}

/**
 * Refuses a one-word request that is (nearly) a command name, when `go` was implied rather than
 * typed: `flower stauts` must not become a paid task on the word "stauts".
 */
function refuseMistypedCommands(program: Command, goImplied: boolean): void {
  if (!goImplied) return;
  const names = knownNames(program);
  program.hook('preAction', (_program, action) => {
    if (action.name() !== 'go') return;
    const [words] = action.processedArgs as [string[] | undefined];
    const message = mistypedCommandMessage(words ?? [], names);
    if (message !== undefined) throw new UsageError(message);
  });
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  // Shows a due update notice and refreshes the check in the background; never waited for.
  void startUpdateNotice();
  try {
    // `flower "do X"` means `flower go "do X"`; the rewrite reads the flags from the program itself.
    const rewritten = withDefaultCommand(argv, shapeOf(program));
    refuseMistypedCommands(program, rewritten.length > argv.length);
    await program.parseAsync(rewritten, { from: 'user' });
    return EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Commander already printed help/version/usage errors; map them onto our exit codes.
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return EXIT.ok;
      if (error.code === 'commander.help') return EXIT.ok;
      return EXIT.usage;
    }
    // Loaded only now: a failing command may quote a value (masked, sanitised) in its one line.
    const { errorLine } = await import('./terminal/shown-text.js');
    writeErr(`${errorLine(error)}\n`);
    if (error instanceof UsageError) return EXIT.usage;
    if (error instanceof InterruptedError) return EXIT.interrupted;
    return EXIT.failed;
  }
}
