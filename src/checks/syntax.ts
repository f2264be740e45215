/**
 * The check syntax of a checklist item in `notes/goal.md`: an item that ends in
 *
 *     check: `command`            (the default time limit)
 *     check (2m): `command`       (its own time limit: ms, s, m or h; a bare number is seconds)
 *
 * is proven by flower itself, which runs the command in the workspace after every round of work
 * (exit code 0 = passed). The command is a markdown code span, so it may hold any character: a
 * command that contains backticks is wrapped in a longer run of them (``` `` echo `date` `` ```),
 * exactly as markdown does it.
 *
 * Invariants:
 * - Pure: no I/O. `readCheck(formatCheck(x))` gives `x` back for every description, command and
 *   limit (property-tested), so a goal written by flower reads back unchanged.
 * - "check:" not followed by a backtick is ordinary prose (a judgement item), never a check.
 * - Anything that starts like a check but cannot be read (an unclosed code span, an empty command,
 *   a time limit that is not one, text after the command) is `malformed`, never silently prose: the
 *   person who wrote it meant a check, and a check that quietly stopped being one would let an
 *   unproven item pass. The runner reports a malformed check as a failing check.
 */

export interface CheckSpec {
  /** What the item claims, without the check annotation. */
  readonly description: string;
  /** The shell command whose exit code proves the item. */
  readonly command: string;
  /** This item's own time limit; undefined = the runner's default. */
  readonly timeoutMs?: number;
}

export type ItemCheck =
  | { readonly kind: 'none' }
  | ({ readonly kind: 'check' } & CheckSpec)
  | { readonly kind: 'malformed'; readonly description: string; readonly problem: string };

/** How a check is written, for texts that teach it (the goal file's header, the judge's rules). */
export const CHECK_SYNTAX = 'check: `command`';
export const CHECK_SYNTAX_WITH_LIMIT = 'check (2m): `command`';

/** The longest time limit accepted: a check that needs more than a day is not a check. */
const MAX_TIMEOUT_MS = 24 * 3_600_000;

/**
 * The marker: the word "check" (not inside another word), an optional `(limit)`, a colon, then a
 * backtick. The last such marker in the item counts; an earlier one belongs to the description.
 */
const MARKER = /(?<![\p{L}\p{N}_])check\s*(?:\(([^)]*)\))?\s*:\s*(?=`)/giu;

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  sec: 1000,
  secs: 1000,
  second: 1000,
  seconds: 1000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
};

/** Separators people put between the claim and its check ("tests pass — check: …"). */
const TRAILING_SEPARATORS = /[\s—–\-:;,]+$/u;

/** Milliseconds for "90", "90s", "2m", "1.5 h", "timeout 5m"; undefined when it is not a duration. */
export function parseTimeLimit(text: string): number | undefined {
  const match = /^\s*(?:timeout\s*:?\s*)?(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  if (!match) return undefined;
  const unit = (match[2] ?? '').toLowerCase();
  const factor = unit === '' ? 1000 : UNIT_MS[unit];
  if (factor === undefined) return undefined;
  const ms = Math.round(Number(match[1]) * factor);
  return ms > 0 && ms <= MAX_TIMEOUT_MS ? ms : undefined;
}

/** The shortest exact way to write a time limit: `90s`, `2m`, `1500ms`. */
export function formatTimeLimit(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** The code span that starts at `start` (a backtick): its content and where it ends, or a problem. */
function readCodeSpan(text: string, start: number): { content: string; end: number } | { problem: string } {
  let fence = 0;
  while (text[start + fence] === '`') fence++;
  const open = start + fence;
  for (let at = open; at < text.length; ) {
    if (text[at] !== '`') {
      at++;
      continue;
    }
    let run = 0;
    while (text[at + run] === '`') run++;
    if (run === fence) {
      let content = text.slice(open, at);
      // Markdown strips one space on each side when both are there, so `` `x` `` can hold a backtick.
      if (content.length >= 2 && content.startsWith(' ') && content.endsWith(' ') && content.trim() !== '')
        content = content.slice(1, -1);
      return { content, end: at + run };
    }
    at += run;
  }
  return {
    problem: `the command's code span is not closed (it opens with ${fence} backtick${fence === 1 ? '' : 's'})`,
  };
}

/**
 * Reads the check annotation at the end of a checklist item (the item without its list marker).
 * Markers are tried from the first: the first whose code span ends the item is the check, so a
 * command may itself contain "check: `…`" and a description may mention one.
 */
export function readCheck(item: string): ItemCheck {
  let problem: { description: string; text: string } | undefined;
  for (const marker of item.matchAll(MARKER)) {
    const description = item.slice(0, marker.index).replace(TRAILING_SEPARATORS, '').trim();
    const read = readAt(item, marker, description);
    if (read.kind === 'check') return read;
    // The last marker that fails is the one its author meant: earlier ones are usually prose.
    problem = { description, text: read.problem };
  }
  return problem
    ? { kind: 'malformed', description: problem.description, problem: problem.text }
    : { kind: 'none' };
}

/** The check introduced by one marker, or why it is not one. */
function readAt(
  item: string,
  marker: RegExpExecArray,
  description: string,
): ({ kind: 'check' } & CheckSpec) | { kind: 'problem'; problem: string } {
  const limitText = marker[1];
  let timeoutMs: number | undefined;
  if (limitText !== undefined) {
    timeoutMs = parseTimeLimit(limitText);
    if (timeoutMs === undefined)
      return {
        kind: 'problem',
        problem: `"${limitText.trim()}" is not a time limit (write it like 90s, 5m or 1h)`,
      };
  }
  const span = readCodeSpan(item, marker.index + marker[0].length);
  if ('problem' in span) return { kind: 'problem', problem: span.problem };
  const rest = item.slice(span.end).trim();
  if (rest !== '' && !/^[.)]+$/.test(rest))
    return {
      kind: 'problem',
      problem: `the command must end the item, but "${rest.slice(0, 40)}" follows it`,
    };
  if (span.content.trim() === '') return { kind: 'problem', problem: 'the command is empty' };
  return {
    kind: 'check',
    description,
    command: span.content,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  };
}

/** The item text for a check: the description, then the annotation with a fence the command cannot break. */
export function formatCheck(check: CheckSpec): string {
  const longestRun = Math.max(0, ...(check.command.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longestRun + 1);
  const needsPadding =
    check.command.startsWith('`') ||
    check.command.endsWith('`') ||
    (check.command.startsWith(' ') && check.command.endsWith(' ') && check.command.trim() !== '');
  const body = needsPadding ? ` ${check.command} ` : check.command;
  const limit = check.timeoutMs === undefined ? '' : ` (${formatTimeLimit(check.timeoutMs)})`;
  const annotation = `check${limit}: ${fence}${body}${fence}`;
  return check.description ? `${check.description} — ${annotation}` : annotation;
}
