/**
 * GNU find as a glance: starting points, then an expression of tests and printing actions only.
 *
 * Invariants:
 * - The expression is walked token by token the way find reads it; every primary must be listed
 *   below with its exact number of arguments, so an argument can never be mistaken for a primary
 *   (or the other way round). `-delete`, `-exec`, `-execdir`, `-ok`, `-okdir`, `-fprint`,
 *   `-fprint0`, `-fprintf`, `-fls` and `-files0-from` are simply not listed.
 * - Patterns (unquoted `*`, `?`, `[`) may stand only among the starting points, which find only
 *   lists; in the expression they are refused (bash would expand `-name *.ts` against the
 *   working directory).
 */
import type { Word } from './command-line.js';
import type { ArgumentCheck } from './options.js';
import { namedPath } from './paths.js';

/** Primaries without arguments. */
const NO_ARGUMENT = new Set([
  '-print',
  '-print0',
  '-ls',
  '-prune',
  '-quit',
  '-true',
  '-false',
  '-empty',
  '-readable',
  '-writable',
  '-executable',
  '-nouser',
  '-nogroup',
  '-depth',
  '-mount',
  '-xdev',
  '-noleaf',
  '-daystart',
  '-follow',
  '-ignore_readdir_race',
  '-noignore_readdir_race',
  '-nowarn',
  '-warn',
  '-not',
  '-a',
  '-and',
  '-o',
  '-or',
  '!',
  '(',
  ')',
  ',',
]);

/** Primaries with one argument (a pattern, number, type, name or format — never a file written). */
const ONE_ARGUMENT = new Set([
  '-name',
  '-iname',
  '-path',
  '-ipath',
  '-wholename',
  '-iwholename',
  '-regex',
  '-iregex',
  '-lname',
  '-ilname',
  '-type',
  '-xtype',
  '-size',
  '-mtime',
  '-mmin',
  '-atime',
  '-amin',
  '-ctime',
  '-cmin',
  '-used',
  '-perm',
  '-user',
  '-group',
  '-uid',
  '-gid',
  '-links',
  '-inum',
  '-samefile',
  '-newer',
  '-anewer',
  '-cnewer',
  '-maxdepth',
  '-mindepth',
  '-regextype',
  '-printf',
  '-fstype',
]);

/** `-newerXY REF` compares against another file's time. */
const NEWER_XY = /^-newer[aBcmt][aBcmt]$/;

export const findReadsOnly: ArgumentCheck = (args: readonly Word[]) => {
  let index = 0;
  // Leading options: symlink handling, then -D debug options and -O levels.
  while (index < args.length) {
    const text = (args[index] as Word).text;
    if (text === '-H' || text === '-L' || text === '-P' || /^-O[0-3]$/.test(text)) index += 1;
    else break;
  }
  // Starting points: everything up to the first word that begins the expression.
  while (index < args.length) {
    const word = args[index] as Word;
    if (word.text.startsWith('-') || word.text === '(' || word.text === '!' || word.text === ',') break;
    if (!namedPath(word)) return false;
    index += 1;
  }
  while (index < args.length) {
    const word = args[index] as Word;
    if (word.globAt.length > 0) return false;
    if (NO_ARGUMENT.has(word.text)) {
      index += 1;
    } else if (ONE_ARGUMENT.has(word.text) || NEWER_XY.test(word.text)) {
      const argument = args[index + 1];
      if (argument === undefined || argument.globAt.length > 0) return false;
      index += 2;
    } else {
      return false;
    }
  }
  return true;
};
