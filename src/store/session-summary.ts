/**
 * The session summary both backends keep per main transcript: the SDK's `foldSessionSummary`,
 * written out here so that a process that only stores and copies transcripts (the pull at start,
 * `flower status`) does not load the SDK's 1.4 MB module for one small pure function. Loading it
 * cost about 110 ms of CPU per process (measured: `node -e 'await import(sdk)'` against
 * `node -e 0`), a tenth of a whole pull onto a new machine (`node bench/pull.bench.mjs`); the
 * SDK offers no lighter entry that exports it (`./core` does not).
 *
 * Invariants:
 * - Output identical to the SDK's `foldSessionSummary` of the pinned SDK version, down to the
 *   order of `data`'s fields (backends compare the summary's JSON text to skip unchanged writes):
 *   test/unit/store/session-summary.test.ts folds realistic sessions and generated entries with
 *   both and compares the JSON. When an SDK upgrade changes the fold, that test fails; port the
 *   change here.
 * - Pure: `previous` is not changed; the result's `data` is a new object.
 * - `data` stays the SDK's opaque state: backends store it verbatim and never read its fields.
 */
import type { SessionKey, SessionStoreEntry, SessionSummaryEntry } from '@anthropic-ai/claude-agent-sdk';

/**
 * Entry fields copied into the summary whenever an entry carries them as text, under these names
 * (`summary` as `summaryHint`), in this order. Read by name, one line each: a lookup through a
 * variable key on entries of many shapes cost most of the fold's time (measured, a realistic
 * 12 000-entry transcript).
 */
function copyFields(data: SummaryData, entry: SessionStoreEntry): void {
  if (typeof entry.customTitle === 'string') data.customTitle = entry.customTitle;
  if (typeof entry.aiTitle === 'string') data.aiTitle = entry.aiTitle;
  if (typeof entry.lastPrompt === 'string') data.lastPrompt = entry.lastPrompt;
  if (typeof entry.summary === 'string') data.summaryHint = entry.summary;
  if (typeof entry.gitBranch === 'string') data.gitBranch = entry.gitBranch;
}

/** Longest first prompt kept, in UTF-16 code units, before an ellipsis. */
const FIRST_PROMPT_MAX = 200;

type SummaryData = Record<string, unknown>;

/** `previous` (or an empty summary of `key`) with `entries` folded in, in order; mtime as the SDK sets it. */
export function foldSessionSummary(
  previous: SessionSummaryEntry | undefined,
  key: SessionKey,
  entries: readonly SessionStoreEntry[],
  options?: { mtime?: number },
): SessionSummaryEntry {
  const mtime = options?.mtime ?? previous?.mtime ?? 0;
  const summary: SessionSummaryEntry =
    previous === undefined
      ? { sessionId: key.sessionId, mtime, data: {} }
      : { sessionId: previous.sessionId, mtime, data: { ...previous.data } };
  const data = summary.data as SummaryData;
  for (const entry of entries) {
    if (data.isSidechain === undefined) data.isSidechain = entry.isSidechain === true;
    // Parsed only while no creation time is known (the SDK parses every entry's; same result).
    if (data.createdAt === undefined) {
      const created = epochMs(entry.timestamp);
      if (created !== undefined) data.createdAt = created;
    }
    if (data.cwd === undefined && typeof entry.cwd === 'string' && entry.cwd) data.cwd = entry.cwd;
    foldFirstPrompt(data, entry);
    copyFields(data, entry);
    if (entry.type === 'tag') {
      if (typeof entry.tag === 'string' && entry.tag) data.tag = entry.tag;
      else delete data.tag;
    }
    if (entry.type === 'relocated' && typeof entry.relocatedCwd === 'string' && entry.relocatedCwd)
      data.cwd = entry.relocatedCwd;
  }
  return summary;
}

function epochMs(timestamp: unknown): number | undefined {
  if (typeof timestamp !== 'string') return undefined;
  const parsed = Date.parse(timestamp);
  return Number.isNaN(parsed) ? undefined : parsed;
}

/** Until a first prompt is found (then locked), the first slash command stands in for it. */
function foldFirstPrompt(data: SummaryData, entry: SessionStoreEntry): void {
  if (data.firstPromptLocked) return;
  const seen = { commandFallback: (data.commandFallback as string | undefined) ?? '' };
  const prompt = firstPromptOf(entry, seen);
  if (seen.commandFallback && !data.commandFallback) data.commandFallback = seen.commandFallback;
  if (prompt !== undefined) {
    data.firstPrompt = prompt;
    data.firstPromptLocked = true;
  }
}

