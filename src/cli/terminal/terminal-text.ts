/**
 * Text that is about to reach the user's terminal: sanitising, display width, wrapping, truncation.
 *
 * Invariants ("red lines"):
 * - Model output never drives the terminal: everything is `neutralise`d (output/neutralise.ts) first.
 *   flower adds its own colours only AFTER sanitising and wrapping, so nothing here has to tell
 *   "our" escapes from "theirs".
 * - Widths are display columns, not string length: East Asian Wide, Fullwidth and Ambiguous
 *   characters count as 2 (counting Ambiguous as wide can only under-fill a line, never overflow it).
 * - No produced line is wider than the width it was given.
 * - A line never starts with closing punctuation (`。`, `,`, `)` ...) when it can stay on the
 *   previous line; CJK text breaks between any two characters, Latin text between words.
 */
import { createRequire } from 'node:module';
import type measureWidth from 'string-width';

/** How wide flower lets its output get. */
export interface TerminalWidthPolicy {
  /** Narrower than this and the markers plus indents leave no room for text. */
  readonly min: number;
  /** Wider than this and long lines become hard to read; flower's output is prose, not tables. */
  readonly max: number;
  /** Used when the output is not a terminal (piped, captured by a test). */
  readonly fallback: number;
}

export const defaultWidthPolicy: TerminalWidthPolicy = { min: 40, max: 110, fallback: 80 };

/** The column budget for a terminal reporting `columns` (undefined when not a terminal). */
export function terminalWidth(
  columns: number | undefined,
  policy: TerminalWidthPolicy = defaultWidthPolicy,
): number {
  if (columns === undefined || !Number.isFinite(columns) || columns <= 0) return policy.fallback;
  return Math.max(policy.min, Math.min(Math.floor(columns), policy.max));
}

// The sanitiser lives below every layer that prints (the report's views use it too); the terminal's
// text functions build on it, and its callers keep importing it from here.
export { neutralise, oneLine } from '../../output/neutralise.js';

const widthOptions = { ambiguousIsNarrow: false } as const;

// Printable ASCII: one column and one grapheme per character, whatever the terminal.
const PLAIN_ASCII = /^[\x20-\x7e]*$/;

// string-width builds an Intl.Segmenter and a /^\p{RGI_Emoji}$/v pattern as it loads: 40-75 ms of
// CPU here, most of what `doctor` and `status` cost over a bare node start (bench/startup.bench.mjs),
// whose output is plain ASCII. So it is loaded on the first text that is not, and synchronously
// (the callers are), which loading an ES module with require needs Node 20.19 for.
let measureLoaded: typeof measureWidth | undefined;
function measure(text: string): number {
  if (measureLoaded === undefined) {
    const loaded = createRequire(import.meta.url)('string-width') as { default: typeof measureWidth };
    measureLoaded = loaded.default;
  }
  return measureLoaded(text, widthOptions);
}

/** Display columns of a (sanitised, uncoloured) string. */
export function displayWidth(text: string): number {
  return PLAIN_ASCII.test(text) ? text.length : measure(text);
}

// Made on first use for the same reason: ICU's break iterator data costs ~15 ms to load.
let graphemeSegmenter: Intl.Segmenter | undefined;

function graphemes(text: string): string[] {
  if (PLAIN_ASCII.test(text)) return Array.from(text);
  graphemeSegmenter ??= new Intl.Segmenter(undefined, { granularity: 'grapheme' });
  return Array.from(graphemeSegmenter.segment(text), (segment) => segment.segment);
}

const ELLIPSIS = '...';

/** Cut `text` to at most `width` columns, marking the cut with `...`. Text that fits is returned as is. */
export function truncate(text: string, width: number): string {
  if (displayWidth(text) <= width) return text;
  if (width <= ELLIPSIS.length) return ELLIPSIS.slice(0, Math.max(0, width));
  const budget = width - ELLIPSIS.length;
  let used = 0;
  let kept = '';
  for (const grapheme of graphemes(text)) {
    const columns = displayWidth(grapheme);
    if (used + columns > budget) break;
    kept += grapheme;
    used += columns;
  }
  return kept + ELLIPSIS;
}

// Punctuation that closes a clause or a bracket; a line must not begin with one of these.
const CLOSING_PUNCTUATION = new Set(Array.from('。，、；：！？」』）】》〉,.;:!?)]}%…'));

/**
 * Split one paragraph into break-free tokens: each wide (CJK) grapheme alone, each run of narrow
 * non-space graphemes with its trailing spaces. Closing punctuation is glued to the token before it
 * so that no line can start with it.
 */
function tokenize(paragraph: string): string[] {
  const tokens: string[] = [];
  let word = '';
  const flushWord = () => {
    if (word) tokens.push(word);
    word = '';
  };
  for (const grapheme of graphemes(paragraph)) {
    if (CLOSING_PUNCTUATION.has(grapheme)) {
      if (word !== '') {
        word += grapheme;
        continue;
      }
      if (tokens.length > 0) {
        tokens[tokens.length - 1] += grapheme;
        continue;
      }
    }
    if (grapheme === ' ') {
      word += grapheme;
      continue;
    }
    if (word.endsWith(' ')) flushWord();
    if (displayWidth(grapheme) >= 2) {
      flushWord();
      tokens.push(grapheme);
    } else {
      word += grapheme;
    }
  }
  flushWord();
  return tokens;
}

/** Break one token that is wider than a whole line into line-sized pieces. */
function splitOversized(token: string, width: number): string[] {
  const pieces: string[] = [];
  let piece = '';
  for (const grapheme of graphemes(token)) {
    if (piece === '' && grapheme === ' ') continue;
    if (piece && displayWidth(piece + grapheme) > width) {
      pieces.push(piece);
      piece = '';
    }
    piece += grapheme;
  }
  if (piece) pieces.push(piece);
  return pieces;
}

export interface WrapOptions {
  /** Printed before the first line (a marker such as `  + `); counts against the width. */
  readonly firstPrefix?: string;
  /** Printed before every later line; defaults to spaces as wide as `firstPrefix` (hanging indent). */
  readonly restPrefix?: string;
}

/**
 * Wrap sanitised, uncoloured text to `width` columns. Paragraph breaks (`\n`) are kept; an empty
 * input gives one line holding only the prefix. Every returned line includes its prefix.
 */
export function wrap(text: string, width: number, options: WrapOptions = {}): string[] {
  const firstPrefix = options.firstPrefix ?? '';
  const restPrefix = options.restPrefix ?? ' '.repeat(displayWidth(firstPrefix));
  const lines: string[] = [];
  let prefix = firstPrefix;
  const room = () => Math.max(1, width - displayWidth(prefix));

  for (const paragraph of text.split('\n')) {
    let line = '';
    const emit = () => {
      lines.push(prefix + line.trimEnd());
      prefix = restPrefix;
      line = '';
    };
    for (const token of tokenize(paragraph)) {
      if (displayWidth(line + token.trimEnd()) <= room()) {
        line += token;
        continue;
      }
      if (line) emit();
      // Spaces that did not fit are the break itself; a new line never starts with them.
      if (token.trim() === '') continue;
      const pieces = displayWidth(token.trimEnd()) > room() ? splitOversized(token, room()) : [token];
      for (const [index, piece] of pieces.entries()) {
        line = piece;
        if (index < pieces.length - 1) emit();
      }
    }
    emit();
  }
  return lines.map((line) => truncate(line, width));
}
