/**
 * The spill record of a transcript: which spill file holds each of its large results, by
 * tool_use id, kept beside the spill files (`<spill dir>/records/<16 hex of the store key's
 * SHA-256>.tsv`, one `id<TAB>chars<TAB>name` line per result). The rewriting store appends to it
 * as it spills results behind their append and reads it once per resume, so the thousands of
 * results a ten-hour transcript points at are not hashed again on every resume (measured: hashing
 * them was the largest single cost of a resume after parsing the rows).
 *
 * Invariants:
 * - A cache, never the truth: the spill writer uses a line only when its length matches the
 *   result and its file exists. A missing, truncated or foreign line costs one hash, nothing else,
 *   and a record that cannot be read or written is the same as none.
 * - One file per transcript, so a resume reads only its own lines however many sessions the
 *   workspace has had.
 * - Lines are appended (O_APPEND) in one write per call, so concurrent writers interleave whole
 *   lines; a torn last line after a crash is skipped when read.
 */
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { SpilledName } from './spill.js';
import { hash } from './spill.js';

function recordFile(spillDirectory: string, storeKey: string): string {
  return path.join(spillDirectory, 'records', `${hash(storeKey).slice(0, 16)}.tsv`);
}

/** What the record of `storeKey` says, by tool_use id (empty when there is none). */
export function readSpillRecord(spillDirectory: string, storeKey: string): Map<string, SpilledName> {
  const recorded = new Map<string, SpilledName>();
  let text: string;
  try {
    text = readFileSync(recordFile(spillDirectory, storeKey), 'utf8');
  } catch {
    return recorded;
  }
  for (const line of text.split('\n')) {
    const [id, chars, name, ...rest] = line.split('\t');
    if (rest.length > 0 || id === undefined || name === undefined || !/^[0-9a-f]{16}\.txt$/.test(name))
      continue;
    const length = Number(chars);
    if (Number.isInteger(length) && length >= 0) recorded.set(id, { name, chars: length });
  }
  return recorded;
}

/** Add lines to the record of `storeKey`; a failure only means the next resume hashes them. */
export function appendSpillRecord(
  spillDirectory: string,
  storeKey: string,
  lines: ReadonlyArray<readonly [string, SpilledName]>,
): void {
  if (lines.length === 0) return;
  const file = recordFile(spillDirectory, storeKey);
  const text = lines
    .filter(([id]) => !/[\t\n]/.test(id))
    .map(([id, spilled]) => `${id}\t${spilled.chars}\t${spilled.name}\n`)
    .join('');
  try {
    mkdirSync(path.dirname(file), { recursive: true });
    appendFileSync(file, text, 'utf8');
  } catch {
    // The spill files themselves are what matters; without the record a resume hashes instead.
  }
}
