/**
 * The global flags (`-w -r -v -W -T`): registered once on the program, valid before or after the
 * subcommand, and read by every command through `globalOptions`.
 *
 * Invariants:
 * - `-r/--run-dir` resolves against the workspace, not the shell's directory, so `flower -w /proj`
 *   keeps `runs/` and `.flower/` together (the reference split them).
 * - `-w`/`-r` never take an option as their value (`-w --new` is a missing directory, exit 2), and a
 *   path that is, or lies under, an existing file is refused with one line naming the file (exit 2)
 *   before anything tries to create it (it used to surface as a raw ENOTDIR or EEXIST).
 */
import { statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { UsageError } from './exit-errors.js';
import { parseDirectory } from './flag-values.js';

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
  /** `--store URL`: where the task state is also kept (wins over FLOWER_STORE_URL). */
  store?: string;
}

export function addGlobalOptions(program: Command): Command {
  return program
    .option(
      '-w, --workspace <dir>',
      "the agent's working directory (created if missing)",
      parseDirectory,
      '.',
    )
    .option(
      '-r, --run-dir <dir>',
      'where sessions, manifest and lineage go; relative to the workspace',
      parseDirectory,
      'runs',
    )
    .option('-v, --verbose', 'also show subagent text, tool results, prompts and the effective settings')
    .option('-W, --workbench', 'give `once` and `run` a workbench at <run-dir>/workbench/')
    .option(
      '-T, --trim',
      'run: on resume, replace old large tool results with pointers to files (go and once do unless --no-trim)',
    )
    .option(
      '--store <url>',
      'also keep the task state in PostgreSQL (postgres://user:password@host/db); overrides FLOWER_STORE_URL',
    );
}

/** The nearest existing path at or above `path` when it is not a directory (a file in the way). */
export function fileInTheWay(path: string): string | undefined {
  for (let current = path; ; current = dirname(current)) {
    let stats: ReturnType<typeof statSync> | undefined;
    try {
      stats = statSync(current);
    } catch {
      // Does not exist (yet): it will be created, if what is above it is a directory.
    }
    if (stats) return stats.isDirectory() ? undefined : current;
    if (dirname(current) === current) return undefined;
  }
}

function requireDirectory(flag: string, typed: string, path: string): void {
  const file = fileInTheWay(path);
  if (file === undefined) return;
  const where = file === path ? `${path} is a file` : `${file} is a file, so ${path} cannot be created`;
  throw new UsageError(
    `${flag} ${typed}: ${where}. Give a directory (it is created if missing), or move the file.`,
  );
}

/** The global flags as seen from `command` (a subcommand or the program itself), paths resolved. */
export function globalOptions(command: Command, cwd: string = process.cwd()): GlobalOptions {
  const raw = command.optsWithGlobals<{
    workspace?: string;
    runDir?: string;
    verbose?: boolean;
    workbench?: boolean;
    trim?: boolean;
    store?: string;
  }>();
  const workspace = resolve(cwd, raw.workspace ?? '.');
  const runDir = resolve(workspace, raw.runDir ?? 'runs');
  requireDirectory('-w', raw.workspace ?? '.', workspace);
  requireDirectory('-r', raw.runDir ?? 'runs', runDir);
  return {
    workspace,
    runDir,
    verbose: raw.verbose ?? false,
    workbench: raw.workbench ?? false,
    trim: raw.trim ?? false,
    ...(raw.store === undefined ? {} : { store: raw.store }),
  };
}
