/**
 * flower's block in a file people also write in (`CLAUDE.md`, `AGENTS.md`): a marked region that
 * flower replaces on every task end and nothing else.
 *
 * Invariants (the reference's rules for the managed block):
 * - Replace only inside exactly one clean marker pair (one begin, one end, begin first): the text
 *   before and after it is kept, only the blank lines next to the block are normalised.
 * - Anything else — no markers, an orphan marker, several pairs, the wrong order — means flower
 *   cannot tell which part is its own: the block is appended after the content. User content is
 *   never deleted.
 * - Idempotent: placing the same body twice gives identical bytes.
 * - The body can never close or open a block itself: marker-like comments in it are removed.
 * - `placeBlock` is pure (property-tested); `writeManagedFile` is the only I/O.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export const BLOCK_BEGIN =
  '<!-- flower:begin — written by flower when a task ends; running flower again replaces this block; write your own notes outside the markers -->';
export const BLOCK_END = '<!-- flower:end -->';

const BEGIN_PATTERN = /<!--\s*flower:begin\b[\s\S]*?-->/g;
const END_PATTERN = /<!--\s*flower:end\s*-->/g;

/** How the block went in: replaced in place, appended (with why), or the file was new or empty. */
export type Placement = 'replaced' | 'appended' | 'created';

export interface Placed {
  readonly text: string;
  readonly placement: Placement;
  /** For `appended` into a file that had markers: what was wrong with them. */
  readonly brokenMarkers?: string;
}

/** The body as it goes between the markers: trimmed, with nothing in it that reads as a marker. */
export function markerFree(body: string): string {
  return body.replace(BEGIN_PATTERN, '').replace(END_PATTERN, '').trim();
}

function block(body: string): string {
  return `${BLOCK_BEGIN}\n${markerFree(body)}\n${BLOCK_END}`;
}

/** Blank lines next to the block are flower's; everything else is the user's. */
const trailingBreaks = (text: string) => text.replace(/[\r\n]+$/, '');
const leadingBreaks = (text: string) => text.replace(/^[\r\n]+/, '');

/** Where `text`'s one clean marker pair is, or why there is none. */
function cleanPair(
  text: string,
): { begin: number; afterBegin: number; end: number; afterEnd: number } | string {
  const begins = [...text.matchAll(BEGIN_PATTERN)];
  const ends = [...text.matchAll(END_PATTERN)];
  if (begins.length === 0 && ends.length === 0) return 'no markers';
  if (begins.length !== 1 || ends.length !== 1)
    return `${begins.length} begin and ${ends.length} end marker${ends.length === 1 ? '' : 's'}`;
  const [begin] = begins as [RegExpExecArray];
  const [end] = ends as [RegExpExecArray];
  if (end.index < begin.index) return 'the end marker comes before the begin marker';
  return {
    begin: begin.index,
    afterBegin: begin.index + begin[0].length,
    end: end.index,
    afterEnd: end.index + end[0].length,
  };
}

/** `existing` (a file's text, or undefined when there is none) with flower's block holding `body`. */
export function placeBlock(existing: string | undefined, body: string): Placed {
  const text = existing ?? '';
  if (text.trim() === '') return { text: `${block(body)}\n`, placement: 'created' };
  const pair = cleanPair(text);
  if (typeof pair === 'string') {
    return {
      text: `${trailingBreaks(text)}\n\n${block(body)}\n`,
      placement: 'appended',
      ...(pair === 'no markers' ? {} : { brokenMarkers: pair }),
    };
  }
  const before = trailingBreaks(text.slice(0, pair.begin));
  const after = trailingBreaks(leadingBreaks(text.slice(pair.afterEnd)));
  const parts = [before, block(body), after].filter((part) => part.trim() !== '');
  return { text: `${parts.join('\n\n')}\n`, placement: 'replaced' };
}

/** The body of the one clean block in `text`, or undefined. */
export function readBlock(text: string): string | undefined {
  const pair = cleanPair(text);
  if (typeof pair === 'string') return undefined;
  return text.slice(pair.afterBegin, pair.end).trim();
}

/** Places the block in the file at `path` (created when missing) and says how. */
export function writeManagedFile(path: string, body: string): Placed {
  let existing: string | undefined;
  try {
    existing = readFileSync(path, 'utf8');
  } catch {
    existing = undefined;
  }
  const placed = placeBlock(existing, body);
  if (placed.text !== existing) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, placed.text);
  }
  return placed;
}
