/**
 * flower's block in a file people also write in and commit (`CLAUDE.md`, `AGENTS.md`): a marked
 * region that flower replaces when a task ends, and nothing else.
 *
 * The markers (issue 20, observation 7: the old pattern `<!-- flower:begin … -->` also matched
 * another tool's `<!-- flower:begin other-tool -->` block; flower overwrote it, then appended a new
 * block per task because the file then held "two pairs"):
 *
 *     <!-- flower:begin task=<key> (written by flower when a task ends; … outside this block) -->
 *     …the bequest…
 *     <!-- flower:end task=<key> -->
 *
 * - Each marker is a whole line (`\n` or `\r\n` ends it), written exactly as `blockBegin`/`blockEnd`
 *   write it; the end names the same task as the begin. A line that differs in one character is
 *   the user's (or another tool's) text, never flower's.
 * - `<key>` is the task: its run directory, relative to the workspace when inside it (as the shared
 *   store names tasks, `taskNameOf`), written with `taskKey` in `[A-Za-z0-9._/%-]` (every other
 *   byte percent-encoded), so a name can neither end the comment nor make the line ambiguous.
 * - One block per file, whatever the task: the file tells the next tool how the workspace was left,
 *   and the key says which task left it. A task that ends replaces the block another task wrote.
 * - The previous format (`LEGACY_BLOCK_BEGIN` … `<!-- flower:end -->`) is still flower's, but only
 *   exactly as that version wrote it: the begin line byte for byte (its own sentence, em dash and
 *   all: no other tool writes it), closed by the first bare `<!-- flower:end -->` line after it,
 *   with no marker-like comment in between (that version stripped every one from its bodies). The
 *   bare end line alone proves nothing: another tool's block ends with the same line.
 *
 * Invariants:
 * - A block is a begin line and its end line with no marker-like comment (`<!-- flower:begin`,
 *   `<!-- flower:end`, of any tool) between them, so a block can never reach across another tool's
 *   markers. Bodies are `markerFree`, so flower's own blocks always qualify.
 * - The user's text is everything outside flower's blocks, and it stays byte for byte: never masked,
 *   neutralised, trimmed or re-wrapped. flower writes only its block and the line breaks that set
 *   apart a block it appends; folding duplicates removes its own extra blocks, each with its line
 *   break and the one blank line appending put before it (`removeBlock`). A file of whitespace
 *   only counts as empty.
 * - No block: the block is appended. Several blocks (duplicates an older version appended): the
 *   first is replaced, the others removed, and the caller is told how many (`folded`). Markers of
 *   flower's format that pair with nothing stay where they are (they cannot be told apart from the
 *   user's text) and are reported (`brokenMarkers`).
 * - Idempotent: placing the same body twice gives identical bytes.
 * - Everything inside the block passes through the output sink (`shown`: secrets masked, escape
 *   sequences made visible and inert), because anyone who later runs `cat CLAUDE.md` on a terminal
 *   runs what the block holds (observation 2: a key, a token, a password and live title, clear,
 *   clipboard and hyperlink sequences). `writeManagedFile` applies it; `placeBlock` takes the body
 *   as given.
 * - `placeBlock`, `readBlock`, `flowerBlocks` are pure (property-tested); `writeManagedFile` is the
 *   only I/O.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { shown } from '../output/sink.js';

/** The task key of the default run directory (`runs`). */
export const DEFAULT_TASK_KEY = 'runs';

const BEGIN_NOTE =
  '(written by flower when a task ends; the next task ending here replaces it; keep your own notes outside this block)';

