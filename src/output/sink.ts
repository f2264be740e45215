/**
 * The one sink every human-facing byte passes through: the terminal (live lines, the status row,
 * prompts, errors), `status`, `report` (text, the string fields of `--json`, the HTML page), `log`
 * (both formats), `doctor`, the bequest block in CLAUDE.md/AGENTS.md, check logs, and the notes
 * flower writes in the workbench (handoff documents, the Q&A log, the index).
 *
 * Invariants ("red lines"):
 * - No secret in clear: credential values and tokens of known shapes are masked (secrets.ts).
 * - No live escape sequence: controls and bidi characters are made visible and inert
 *   (neutralise.ts).
 * - The process's stdout and stderr are reached only through `writeOut`/`writeErr`/`guarded`, whose
 *   last pass masks again and neutralises every control but the few flower's own terminal code
 *   emits (SGR colours, erase-in-line, cursor up and left, and the `\r` before an erase). A view
 *   that forgot `shown` therefore still cannot leak a key or run a title or clipboard sequence.
 *   (test/unit/output/output-paths.test.ts fails on a write that bypasses this module.)
 * - Stored transcripts are not this module's business: they keep what the model saw (a resume is
 *   rebuilt from them); only `flower log --format jsonl --raw` prints them unmasked, and says so.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE } from '../config/private-files.js';
import { neutralise, oneLine } from './neutralise.js';
import { maskSecrets } from './secrets.js';

/** Untrusted text as it may be shown or written for people: secrets masked, controls inert. */
export function shown(text: string): string {
  return maskSecrets(neutralise(text));
}

/** `shown`, on one line (whitespace runs collapse to a space). */
export function shownLine(text: string): string {
  return maskSecrets(oneLine(text));
}

/** A copy of `value` with every string in it (keys too) passed through `text`. */
function mapStrings<T>(value: T, text: (value: string) => string): T {
  if (typeof value === 'string') return text(value) as T;
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, text)) as T;
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, field]) => [text(key), mapStrings(field, text)]),
    ) as T;
  }
  return value;
}

/** A copy of `value` with every string in it (keys too) passed through `shown` (report --json). */
export function shownFields<T>(value: T): T {
  return mapStrings(value, shown);
}

// JSON.stringify escapes C0 controls but leaves C1, the bidi set and U+2028/2029 raw; as `\uXXXX`
// they are still the same string to a JSON parser, and inert on a terminal.
const JSON_UNSAFE = /[\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;

/**
 * One JSON document on one line, secrets masked, every control escaped (`log --format jsonl`).
 * Masked string by string before encoding: in the encoded text a token can sit right after an
 * escape (`\\nghp_…`), and an escaped secret (`\\"` inside it) would no longer match its value.
 */
export function shownJsonLine(value: unknown): string {
  return JSON.stringify(mapStrings(value, maskSecrets)).replace(
    JSON_UNSAFE,
    (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

// What flower's own terminal code emits: SGR colours (picocolors), erase-in-line, cursor up/left,
// and the carriage return that starts an erase. Nothing else may reach a stream raw.
const OWN_CONTROL = /\x1b\[[0-9;]*[mKAD]|\r(?=\x1b\[)/g;

/** The last pass before a byte reaches stdout/stderr: masked, and inert but for flower's own controls. */
export function guardTerminalText(text: string): string {
  let guarded = '';
  let from = 0;
  for (const match of text.matchAll(OWN_CONTROL)) {
    guarded += neutralise(text.slice(from, match.index)) + match[0];
    from = match.index + match[0].length;
  }
  return maskSecrets(guarded + neutralise(text.slice(from)));
}

export interface TextStream {
  readonly isTTY?: boolean;
  readonly columns?: number;
  write(chunk: string): unknown;
}

/** `stream` behind the last pass: what a `Terminal` or a command writes with. */
export function guarded(stream: TextStream): TextStream {
  return {
    get isTTY() {
      return stream.isTTY;
    },
    get columns() {
      return stream.columns;
    },
    write: (chunk: string) => stream.write(guardTerminalText(chunk)),
  };
}

/** Write to stdout through the last pass. */
export function writeOut(text: string): void {
  process.stdout.write(guardTerminalText(text));
}

/** Write to stderr through the last pass. */
export function writeErr(text: string): void {
  process.stderr.write(guardTerminalText(text));
}

/**
 * Write to stdout exactly as given: only `flower log --format jsonl --raw`, which the user asked
 * for by name and which says so on stderr.
 */
export function writeOutRaw(text: string): void {
  process.stdout.write(text);
}

/**
 * Write a file people read (a check log, a note) through `shown`, private by default: 0600 in a
 * directory created 0700 when missing (check output and notes can quote anything a command saw).
 */
export function writeShownFile(path: string, text: string, mode = PRIVATE_FILE_MODE): void {
  mkdirSync(dirname(path), { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
  writeFileSync(path, shown(text), { mode });
}
