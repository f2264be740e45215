/**
 * The global flags (`-w -r -v -W -T`): registered once on the program, valid before or after the
 * subcommand, and read by every command through `globalOptions`.
 *
 * `-r/--run-dir` resolves against the workspace, not the shell's directory, so `flower -w /proj`
 * keeps `runs/` and `.flower/` together (the reference split them).
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';

export interface GlobalOptions {
  /** Absolute workspace (the agent's working directory). */
  workspace: string;
  /** Absolute run directory (sessions.db, manifest.json, lineage.json). */
  runDir: string;
  verbose: boolean;
  /** `-W`: a workbench at `<run dir>/workbench/` for `once` and `run`. */
  workbench: boolean;
  /** `-T`: on resume, replace old large tool results with file pointers. */
  trim: boolean;
}

export function addGlobalOptions(program: Command): Command {
  return program
    .option('-w, --workspace <dir>', "the agent's working directory (created if missing)", '.')
    .option(
      '-r, --run-dir <dir>',
      'where sessions, manifest and lineage go; relative to the workspace',
      'runs',
    )
    .option('-v, --verbose', 'also show subagent text, tool results, prompts and the effective settings')
    .option('-W, --workbench', 'give `once` and `run` a workbench at <run-dir>/workbench/')
    .option('-T, --trim', 'on resume, replace old large tool results with pointers to files');
}

/** The global flags as seen from `command` (a subcommand or the program itself), paths resolved. */
export function globalOptions(command: Command, cwd: string = process.cwd()): GlobalOptions {
  const raw = command.optsWithGlobals<{
    workspace?: string;
    runDir?: string;
    verbose?: boolean;
    workbench?: boolean;
    trim?: boolean;
  }>();
  const workspace = resolve(cwd, raw.workspace ?? '.');
  return {
    workspace,
    runDir: resolve(workspace, raw.runDir ?? 'runs'),
    verbose: raw.verbose ?? false,
    workbench: raw.workbench ?? false,
    trim: raw.trim ?? false,
  };
}
