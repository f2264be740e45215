/**
 * `flower log <step>`: a step's transcripts (main thread, then each worker) as readable Markdown,
 * or as the stored JSON lines.
 *
 * Invariants:
 * - Who said what, in order: the prompt, the model's text and thinking, each tool call with its
 *   input, each result cut to a readable length with its full size stated. The harness's own
 *   bookkeeping entries (attachments, queue operations, cost state) are left out of the Markdown.
 * - The synthetic "API Error" turns are shown as what they are: the harness's stand-in, which
 *   flower keeps from the model on resume.
 * - Code fences are always longer than any backtick run inside them, so a transcript cannot break
 *   out of its block.
 * - Every transcript string goes through the output sink: `shown` (Markdown) or `shownJsonLine`
 *   (JSON lines); only the JSON lines' explicit raw mode prints what is stored.
 * - Pure.
 */

import { maskSecrets } from '../output/secrets.js';
import { shown, shownFields, shownJsonLine } from '../output/sink.js';
import { inWindow, type SessionTranscripts, type TimeWindow } from '../runtime/ledger.js';
import {
  blocksOf,
  type Entry,
  isToolResult,
  isToolUse,
  messageOf,
  toolResultText,
} from '../store/transcript.js';
import { textsOf, turnsIn } from './conversation.js';

export interface LogPolicy {
  /** Characters of a tool result shown before it is cut. */
  readonly resultChars: number;
  /** Characters of a prompt or a tool input shown before it is cut. */
  readonly inputChars: number;
}

export const defaultLogPolicy: LogPolicy = { resultChars: 1200, inputChars: 4000 };

export interface LogHeader {
  step: string;
  run: string;
  outcome: string;
  costUsd: number;
}

