/**
 * `flower gc`: the command's flags and help. The implementation (`gc-action.ts`) takes the task's
 * lock and opens its session stores, so it is imported only when the command runs.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { globalOptions } from '../command-line/global-options.js';
import type { GcFlags } from './gc-action.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
export const DEFAULT_OLDER_THAN = '30d';

/** `30d`, `12h` → milliseconds. A whole number (0 included) and a unit; nothing else. */
export function parseAge(value: string): number {
  const match = /^(\d{1,6})([dh])$/.exec(value.trim());
  if (match === null)
    throw new InvalidArgumentError('give a whole number of days or hours, e.g. --older-than 30d or 12h.');
  return Number(match[1]) * (match[2] === 'd' ? DAY_MS : HOUR_MS);
}

const HELP_AFTER = `
What it drops (each only when last written before the --older-than limit):
  retired handoff generations  sessions a handoff replaced (the step continues in its successor)
  aside runs                   the transcripts of side questions (? …), kept in <run-dir>/aside/
  archived tasks               the sessions of tasks that \`flower go --new\` archived into notes/archive/

What it never drops: a session any lineage of the task still resumes, one an in-flight marker
names, one it cannot tell the kind of, and anything newer than the limit. Manifest rows are the
books (spend, report, budget): they are kept, so \`flower report\` and \`flower status\` add up the
same after gc. Notes, handoff documents and the workbench are not touched. A SQLite file keeps the
space it freed for new entries; it does not shrink.

With a PostgreSQL store (--store or FLOWER_STORE_URL) the sessions there are collected too. gc
refuses to run while another flower holds the task, on this machine or another; stop it, or run gc
when it has finished.

Examples:
  flower gc --dry-run            what would go, nothing changed
  flower gc --older-than 7d      drop what no resume can reach and is older than a week`;

export function registerGc(program: Command): void {
  program
    .command('gc')
    .description(
      'drop stored sessions no resume can reach any more (retired handoff generations, aside runs, archived tasks) older than a limit; keeps the books',
    )
    .option(
      '--older-than <age>',
      `only what was last written longer ago than this: Nd or Nh (default ${DEFAULT_OLDER_THAN})`,
      parseAge,
    )
    .option('--dry-run', 'show what would be dropped; change nothing')
    .addHelpText('after', HELP_AFTER)
    .action(async (flags: GcFlags, command: Command) => {
      const { runGc } = await import('./gc-action.js');
      await runGc(flags, globalOptions(command));
    });
}