/** `name` (a run directory as the task is named) as it may stand in a marker. */
export function taskKey(name: string): string {
  const bytes = new TextEncoder().encode(name.replace(/\\/g, '/'));
  let key = '';
  for (const byte of bytes) {
    const character = String.fromCharCode(byte);
    key += /[A-Za-z0-9._/-]/.test(character)
      ? character
      : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return key || '.';
}

/** The begin marker of the block of task `key` (a `taskKey`). */
export function blockBegin(key: string = DEFAULT_TASK_KEY): string {
  return `<!-- flower:begin task=${key} ${BEGIN_NOTE} -->`;
}

/** The end marker of the block of task `key`. */
export function blockEnd(key: string = DEFAULT_TASK_KEY): string {
  return `<!-- flower:end task=${key} -->`;
}

/** The markers of the default task (`runs`), as the CLI writes them without `-r`. */
export const BLOCK_BEGIN = blockBegin(DEFAULT_TASK_KEY);
export const BLOCK_END = blockEnd(DEFAULT_TASK_KEY);

/** The begin line of the previous format, exactly as it was written. */
export const LEGACY_BLOCK_BEGIN =
  '<!-- flower:begin — written by flower when a task ends; running flower again replaces this block; write your own notes outside the markers -->';
/** The end line of the previous format: also how another tool's block may end. */
export const LEGACY_BLOCK_END = '<!-- flower:end -->';

const KEY = '[A-Za-z0-9._/%-]+';
const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const BEGIN_LINE = new RegExp(`^<!-- flower:begin task=(${KEY}) ${escaped(BEGIN_NOTE)} -->$`);
const END_LINE = new RegExp(`^<!-- flower:end task=(${KEY}) -->$`);

/** Any marker-like comment of any tool, complete on one line (removed from bodies). */
const MARKER_COMMENT = /<!--\s*flower:(?:begin|end)\b[^\n]*?-->/g;
/** What opens one, complete or not (removed from bodies; ends a block's search). */
const MARKER_OPENER = /<!--\s*(?=flower:(?:begin|end)\b)/g;
const HOLDS_MARKER = /<!--\s*flower:(?:begin|end)\b/;

/** How the block went in: replaced in place, appended, or the file was new or blank. */
export type Placement = 'replaced' | 'appended' | 'created';

export interface Placed {
  readonly text: string;
  readonly placement: Placement;
  /** flower's own markers that pair with nothing, left as they were: what they are. */
  readonly brokenMarkers?: string;
  /** How many more of flower's blocks the file held, removed in favour of the first. */
  readonly folded?: number;
}

/** One of flower's blocks found in a text. */
export interface FoundBlock {
  /** The task its markers name; undefined for the previous format, which named none. */
  readonly task: string | undefined;
  /** Its body, trimmed, with `\r\n` read as `\n`. */
  readonly body: string;
  /** Where its begin line starts. */
  readonly start: number;
  /** Where its end marker ends (before the line break that follows it). */
  readonly end: number;
}

/**
 * The body as it goes between the markers: trimmed, with nothing in it that reads as a marker of
 * any tool (removed until none is left, so removing one cannot join the pieces of another).
 */
export function markerFree(body: string): string {
  let text = body;
  let before: string;
  do {
    before = text;
    text = text.replace(MARKER_COMMENT, '').replace(MARKER_OPENER, '');
  } while (text !== before);
  return text.trim();
}

function block(body: string, key: string): string {
  return `${blockBegin(key)}\n${markerFree(body)}\n${blockEnd(key)}`;
}

interface Line {
  readonly start: number;
  /** End of the line's text, before `\r\n` or `\n`. */
  readonly end: number;
  readonly text: string;
}

type Marker =
  | { readonly kind: 'begin'; readonly task: string; readonly line: Line }
  | { readonly kind: 'end'; readonly task: string; readonly line: Line }
  | { readonly kind: 'legacy-begin'; readonly line: Line }
  | { readonly kind: 'legacy-end'; readonly line: Line };

/** Every whole line of `text` that is one of flower's marker lines, in order. */
function markerLines(text: string): Marker[] {
  const markers: Marker[] = [];
  let start = 0;
  while (start <= text.length) {
    const newline = text.indexOf('\n', start);
    const stop = newline === -1 ? text.length : newline;
    const end = stop > start && text[stop - 1] === '\r' && newline !== -1 ? stop - 1 : stop;
    if (text.startsWith('<!-- flower:', start)) {
      const line: Line = { start, end, text: text.slice(start, end) };
      const begin = BEGIN_LINE.exec(line.text);
      const close = END_LINE.exec(line.text);
      if (begin) markers.push({ kind: 'begin', task: begin[1]!, line });
      else if (close) markers.push({ kind: 'end', task: close[1]!, line });
      else if (line.text === LEGACY_BLOCK_BEGIN) markers.push({ kind: 'legacy-begin', line });
      else if (line.text === LEGACY_BLOCK_END) markers.push({ kind: 'legacy-end', line });
    }
    if (newline === -1) break;
    start = newline + 1;
  }
  return markers;
}

interface Scan {
  readonly blocks: FoundBlock[];
  readonly strayBegins: number;
  readonly strayEnds: number;
}

function scan(text: string): Scan {
  const markers = markerLines(text);
  const blocks: FoundBlock[] = [];
  const usedEnds = new Set<Marker>();
  let strayBegins = 0;
  for (const [index, marker] of markers.entries()) {
    if (marker.kind !== 'begin' && marker.kind !== 'legacy-begin') continue;
    const close = markers
      .slice(index + 1)
      .find((next) =>
        marker.kind === 'begin'
          ? next.kind === 'end' && next.task === marker.task
          : next.kind === 'legacy-end',
      );
    const inner = close ? text.slice(marker.line.end, close.line.start) : '';
    if (!close || HOLDS_MARKER.test(inner)) {
      strayBegins++;
      continue;
    }
    usedEnds.add(close);
    blocks.push({
      task: marker.kind === 'begin' ? marker.task : undefined,
      body: inner.replace(/\r\n/g, '\n').trim(),
      start: marker.line.start,
      end: close.line.end,
    });
  }
  const strayEnds = markers.filter((marker) => marker.kind === 'end' && !usedEnds.has(marker)).length;
  return { blocks, strayBegins, strayEnds };
}

function describeStrays({ strayBegins, strayEnds }: Scan): string | undefined {
  const parts: string[] = [];
  if (strayBegins > 0)
    parts.push(`${strayBegins} begin marker${strayBegins === 1 ? '' : 's'} without an end`);
  if (strayEnds > 0) parts.push(`${strayEnds} end marker${strayEnds === 1 ? '' : 's'} without a begin`);
  return parts.length > 0 ? parts.join(' and ') : undefined;
}

/** flower's blocks in `text`, in order (several only in a file an older version wrote into). */
export function flowerBlocks(text: string): FoundBlock[] {
  return scan(text).blocks;
}

/**
 * `text` without `found` (a duplicate block, so never the first thing in the file) and its line
 * break. A blank line on both sides of it, or before it at the end of the file (where appending put
 * it), becomes one; a blank line on one side only separates the user's paragraphs, and stays.
 */
function removeBlock(text: string, found: FoundBlock): string {
  let before = text.slice(0, found.start);
  const after = text.slice(found.end).replace(/^\r?\n/, '');
  const blankBefore = /\r?\n(\r?\n)$/.exec(before);
  if (blankBefore && (after === '' || /^\r?\n/.test(after)))
    before = before.slice(0, before.length - blankBefore[1]!.length);
  return before + after;
}

/**
 * `existing` (a file's text, or undefined when there is none) with flower's block holding `body`
 * for task `key` (a `taskKey`).
 */
export function placeBlock(
  existing: string | undefined,
  body: string,
  key: string = DEFAULT_TASK_KEY,
): Placed {
  const text = existing ?? '';
  if (text.trim() === '') return { text: `${block(body, key)}\n`, placement: 'created' };
  const found = scan(text);
  const brokenMarkers = describeStrays(found);
  const broken = brokenMarkers === undefined ? {} : { brokenMarkers };
  const [first, ...duplicates] = found.blocks;
  if (first === undefined) {
    const separator = /\n\r?\n$/.test(text) ? '' : text.endsWith('\n') ? '\n' : '\n\n';
    return { text: `${text}${separator}${block(body, key)}\n`, placement: 'appended', ...broken };
  }
  let result = text;
  // From the last, so the positions of the earlier ones still hold.
  for (const duplicate of duplicates.reverse()) result = removeBlock(result, duplicate);
  result = result.slice(0, first.start) + block(body, key) + result.slice(first.end);
  return {
    text: result,
    placement: 'replaced',
    ...broken,
    ...(duplicates.length > 0 ? { folded: duplicates.length } : {}),
  };
}

/** The body of flower's one block in `text`, or undefined when there is none or several. */
export function readBlock(text: string): string | undefined {
  const blocks = flowerBlocks(text);
  return blocks.length === 1 ? blocks[0]!.body : undefined;
}

/**
 * Places the block in the file at `path` (created when missing) and says how. The body goes
 * through the output sink first: the file is committed and printed with `cat`.
 */
export function writeManagedFile(path: string, body: string, key: string = DEFAULT_TASK_KEY): Placed {
  let existing: string | undefined;
  try {
    existing = readFileSync(path, 'utf8');
  } catch {
    existing = undefined;
  }
  const placed = placeBlock(existing, shown(body), key);
  if (placed.text !== existing) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, placed.text);
  }
  return placed;
}