function fence(body: string, language = ''): string {
  const longest = Math.max(2, ...[...body.matchAll(/`+/g)].map((match) => match[0].length));
  const marks = '`'.repeat(longest + 1);
  return `${marks}${language}\n${body}\n${marks}`;
}

function cut(text: string, limit: number): string {
  if (text.length <= limit) return text;
  return `${text.slice(0, limit)}\n… (cut: ${text.length.toLocaleString('en-US')} characters in all)`;
}

function clock(entry: Entry): string {
  const stamp = typeof entry.timestamp === 'string' ? entry.timestamp : '';
  return /T(\d\d:\d\d:\d\d)/.exec(stamp)?.[1] ?? '';
}

function quote(text: string): string {
  return text
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
}

/** The Markdown of one transcript's entries inside `window`. */
function entriesMarkdown(entries: readonly Entry[], window: TimeWindow, policy: LogPolicy): string[] {
  const parts: string[] = [];
  for (const { entry, synthetic } of turnsIn(entries, window)) {
    if (entry.isMeta === true) continue;
    const at = clock(entry);
    const when = at ? ` · ${at}` : '';
    if (synthetic) {
      const text = textsOf(entry).join('\n');
      parts.push(
        `**API error** (the harness's stand-in turn; the model never saw it)${when}\n\n${quote(shown(text))}`,
      );
      continue;
    }
    const content = messageOf(entry)?.content;
    if (typeof content === 'string') {
      const who = entry.type === 'user' ? (entry.isCompactSummary ? 'Summary' : 'User') : 'Assistant';
      parts.push(`**${who}**${when}\n\n${quote(shown(cut(content, policy.inputChars)))}`);
      continue;
    }
    for (const block of blocksOf(entry)) {
      const fields = block as { type?: unknown; text?: unknown; thinking?: unknown };
      if (isToolUse(block)) {
        // Each value through the sink before it is quoted: in JSON text a value's line breaks are
        // `\n`, and a key that starts a line would follow the letter n, where no token shape
        // looks for one (and ESC would read `\u001b` instead of ␛).
        const input = JSON.stringify(shownFields(block.input ?? {}), null, 2);
        parts.push(
          `**→ ${shown(block.name)}**${when}\n\n${fence(shown(cut(input, policy.inputChars)), 'json')}`,
        );
      } else if (isToolResult(block)) {
        const text = toolResultText(block);
        const body = text === null ? '(not text: an image or a document)' : cut(text, policy.resultChars);
        const size = text === null ? '' : ` (${text.length.toLocaleString('en-US')} characters)`;
        const error = block.is_error === true ? ' · error' : '';
        const denied = entry.toolDenialKind === 'permission-rule' ? ' · denied' : '';
        parts.push(`**← result**${size}${error}${denied}${when}\n\n${fence(shown(body))}`);
      } else if (fields.type === 'text' && typeof fields.text === 'string') {
        const who = entry.type === 'user' ? 'User' : 'Assistant';
        parts.push(`**${who}**${when}\n\n${shown(cut(fields.text, policy.inputChars))}`);
      } else if (
        fields.type === 'thinking' &&
        typeof fields.thinking === 'string' &&
        fields.thinking.trim() !== ''
      ) {
        parts.push(`*thinking*${when}\n\n${quote(shown(cut(fields.thinking, policy.inputChars)))}`);
      }
    }
  }
  return parts;
}

function subagentTitle(entries: readonly Entry[], agentId: string): string {
  const metadata = entries.find((entry) => entry.type === 'agent_metadata');
  const type = typeof metadata?.agentType === 'string' ? metadata.agentType : 'worker';
  const description = typeof metadata?.description === 'string' ? ` · ${metadata.description}` : '';
  return shown(`${type} (agent ${agentId})${description}`);
}

/** The whole log of a step as Markdown. */
export function stepMarkdown(
  header: LogHeader,
  sessions: readonly SessionTranscripts[],
  window: TimeWindow,
  policy: LogPolicy = defaultLogPolicy,
): string {
  const cost = header.costUsd > 0 ? ` · $${header.costUsd.toFixed(4)}` : '';
  const run = header.run ? ` · run ${shown(header.run)}` : '';
  const out: string[] = [`# ${shown(header.step)}${run} · ${shown(header.outcome)}${cost}`];
  sessions.forEach((session, index) => {
    const generation = sessions.length > 1 ? ` (generation ${index + 1} of ${sessions.length})` : '';
    out.push(
      `## Main thread · session ${shown(session.sessionId)}${generation}`,
      ...entriesMarkdown(session.main, window, policy),
    );
    for (const subagent of session.subagents) {
      const body = entriesMarkdown(subagent.entries, window, policy);
      if (body.length === 0) continue;
      out.push(`## Worker: ${subagentTitle(subagent.entries, subagent.agentId)}`, ...body);
    }
  });
  return `${out.join('\n\n')}\n`;
}

/**
 * `value` with the secrets in each of its strings (keys too) masked, nothing else changed. Masked
 * string by string, before the document is quoted: in JSON text a token that starts a line follows
 * the `n` of `\n` (or the last hex digit of a `\u` escape), where no token shape recognises it.
 */
function maskedStrings(value: unknown): unknown {
  if (typeof value === 'string') return maskSecrets(value);
  if (Array.isArray(value)) return value.map(maskedStrings);
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(
      Object.entries(value).map(([key, field]) => [maskSecrets(key), maskedStrings(field)]),
    );
  return value;
}

/**
 * The step's entries, one JSON document per line: main thread first, then each worker. Through the
 * sink (secrets masked, every control escaped) unless `raw`: then exactly as stored, which is what
 * the model saw, secrets and escape sequences included.
 */
export function stepJsonLines(
  sessions: readonly SessionTranscripts[],
  window: TimeWindow,
  { raw = false }: { raw?: boolean } = {},
): string {
  const line = raw
    ? (entry: Entry) => JSON.stringify(entry)
    : (entry: Entry) => shownJsonLine(maskedStrings(entry));
  const lines: string[] = [];
  for (const session of sessions) {
    for (const entry of session.main) if (inWindow(entry, window)) lines.push(line(entry));
    for (const subagent of session.subagents)
      for (const entry of subagent.entries) if (inWindow(entry, window)) lines.push(line(entry));
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}
