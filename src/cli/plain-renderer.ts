/**
 * A plain, line-by-line renderer for flower's event stream: one event, at most a few lines, written
 * as soon as it arrives. Used by `flower once`; the full terminal UI (wrapping, gutters, locks) is a
 * separate renderer.
 *
 * Invariants:
 * - One renderer instance per run, so elapsed time and the running cost are real.
 * - Icons are ASCII (`~` thinking/retry, `*` tool call, `>` dispatch, `x` failure, `!` warning,
 *   `#` handoff/task, `+` done, `|` subagent, `<-` handoff landing); colour only says who speaks.
 * - Control characters from model or tool output never reach the terminal: a reply cannot move the
 *   cursor or retitle the window.
 * - Subagent prose, successful tool results and prompts appear only with `verbose`.
 */
import pc from 'picocolors';
import type { FlowerEvent } from '../runtime/events.js';
import { oneLine as collapse, sanitize, truncate } from './terminal-text.js';

export interface PlainRendererOptions {
  /** Show subagent prose, successful tool results, prompts and system notices. */
  verbose?: boolean;
  /** Where lines go. Default: stdout. */
  write?: (line: string) => void;
  /** Clock in milliseconds; injectable for tests. */
  now?: () => number;
}

const ONE_LINE_CHARS = 160;

function oneLine(text: string, limit = ONE_LINE_CHARS): string {
  return truncate(collapse(text), limit);
}

/** "1 turn", "3 turns". */
export function formatTurns(count: number): string {
  return count === 1 ? '1 turn' : `${count} turns`;
}

/** `m:ss`, or `h:mm:ss` from an hour on. */
export function formatElapsed(milliseconds: number): string {
  const total = Math.max(0, Math.floor(milliseconds / 1000));
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = String(total % 60).padStart(2, '0');
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, '0')}:${seconds}` : `${minutes}:${seconds}`;
}

/** Tokens as `36.8K`. */
export function formatTokens(tokens: number): string {
  return `${(tokens / 1000).toFixed(1)}K`;
}

export class PlainRenderer {
  private readonly verbose: boolean;
  private readonly write: (line: string) => void;
  private readonly now: () => number;
  private readonly startedAt: number;
  /** Cost of the finished queries so far, from `result` events. */
  private costUsd = 0;
  /** Main-thread context of the latest reply. */
  private context = 0;

  constructor(options: PlainRendererOptions = {}) {
    this.verbose = options.verbose ?? false;
    this.write = options.write ?? ((line) => process.stdout.write(`${line}\n`));
    this.now = options.now ?? Date.now;
    this.startedAt = this.now();
  }

  elapsed(): string {
    return formatElapsed(this.now() - this.startedAt);
  }

  render(event: FlowerEvent): void {
    for (const line of this.lines(event)) this.write(line);
  }

  private status(): string {
    const parts = [];
    if (this.context > 0) parts.push(`context ${formatTokens(this.context)}`);
    parts.push(`total $${this.costUsd.toFixed(2)}`, this.elapsed());
    return pc.dim(`  - ${parts.join(' · ')}`);
  }

  private lines(event: FlowerEvent): string[] {
    switch (event.kind) {
      case 'text': {
        if (event.payload.subagent) return this.verbose ? [pc.dim(`  | ${oneLine(event.text)}`)] : [];
        if (event.payload.context) this.context = event.payload.context;
        const body = sanitize(event.text).trim();
        if (body === '') return [];
        return [...body.split('\n').map((line) => `  ${line}`), this.status()];
      }
      case 'thinking':
        if (event.payload.subagent || event.text.trim() === '') return [];
        return [pc.cyan(`  ~ ${oneLine(event.text)}`)];
      case 'tool_call': {
        const line = `* ${event.tool ?? ''} ${oneLine(event.text)}`.trimEnd();
        return [event.payload.subagent ? pc.dim(`  | ${line}`) : pc.blue(`  ${line}`)];
      }
      case 'dispatch':
        return [
          pc.magenta(`  > dispatch ${event.payload.subagentType} ${oneLine(event.payload.description, 60)}`),
        ];
      case 'tool_result':
        if (event.payload.isError) return [pc.red(`  x ${oneLine(event.text)}`)];
        return this.verbose && event.text.trim() !== '' ? [pc.dim(`    ${oneLine(event.text)}`)] : [];
      case 'prompt':
        return this.verbose && !event.payload.subagent ? [pc.dim(`  > ${oneLine(event.text)}`)] : [];
      case 'task':
        return event.text.trim() === '' ? [] : [pc.magenta(`  # ${oneLine(event.text)}`)];
      case 'error':
        return [pc.red(`  ! ${oneLine(event.text)}`)];
      case 'retry':
        return [pc.yellow(`  ~ ${oneLine(event.text)}`)];
      case 'reset':
        this.context = 0;
        return [pc.yellow(`  ~ ${oneLine(event.text)}`)];
      case 'handoff':
        return this.handoffLines(event);
      case 'result': {
        this.costUsd += event.payload.costUsd;
        const verdict = event.payload.isError ? pc.red('  x failed') : pc.green('  + done');
        return [
          `${verdict} ${formatTurns(event.payload.numTurns)} · $${event.payload.costUsd.toFixed(4)} · ${this.elapsed()}`,
        ];
      }
      case 'step': {
        const title = `== ${event.payload.name} `;
        return [
          '',
          pc.cyan(
            `${title}${'='.repeat(Math.max(4, 60 - title.length))} ${event.payload.index}/${event.payload.total}`,
          ),
        ];
      }
      case 'ask':
        return [pc.yellow(`  ? ${oneLine(event.text)}`)];
      case 'system':
      case 'unknown':
        return this.verbose && event.text !== '' ? [pc.dim(`  - ${oneLine(event.text)}`)] : [];
    }
  }

  private handoffLines(event: Extract<FlowerEvent, { kind: 'handoff' }>): string[] {
    const { payload } = event;
    if (payload.phase !== 'done') return [pc.yellow(`  # ${oneLine(event.text)}`)];
    const lines = [
      pc.yellow(
        `  # context ${formatTokens(payload.context)} of ${formatTokens(payload.window)}: handing off`,
      ),
    ];
    if (payload.degraded)
      lines.push(
        pc.red(
          '  handoff not written; a degraded version was used (the successor inspects the scene itself)',
        ),
      );
    const sections = payload.sections;
    if (sections) {
      const labels: Array<[string, string]> = [
        ['Doing', sections.doing],
        ['Decided', sections.decided],
        ['Dead ends', sections.deadends],
        ['Next', sections.next],
      ];
      for (const [label, body] of labels)
        if (body.trim() !== '') lines.push(`    ${label.padEnd(10)}${oneLine(body, 100)}`);
    }
    if (payload.path) lines.push(pc.yellow(`  <- handoff written to ${payload.path}`));
    lines.push(
      pc.yellow(`  <- a new session takes over; context restarts from ${formatTokens(payload.context)}`),
    );
    this.context = 0;
    return lines;
  }
}
