/**
 * The `.env` parser: the reference's deliberately tiny rules, reproduced exactly, plus a separate
 * pass that points out where those rules silently produce something the author did not mean.
 *
 * Rules (part of the spec; do not "fix" them, users' files depend on them):
 * - each line is trimmed; blank lines, lines starting with `#` and lines without `=` are skipped;
 * - the rest is split at the FIRST `=`; key and value are trimmed;
 * - every leading and trailing `'` / `"` character is stripped from the value, paired or not;
 * - nothing else: no `export`, no inline comments, no `$VAR` expansion, no multi-line values.
 *
 * Invariant: `parseDotenv(text).entries` depends only on those rules; the pitfall pass never changes
 * what is parsed, it only explains it (so `flower doctor` and the runtime always agree on values).
 */

/** One `KEY=VALUE` line as the rules read it. */
export interface DotenvEntry {
  key: string;
  value: string;
  /** 1-based line number, so warnings can point at the exact line to edit. */
  line: number;
}

export type DotenvPitfallKind =
  | 'export-prefix'
  | 'inline-comment'
  | 'variable-reference'
  | 'multiline-value'
  | 'unpaired-quote'
  | 'duplicate-key'
  | 'ignored-line'
  | 'empty-key'
  | 'lowercase-key';

/** A line whose meaning under the rules probably differs from what its author intended. */
export interface DotenvPitfall {
  kind: DotenvPitfallKind;
  /** 1-based line the problem starts on. */
  line: number;
  /** The key as parsed, when the line has one. */
  key?: string;
  /** What happens and what to do instead, in one sentence. */
  message: string;
}

export interface ParsedDotenv {
  /** Every parsed line, in file order; a repeated key appears more than once (the first one wins). */
  entries: DotenvEntry[];
  pitfalls: DotenvPitfall[];
}

const QUOTES = `'"`;

/** Strips every leading and trailing quote character, like Python's `str.strip("'\"")`. */
function stripQuotes(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && QUOTES.includes(value[start]!)) start++;
  while (end > start && QUOTES.includes(value[end - 1]!)) end--;
  return value.slice(start, end);
}

/** The prefixes of every variable flower, the SDK or Claude Code reads. */
const READ_PREFIX = /^(anthropic|claude|flower)_/i;

/**
 * `anthropic_api_key=…`: a name that means one of the variables flower reads, but not in capitals.
 * Names are case-sensitive, so it sets a variable nobody reads; no program reads such a name in
 * lower case, so every one is a mistake.
 */
export function isMiscasedName(key: string): boolean {
  return READ_PREFIX.test(key) && key !== key.toUpperCase();
}

interface RawLine {
  line: number;
  text: string;
}

/** Applies the rules to one trimmed line; `undefined` when the rules skip it. */
function parseLine(text: string): { key: string; rawValue: string } | undefined {
  if (text === '' || text.startsWith('#')) return undefined;
  const equals = text.indexOf('=');
  if (equals < 0) return undefined;
  return { key: text.slice(0, equals).trim(), rawValue: text.slice(equals + 1).trim() };
}

/** The key a line sets under the rules, or undefined for comments, blanks and lines without `=`. */
export function keyOfLine(line: string): string | undefined {
  const key = parseLine(line.trim())?.key;
  return key === '' ? undefined : key;
}

export function parseDotenv(text: string): ParsedDotenv {
  const lines: RawLine[] = text
    .split(/\r?\n|\r/)
    .map((raw, index) => ({ line: index + 1, text: raw.trim() }));
  const entries: DotenvEntry[] = [];
  for (const { line, text: trimmed } of lines) {
    const parsed = parseLine(trimmed);
    // An empty name can never become an environment variable; the pitfall pass reports it.
    if (parsed === undefined || parsed.key === '') continue;
    entries.push({ key: parsed.key, value: stripQuotes(parsed.rawValue), line });
  }
  return { entries, pitfalls: findPitfalls(lines) };
}