const COMMAND_NAME = /<command-name>(.*?)<\/command-name>/;
const BASH_INPUT = /<bash-input>([\s\S]*?)<\/bash-input>/;
/** Text that is no prompt a person typed: a harness tag, or the interruption notice. */
const NOT_A_PROMPT = /^(?:\s*<[a-z][\w-]*[\s>]|\[Request interrupted by user[^\]]*\])/;

/**
 * The prompt a user entry shows as a session's first prompt, if it is one: its first text that is
 * not a command, a harness tag or a tool result, on one line, at most `FIRST_PROMPT_MAX` long.
 * A command name it passes is noted in `seen.commandFallback` (the first one only).
 */
function firstPromptOf(entry: SessionStoreEntry, seen: { commandFallback: string }): string | undefined {
  if (entry.type !== 'user') return undefined;
  if (entry.isMeta === true || entry.isCompactSummary === true) return undefined;
  const message = entry.message as { content?: unknown } | undefined;
  if (!message) return undefined;
  const texts: string[] = [];
  if (typeof message.content === 'string') texts.push(message.content);
  else if (Array.isArray(message.content)) {
    for (const block of message.content as unknown[]) {
      if (!block || typeof block !== 'object') continue;
      const { type, text } = block as { type?: unknown; text?: unknown };
      if (type === 'tool_result') return undefined;
      if (type === 'text' && typeof text === 'string') texts.push(text);
    }
  }
  for (const text of texts) {
    let line = withPastesInline(text).replaceAll('\n', ' ').trim();
    if (!line) continue;
    const command = COMMAND_NAME.exec(line);
    if (command?.[1] !== undefined) {
      if (!seen.commandFallback) seen.commandFallback = command[1];
      continue;
    }
    const bash = BASH_INPUT.exec(line);
    if (bash?.[1] !== undefined) return `! ${bash[1].trim()}`;
    if (NOT_A_PROMPT.test(line)) continue;
    if (line.length > FIRST_PROMPT_MAX) line = `${truncated(line, FIRST_PROMPT_MAX).trim()}…`;
    return line;
  }
  return undefined;
}

const PASTE_OPEN = '<pasted_content id="';

/** `text` with each pasted block (`<pasted_content id="abcd">…</pasted_content id="abcd">`) replaced by its body. */
function withPastesInline(text: string): string {
  const parts = pasteParts(text);
  if (parts.length === 1 && parts[0]?.kind === 'text') return text;
  return parts.map((part) => (part.kind === 'text' ? part.text : part.body)).join('');
}

type PastePart = { kind: 'text'; text: string } | { kind: 'block'; body: string };

/** Splits `text` into plain text and pasted blocks (up to two newlines around a block belong to it). */
function pasteParts(text: string): PastePart[] {
  const parts: PastePart[] = [];
  let done = 0;
  let from = 0;
  for (;;) {
    const open = text.indexOf(PASTE_OPEN, from);
    if (open === -1) break;
    const idAt = open + PASTE_OPEN.length;
    const id = text.slice(idAt, idAt + 4);
    if (!isPasteId(id) || !text.startsWith('">\n', idAt + 4)) {
      from = idAt;
      continue;
    }
    const bodyAt = idAt + 4 + 3;
    const close = `</pasted_content id="${id}">`;
    const closeAt = text.indexOf(`\n${close}`, bodyAt - 1) + 1;
    if (closeAt === 0) break;
    let start = open;
    for (let step = 0; step < 2 && start > done && text[start - 1] === '\n'; step += 1) start -= 1;
    if (start > done) parts.push({ kind: 'text', text: text.slice(done, start) });
    done = closeAt + close.length;
    for (let step = 0; step < 2 && text[done] === '\n'; step += 1) done += 1;
    parts.push({ kind: 'block', body: text.slice(bodyAt, closeAt - 1) });
    from = done;
  }
  if (done < text.length) parts.push({ kind: 'text', text: text.slice(done) });
  return parts;
}

/** Four lowercase hex digits. */
function isPasteId(id: string): boolean {
  return /^[0-9a-f]{4}$/.test(id);
}

/**
 * The first `max` UTF-16 units of `text`, never ending in the first half of a surrogate pair.
 * (The SDK also passes the result through a UTF-16 Buffer and back, which in Node gives the same
 * string, lone surrogates included.)
 */
function truncated(text: string, max: number): string {
  const head = text.slice(0, max);
  const last = head.charCodeAt(max - 1);
  return last >= 0xd800 && last <= 0xdbff ? head.slice(0, -1) : head;
}
