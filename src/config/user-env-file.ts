/**
 * Updating the per-user credentials file (`${XDG_CONFIG_HOME:-~/.config}/flower/.env`) that
 * `flower setup` writes.
 *
 * Invariants:
 * - Only the keys being set or removed change; every other line (unrelated keys, comments, blank
 *   lines) is kept verbatim and in place. The reference overwrote the whole file, losing them.
 * - A key that appears more than once ends up once, where it first was.
 * - The file is replaced atomically and is readable by its owner only (0600), directory 0700 when
 *   created: it holds a secret.
 * - A value is written only if reading it back gives the same value, so nothing is stored that the
 *   parser would silently change.
 */
import { readFileSync } from 'node:fs';
import { writeFileAtomic } from './atomic-file.js';
import { keyOfLine, parseDotenv } from './dotenv-parser.js';

/** Key → new value, or `null` to remove the key. */
export type EnvFileUpdates = Record<string, string | null>;

const HEADER = [
  '# flower credentials, written by `flower setup`. Keep this file private; never commit it.',
  '# One KEY=VALUE per line: no `export`, no comments after a value, no $VARIABLES.',
  '',
];

/** Why `value` cannot be stored as-is under the `.env` rules, or undefined when it can. */
export function unstorableReason(value: string): string | undefined {
  if (/[\r\n]/.test(value)) return 'it spans several lines';
  if (value !== value.trim()) return 'it starts or ends with a blank';
  if (/^['"]|['"]$/.test(value)) return 'it starts or ends with a quote character';
  return undefined;
}

/** The file text after applying `updates` to `existing` (undefined when there is no file yet). */
export function updateEnvFileText(existing: string | undefined, updates: EnvFileUpdates): string {
  for (const [key, value] of Object.entries(updates)) {
    const reason = value === null ? undefined : unstorableReason(value);
    if (reason) throw new Error(`cannot store ${key}: ${reason}`);
  }
  const placed = new Set<string>();
  const lines: string[] = [];
  const existingLines = existing === undefined ? HEADER : existing.replace(/\r?\n$/, '').split(/\r?\n/);
  for (const line of existingLines) {
    const key = keyOfLine(line);
    if (key === undefined || !(key in updates)) {
      lines.push(line);
      continue;
    }
    if (placed.has(key)) continue;
    placed.add(key);
    const value = updates[key];
    if (value !== null && value !== undefined) lines.push(`${key}=${value}`);
  }
  for (const [key, value] of Object.entries(updates)) {
    if (!placed.has(key) && value !== null) lines.push(`${key}=${value}`);
  }
  return `${lines.join('\n')}\n`;
}

/** The values a `.env` file holds (first occurrence per key), or an empty object when it is absent. */
export function readEnvFileValues(path: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return {};
  }
  const values: Record<string, string> = {};
  for (const entry of parseDotenv(text).entries) if (!(entry.key in values)) values[entry.key] = entry.value;
  return values;
}

/** Applies `updates` to the file at `path`, creating it (and its directory) if needed. */
export function saveEnvFile(path: string, updates: EnvFileUpdates): void {
  let existing: string | undefined;
  try {
    existing = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  writeFileAtomic(path, updateEnvFileText(existing, updates), { mode: 0o600, directoryMode: 0o700 });
}