/**
 * The quoted value opened on `start` is not closed on that line: find the line that closes it.
 * Returns the closing line's index, or -1 when the quote is never closed.
 */
function findClosingLine(lines: RawLine[], start: number, quote: string): number {
  for (let index = start + 1; index < lines.length; index++) {
    if (lines[index]!.text.endsWith(quote)) return index;
  }
  return -1;
}

function findPitfalls(lines: RawLine[]): DotenvPitfall[] {
  const pitfalls: DotenvPitfall[] = [];
  const firstLineOfKey = new Map<string, number>();
  // Lines swallowed by a multi-line value are explained by that one warning, not one each.
  let continuationUntil = -1;

  for (let index = 0; index < lines.length; index++) {
    const { line, text } = lines[index]!;
    const inContinuation = index <= continuationUntil;
    const parsed = parseLine(text);

    if (parsed === undefined) {
      if (!inContinuation && text !== '' && !text.startsWith('#')) {
        pitfalls.push({
          kind: 'ignored-line',
          line,
          message: `line ${line} has no "=" and is ignored; write it as KEY=VALUE or start it with #`,
        });
      }
      continue;
    }
    const { key, rawValue } = parsed;
    if (key === '') {
      pitfalls.push({
        kind: 'empty-key',
        line,
        message: `line ${line} has nothing before "=" and is ignored`,
      });
      continue;
    }

    const exportMatch = /^export\s+(\S+)$/.exec(key);
    if (exportMatch) {
      pitfalls.push({
        kind: 'export-prefix',
        line,
        key,
        message: `sets a variable literally named "${key}", not ${exportMatch[1]}; remove "export "`,
      });
    }

    if (isMiscasedName(key)) {
      pitfalls.push({
        kind: 'lowercase-key',
        line,
        key,
        message: `sets "${key}", which is not ${key.toUpperCase()} (names are case-sensitive); write the name in capitals`,
      });
    }

    const earlier = firstLineOfKey.get(key);
    if (earlier === undefined) firstLineOfKey.set(key, line);
    else {
      pitfalls.push({
        kind: 'duplicate-key',
        line,
        key,
        message: `${key} is already set on line ${earlier}; the first value wins and this line has no effect`,
      });
    }

    const value = stripQuotes(rawValue);
    if (/\s#/.test(rawValue)) {
      pitfalls.push({
        kind: 'inline-comment',
        line,
        key,
        message: `the value of ${key} includes the trailing comment ("${value}"); move the comment to its own line`,
      });
    }
    if (/\$(\{|[A-Za-z_])/.test(rawValue)) {
      pitfalls.push({
        kind: 'variable-reference',
        line,
        key,
        message: `the value of ${key} is taken literally ("${value}"); variables are not expanded, write the value itself`,
      });
    }

    const opening = rawValue[0] ?? '';
    const closing = rawValue[rawValue.length - 1] ?? '';
    const opensQuote = QUOTES.includes(opening) && opening !== '';
    const closesQuote = QUOTES.includes(closing) && closing !== '';
    const unclosed = opensQuote && (rawValue.length === 1 || closing !== opening);
    if (unclosed) {
      const closingIndex = findClosingLine(lines, index, opening);
      if (closingIndex >= 0) {
        continuationUntil = closingIndex;
        pitfalls.push({
          kind: 'multiline-value',
          line,
          key,
          message:
            `the quoted value of ${key} continues on lines ${line + 1}-${lines[closingIndex]!.line}; ` +
            `only "${value}" is used and the following lines are read on their own. Put the value on one line`,
        });
        continue;
      }
    }
    if (unclosed || (closesQuote && !opensQuote) || (opensQuote && closesQuote && opening !== closing)) {
      pitfalls.push({
        kind: 'unpaired-quote',
        line,
        key,
        message: `the quotes around the value of ${key} do not pair up; all outer quotes are stripped, giving "${value}"`,
      });
    }
  }
  return pitfalls;
}
