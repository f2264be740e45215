/**
 * The markdown-section reader shared by every document flower parses: the handoff document here in
 * the runtime, and the workflow documents (brief, goal, verdict) above it.
 *
 * Models format headings every which way ("## Goal", "**Goal**", "Goal:", "3. Boundaries"), so the
 * reader is forgiving about form and strict about content:
 * - Fenced code blocks are removed before any heading is looked for: a heading inside an example
 *   must not start a section. An unclosed fence means the output was cut off, so everything after
 *   it is dropped (a truncated document then reads as incomplete instead of half-right).
 * - A line is a heading when it starts with one of the section's names (optionally behind `#`s,
 *   emphasis or a list number) and the name is followed by the end of the line or a colon. Unlike a
 *   bare prefix match, a prose line such as "Goals of this project are..." stays body text.
 * - Names are tried longest first, so "Unknowns & assumptions" is never read as "Unknowns".
 * - When a section appears twice, the first occurrence with content wins.
 * Lines that match no name (for example a later "## Added during run (12:00:00)") belong to the
 * section above them.
 */

/** Maps each section key to the headings that introduce it. */
export type SectionAliases<Key extends string> = Readonly<Record<Key, readonly string[]>>;

const FENCED_BLOCK = /^[ \t]*(```|~~~)[^\n]*\n[\s\S]*?^[ \t]*\1[^\n]*$/gm;
const OPEN_FENCE = /^[ \t]*(```|~~~)/m;
const RULE_LINE = /^[ \t]*([-*_])\1{2,}[ \t]*$/gm;
const BULLET_MARKER = /^\s*(?:[-*+]|\d+[.、)])\s*(?:\[[ xX]\]\s+)?/;

/** Removes fenced code blocks; an unclosed fence cuts the text off where it opens. */
export function stripCode(text: string): string {
  const withoutBlocks = text.replace(FENCED_BLOCK, '');
  const open = OPEN_FENCE.exec(withoutBlocks);
  return open ? withoutBlocks.slice(0, open.index) : withoutBlocks;
}

/** Trims a section body: no leading blank lines, no horizontal rules, at most one blank line in a row. */
export function cleanBody(body: string): string {
  return body
    .replace(RULE_LINE, '')
    .replace(/^[ \t]+$/gm, '')
    .trim()
    .replace(/\n{3,}/g, '\n\n');
}

/** One item per non-empty line, without its leading list marker (or task-list box). */
export function bulletItems(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.replace(BULLET_MARKER, '').trim())
    .filter((line) => line.length > 0);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Builds the line-anchored heading pattern for a set of aliases (longest first). */
function headingPattern(aliases: readonly string[]): RegExp {
  const names = [...aliases].sort((a, b) => b.length - a.length).map(escapeRegExp);
  return new RegExp(
    String.raw`^[ \t]*(?:#{1,6}[ \t]*)?(?:\*\*|__)?[ \t]*(?:\d+[.、)][ \t]*)?(?:\*\*|__)?[ \t]*` +
      `(${names.join('|')})` +
      String.raw`[ \t]*(?:\*\*|__)?[ \t]*(?:[:：][ \t]*(?:\*\*|__)?[ \t]*(.*))?[ \t]*$`,
    'gimu',
  );
}

/**
 * Splits `text` into the sections named by `aliases`. Keys without a (non-empty) section are absent
 * from the result.
 */
export function readSections<Key extends string>(
  text: string,
  aliases: SectionAliases<Key>,
): Partial<Record<Key, string>> {
  const keyOf = new Map<string, Key>();
  for (const [key, names] of Object.entries(aliases) as [Key, readonly string[]][]) {
    for (const name of names) keyOf.set(name.toLowerCase(), key);
  }
  const source = stripCode(text.replace(/\r\n?/g, '\n'));
  const headings = [...source.matchAll(headingPattern([...keyOf.keys()]))];
  const sections: Partial<Record<Key, string>> = {};
  headings.forEach((match, index) => {
    const key = keyOf.get((match[1] ?? '').toLowerCase());
    if (key === undefined || sections[key]) return;
    const start = (match.index ?? 0) + match[0].length;
    const end = headings[index + 1]?.index ?? source.length;
    const body = cleanBody(`${match[2] ?? ''}\n${source.slice(start, end)}`);
    if (body) sections[key] = body;
  });
  return sections;
}
