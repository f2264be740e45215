/**
 * What an output leaked of the hostile payloads (hostile-payloads.ts), said so that a failing
 * assertion names the output and the thing: "report --json $.steps[0].step: raw control U+001B
 * (ESC) in «work␛]0;…»", "CLAUDE.md: secret github (ghp_R4nd…)".
 */
import { HOSTILE_SECRETS, RAW_CONTROL, secretCore } from './hostile-payloads.js';

const CONTROL_NAMES: Record<number, string> = {
  0: 'NUL',
  7: 'BEL',
  8: 'BS',
  9: 'TAB',
  13: 'CR',
  27: 'ESC',
  127: 'DEL',
  155: 'CSI',
  157: 'OSC',
  8238: 'RLO',
};

function context(text: string, at: number, length: number): string {
  const before = text.slice(Math.max(0, at - 30), at);
  const after = text.slice(at + length, at + length + 30);
  return JSON.stringify(`${before}«${text.slice(at, at + length)}»${after}`);
}

/** Every secret core and raw control in `text`, each a line naming `output`. */
export function leaksIn(output: string, text: string): string[] {
  const found: string[] = [];
  for (const [name, secret] of Object.entries(HOSTILE_SECRETS)) {
    const core = secretCore(secret);
    const at = text.indexOf(core);
    if (at >= 0) found.push(`${output}: secret ${name} in clear at ${at}: ${context(text, at, core.length)}`);
  }
  const controls = new RegExp(RAW_CONTROL.source, 'g');
  const seen = new Set<number>();
  for (const match of text.matchAll(controls)) {
    const code = match[0].codePointAt(0) ?? 0;
    if (seen.has(code)) continue;
    seen.add(code);
    const name = CONTROL_NAMES[code] ?? '';
    const where = match.index ?? 0;
    found.push(
      `${output}: raw control U+${code.toString(16).toUpperCase().padStart(4, '0')}${name ? ` (${name})` : ''} at ${where}: ${context(text, where, 1)}`,
    );
  }
  return found;
}

/** Every string of a parsed JSON value, keys too, each with its path (`$.steps[0].step`). */
export function jsonStrings(value: unknown, at = '$'): Array<[path: string, text: string]> {
  if (typeof value === 'string') return [[at, value]];
  if (Array.isArray(value)) return value.flatMap((item, index) => jsonStrings(item, `${at}[${index}]`));
  if (typeof value === 'object' && value !== null)
    return Object.entries(value).flatMap(([key, field]) => [
      [`${at} (key)`, key] as [string, string],
      ...jsonStrings(field, `${at}.${key}`),
    ]);
  return [];
}

/**
 * Leaks of a JSON document: its text (C1 and bidi characters stay raw in JSON) and every string it
 * holds once parsed (C0 controls are `\u001b` in the text but raw in the string a reader gets).
 */
export function jsonLeaksIn(output: string, json: string): string[] {
  const found = leaksIn(output, json);
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (error) {
    return [...found, `${output}: not JSON (${(error as Error).message})`];
  }
  for (const [path, text] of jsonStrings(parsed)) found.push(...leaksIn(`${output} ${path}`, text));
  return found;
}

/**
 * Leaks of JSON lines (`log --format jsonl`): the bytes as printed, and that each line parses. The
 * strings inside are the stored data (a parser gives back the ESC that the line carries as the
 * inert text `\u001b`); only secrets must be gone from them, which the bytes already show.
 */
export function jsonLinesLeaksIn(output: string, lines: string): string[] {
  const found = leaksIn(output, lines);
  lines
    .split('\n')
    .filter((line) => line.trim() !== '')
    .forEach((line, index) => {
      try {
        JSON.parse(line);
      } catch (error) {
        found.push(`${output} line ${index + 1}: not JSON (${(error as Error).message})`);
      }
    });
  return found;
}

/**
 * What a terminal received, without the controls flower's own terminal code may send (SGR colours,
 * `\r` + erase-in-line, one line up, columns left) and the `\r` a pty adds before each newline:
 * what remains must hold no control at all.
 */
export function withoutOwnControls(raw: string): string {
  return raw
    .replace(/\r\n/g, '\n')
    .replace(/\x1b\[[0-9;]*m/g, '')
    .replace(/\r\x1b\[K/g, '')
    .replace(/\x1b\[1A/g, '')
    .replace(/\x1b\[\d+D/g, '');
}
