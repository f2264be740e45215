/**
 * Markdown headings with nothing under them, taken out of prose before it is shown.
 *
 * A judge that rules "achieved" still writes its `## Not passed` heading, with nothing below it; on
 * screen an empty heading reads as a list that failed to print (issue 21). The heading says nothing
 * the lines around it do not, so the screen drops it; the stored text keeps every byte.
 *
 * Invariants:
 * - A heading is empty when the next non-blank line is another heading of the same or a higher
 *   level, or there is none: a `## Section` over `### Sub` is not empty.
 * - Lines inside fenced code (``` or ~~~) are never headings: `# comment` in a script stays.
 * - Text without an empty heading comes back unchanged.
 */

const HEADING = /^ {0,3}(#{1,6})(?:\s|$)/;
const FENCE = /^ {0,3}(```|~~~)/;

/** `text` without its empty Markdown headings (and the blank line each leaves behind). */
export function withoutEmptySections(text: string): string {
  const lines = text.split('\n');
  const level = (index: number): number | undefined => headingLevels[index];
  // Heading level per line, undefined for a line that is not a heading (or is inside a fence).
  const headingLevels: Array<number | undefined> = [];
  let fence: string | undefined;
  for (const line of lines) {
    const opened = FENCE.exec(line)?.[1];
    if (fence !== undefined) {
      if (opened === fence) fence = undefined;
      headingLevels.push(undefined);
      continue;
    }
    if (opened !== undefined) {
      fence = opened;
      headingLevels.push(undefined);
      continue;
    }
    headingLevels.push(HEADING.exec(line)?.[1]?.length);
  }
  const drop = new Set<number>();
  lines.forEach((_line, index) => {
    const own = level(index);
    if (own === undefined) return;
    let next = index + 1;
    while (next < lines.length && (lines[next] ?? '').trim() === '') next++;
    const following = next < lines.length ? level(next) : 0;
    if (following === undefined || following > own) return;
    drop.add(index);
    // The blank lines between it and what follows would double up with the ones before it.
    for (let blank = index + 1; blank < next; blank++) drop.add(blank);
  });
  if (drop.size === 0) return text;
  return lines.filter((_line, index) => !drop.has(index)).join('\n');
}
