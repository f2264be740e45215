/**
 * Untrusted text (model output, tool results, file names, `.env` values) made safe to print, for
 * every layer that prints: the terminal (cli/terminal/) and the run's views (report/).
 *
 * Invariant ("red line"): model output never drives the terminal. `sanitize` removes every escape
 * sequence (CSI, OSC, DCS/SOS/PM/APC, two-character escapes, a lone ESC, their 8-bit C1 forms) and
 * every control character except the newline; a tab becomes a space.
 */

// One alternation per escape family, longest forms first. OSC and the string commands run to their
// terminator (BEL or ST) or, when a model leaves one unterminated, to the end of the text: an
// unterminated OSC would otherwise swallow everything flower prints after it.
const ESCAPE_SEQUENCE = new RegExp(
  [
    '\\x1b\\][\\s\\S]*?(?:\\x07|\\x1b\\\\|$)', // OSC: ESC ] ... BEL | ST
    '\\x9d[\\s\\S]*?(?:\\x07|\\x1b\\\\|\\x9c|$)', // OSC, 8-bit introducer
    '\\x1b[PX^_][\\s\\S]*?(?:\\x1b\\\\|$)', // DCS, SOS, PM, APC: ESC P|X|^|_ ... ST
    '[\\x90\\x98\\x9e\\x9f][\\s\\S]*?(?:\\x1b\\\\|\\x9c|$)', // the same, 8-bit introducers
    '\\x1b\\[[\\x30-\\x3f]*[\\x20-\\x2f]*[\\x40-\\x7e]?', // CSI: ESC [ params intermediates final
    '\\x9b[\\x30-\\x3f]*[\\x20-\\x2f]*[\\x40-\\x7e]?', // CSI, 8-bit introducer
    '\\x1b[\\x20-\\x2f]*[\\x30-\\x7e]?', // two-character escapes (ESC c, ESC ( B ...) and a lone ESC
  ].join('|'),
  'g',
);

// C0 controls except newline (tab is handled before), DEL, and the remaining C1 controls.
const CONTROL_CHARACTER = /[\x00-\x09\x0b-\x1f\x7f-\x9f]/g;

/**
 * Make untrusted text (model output, tool results, file names) safe to print: the result contains
 * no escape sequences and no control characters other than `\n`. `\r\n` becomes `\n`; a bare `\r`
 * (which would let text overwrite what is already on the line) is dropped.
 */
export function sanitize(text: string): string {
  return text
    .replace(ESCAPE_SEQUENCE, '')
    .replace(/\r\n/g, '\n')
    .replace(/\t/g, ' ')
    .replace(CONTROL_CHARACTER, '');
}

/** Collapse a text onto one line (for tool arguments, summaries): every run of whitespace → one space. */
export function oneLine(text: string): string {
  return sanitize(text).replace(/\s+/g, ' ').trim();
}
