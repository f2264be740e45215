/**
 * Untrusted text (model output, tool names and results, file names, `.env` values, check output)
 * made inert for a terminal, a Markdown file or a web page, while staying visible: a reader sees
 * that a sequence was there and what it was, and nothing runs.
 *
 * Invariants ("red line"):
 * - The result holds no C0 control but `\n`, no DEL, no C1 control, and no bidirectional override,
 *   embedding, isolate or mark (U+061C, U+200E/F, U+202A–202E, U+2066–2069): these are what let
 *   text set a window title, clear the screen, write the clipboard (OSC 52), plant a link (OSC 8),
 *   or show a line in another order than it runs (the "Trojan Source" reordering).
 * - Nothing is dropped silently: a C0 control or DEL becomes its Unicode control picture (ESC is
 *   `␛`, BEL `␇`, NUL `␀`), so `ESC ] 0 ; title BEL` reads `␛]0;title␇`; a C1 control, a bidi
 *   character or a line/paragraph separator becomes `[U+XXXX]`. Once ESC is a picture, the rest of
 *   any escape sequence is printable text and cannot be interpreted.
 * - `\r\n` becomes `\n` (a file written on Windows is not hostile); a tab becomes one space (widths
 *   are counted in columns); a lone `\r`, which would let text overwrite its own line, is shown.
 * - Pure, and idempotent: neutralising twice gives the same text as once.
 */

// Every character handled below, in one class: C0 but \n, DEL, C1, the bidi set, U+2028/2029.
const UNSAFE = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;

function picture(character: string): string {
  const code = character.codePointAt(0)!;
  if (code === 0x09) return ' ';
  // U+2400 + code is the Unicode control picture of a C0 control (0x00–0x1F); U+2421 is DEL's.
  if (code <= 0x1f) return String.fromCodePoint(0x2400 + code);
  if (code === 0x7f) return '\u2421';
  return `[U+${code.toString(16).toUpperCase().padStart(4, '0')}]`;
}

/** `text` with every control, escape introducer and bidi character made visible and inert. */
export function neutralise(text: string): string {
  return text.replace(/\r\n/g, '\n').replace(UNSAFE, picture);
}

/** Whether `text` holds anything `neutralise` would change (beyond CRLF line endings and tabs). */
export function holdsUnsafeCharacters(text: string): boolean {
  return /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]|\r(?!\n)/.test(
    text,
  );
}

/** Neutralised and collapsed onto one line (tool arguments, summaries): each whitespace run → one space. */
export function oneLine(text: string): string {
  return neutralise(text).replace(/\s+/g, ' ').trim();
}
