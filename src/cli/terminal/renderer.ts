/**
 * The terminal renderer for `go` and `run`: every FlowerEvent kind becomes zero or more finished
 * screen lines (wrapped, truncated, coloured). It does no I/O; the terminal layer prints the lines
 * above the bottom prompt.
 *
 * Invariants:
 * - Every kind has a branch, and an unknown one falls through to a `-v`-only line, so a new event
 *   kind can never crash the screen.
 * - Credential values are masked in everything shown (given a `mask`), before anything else.
 * - Model and tool text is sanitised before it is wrapped; colour is added last, per line, so
 *   wrapping and truncation only ever measure plain text and no line is wider than `width()`.
 * - Icons are ASCII only (`= | ~ > * - ? + x # <- ! .`): emoji and box drawing have crashed terminals.
 * - Colour says who speaks: cyan the main thread's thinking and step headers, blue its tool calls,
 *   magenta dispatches, tasks and asides, dim subagents and status, yellow questions, warnings and
 *   handoffs, green success, red errors.
 * - One renderer per process: the status line's cost and elapsed time are cumulative and real; the
 *   context figure is the main thread's only (a subagent's context says nothing about the main one).
 * - With `labelSpeakers`, prose says who speaks (`judge: …`, `coordinator: …`) and every subagent line
 *   names its worker (`| coder * Bash …`), learnt from the dispatch that started it; the speaker of
 *   the main thread is told by the driver before each agent run (`speaker`).
 * - With `simulatedCost` (the demo) every dollar figure says it is simulated.
 */
import { createColors } from 'picocolors';
import { ASK_TOOL } from '../../agents/tools.js';
import type { SecretMask } from '../../config/secret-mask.js';
import { maskSecrets } from '../../output/secrets.js';
import type { FlowerEvent, HandoffPayload, MessageMeta } from '../../runtime/events.js';
import { withoutEmptySections } from './empty-sections.js';
import { formatElapsed, formatTokens, formatTurns } from './format.js';
import { maskEvent } from './masked-event.js';
import { displayWidth, neutralise, oneLine, truncate, wrap } from './terminal-text.js';
import { WorkerTally } from './worker-tally.js';

export interface RendererOptions {
  /** Show subagent prose, successful tool results, prompts and system notices. */
  readonly verbose?: boolean;
  /** Colour on or off (off for pipes and tests). Default: on. */
  readonly color?: boolean;
  /** The current column budget; read per event so a resized terminal is honoured. */
  readonly width?: () => number;
  /** Milliseconds clock; injectable for tests. */
  readonly now?: () => number;
  /** Say who speaks: the main thread's role before its prose, the worker's name on subagent lines. */
  readonly labelSpeakers?: boolean;
  /** The money is not real (a scripted model): mark every dollar figure as simulated. */
  readonly simulatedCost?: boolean;
  /** Masks secrets in everything shown; default: the output sink's mask (output/secrets.ts). */
  readonly mask?: SecretMask;
}

/** How many characters of a dispatch description the `>` line shows. */
const DISPATCH_DESCRIPTION_CHARS = 60;
const SUBAGENT_GUTTER = '  | ';
/** Claude Code's catch-all subagent type: its name tells nothing about who the worker is. */
const GENERIC_SUBAGENT = 'general-purpose';
/** A worker's label on its lines never takes more than this many columns. */
const WORKER_NAME_CHARS = 24;
/** Nor does the main thread's speaker label (a workflow's own step names can be long). */
const SPEAKER_CHARS = 24;
/** A step rule never has fewer `=` than this, however long the step name. */
const MIN_RULE_FILL = 4;
/** While the endpoint is down, its live status comes after every probe; a line this often is enough. */
const OFFLINE_LINE_EVERY_MS = 60_000;
/**
 * flower's one-line messages (a worker's conclusion, a check, a warning) wrap onto this many rows
 * before they are cut: cutting text that a second row would show whole hides the part people need
 * (issue 21), while a bound keeps a runaway message from flooding the screen.
 */
const MESSAGE_ROWS = 4;
/** A question quoted in a line about it (nobody answered) is shortened to this many columns. */
const QUOTED_QUESTION_CHARS = 100;

type Colors = ReturnType<typeof createColors>;

/** flower's own always-shown notices: a result carries its `+`/`x` in its text, information gets `-`. */
const NOTICE_STYLE: Record<
  'ok' | 'fail' | 'info',
  { prefix: string; rest: string; paint: (c: Colors) => (line: string) => string }
> = {
  // A wrapped result hangs under its text, past the `+ `/`x ` it carries.
  ok: { prefix: '  ', rest: '    ', paint: (c) => c.green },
  fail: { prefix: '  ', rest: '    ', paint: (c) => c.red },
  info: { prefix: '  - ', rest: '    ', paint: (c) => c.cyan },
};

/** `mcp__human__inbox` → `human:inbox`: the server and tool without the SDK's prefix. */
export function toolLabel(tool: string): string {
  const mcp = /^mcp__(.+?)__(.+)$/.exec(tool);
  return oneLine(mcp ? `${mcp[1]}:${mcp[2]}` : tool);
}
/** How a worker is named on screen: its type, or what it was asked to do when the type says nothing. */
export function workerName(subagentType: string, description: string): string {
  const type = oneLine(subagentType);
  if (type !== '' && type !== GENERIC_SUBAGENT) return truncate(type, WORKER_NAME_CHARS);
  return truncate(oneLine(description) || 'worker', WORKER_NAME_CHARS);
}

type QuestionPayload = {
  kind?: unknown;
  state?: unknown;
  options?: unknown;
  remaining?: unknown;
  answer?: unknown;
  askedBy?: unknown;
};

export class TerminalRenderer {
  private readonly verbose: boolean;
  private readonly colors: Colors;
  private readonly width: () => number;
  private readonly now: () => number;
  private readonly mask: SecretMask;
  private readonly startedAt: number;
  private readonly labelSpeakers: boolean;
  private readonly costNote: string;
  private costUsd = 0;
  private context = 0;
  private offlineShown: { downSince: number; at: number } | undefined;
  private mainSpeaker: string | undefined;
  /** Worker names by the id of the Agent call that started them. */
  private readonly workers = new Map<string, string>();
  /** Each worker's turns, tokens and dollars, for the line shown when its task ends. */
  private readonly tally = new WorkerTally();

  constructor(options: RendererOptions = {}) {
    this.verbose = options.verbose ?? false;
    this.colors = createColors(options.color ?? true);
    this.width = options.width ?? (() => 80);
    this.now = options.now ?? Date.now;
    this.mask = options.mask ?? maskSecrets;
    this.startedAt = this.now();
    this.labelSpeakers = options.labelSpeakers ?? false;
    this.costNote = options.simulatedCost ? ' (simulated)' : '';
  }

  /** Who speaks on the main thread from now on (a role such as `judge`); set before each agent run. */
  speaker(name: string | undefined): void {
    this.mainSpeaker = name === undefined ? undefined : truncate(oneLine(name), SPEAKER_CHARS);
  }

  /** Cost of every query this renderer saw finish, in USD. */
  get totalCostUsd(): number {
    return this.costUsd;
  }

  elapsed(): string {
    return formatElapsed(this.now() - this.startedAt);
  }

  /** The screen lines for one event (possibly none). */
  render(original: FlowerEvent): string[] {
    const event = maskEvent(original, this.mask);
    const c = this.colors;
    this.tally.observe(event);
    switch (event.kind) {
      case 'step': {
        const { name, round, rounds } = event.payload;
        return this.stepLines(
          round === undefined ? name : `${name} · round ${round}/${rounds ?? round}`,
          event.payload.index,
          event.payload.total,
          event.payload.resumed,
          event.payload.woke,
        );
      }
      case 'thinking':
        if (event.payload.subagent) return [];
        return this.block(event.text, '  ~ ', c.cyan);
      case 'text':
        if (event.payload.subagent) {
          if (!this.verbose) return [];
          return this.block(event.text, this.gutter(event.payload, ': '), c.dim, SUBAGENT_GUTTER);
        }
        if (event.payload.context) this.context = event.payload.context;
        if (neutralise(event.text).trim() === '') return [];
        return [
          ...this.block(withoutEmptySections(event.text), this.prosePrefix(), (line) => line),
          this.status(),
        ];
      case 'prompt':
        return this.verbose ? this.row(`  ${event.payload.subagent ? '| ' : ''}> `, event.text, c.dim) : [];
      case 'tool_call': {
        // The question itself is shown by its ask event; the call line would only repeat it.
        if (event.tool === ASK_TOOL) return [];
        const label = `* ${toolLabel(event.tool ?? '')} `;
        // A call is a preview of its input (a whole script, a long path): one row; the log has it all.
        if (event.payload.subagent)
          return this.row(`${this.gutter(event.payload, ' ')}${label}`, event.text, c.dim);
        return this.row(`  ${label}`, event.text, c.blue);
      }
      case 'dispatch': {
        this.workers.set(event.payload.id, workerName(event.payload.subagentType, event.payload.description));
        const description = truncate(oneLine(event.payload.description), DISPATCH_DESCRIPTION_CHARS);
        return this.line(`  > dispatch ${oneLine(event.payload.subagentType)} `, description, c.magenta);
      }
      case 'tool_result': {
        const gutter = event.payload.subagent ? this.gutter(event.payload, ' ') : '  ';
        if (event.payload.isError) return this.line(`${gutter}x `, event.text, c.red);
        return this.verbose && event.text.trim() !== '' ? this.row(`${gutter}  `, event.text, c.dim) : [];
      }
      case 'task': {
        const lines = event.text.trim() === '' ? [] : this.line('  # ', event.text, c.magenta);
        const spent = event.payload.phase === 'notification' && event.payload.toolUseId;
        const worker = spent ? this.tally.line(spent, this.costNote) : undefined;
        return worker === undefined ? lines : [...lines, ...this.line('    ', worker, c.magenta)];
      }
      case 'error':
        return this.block(event.text, '  ! ', c.red);
      case 'retry':
        if (event.payload.offline && !this.offlineLineDue(event.payload.offline.downSince)) return [];
        return this.line('  ~ ', event.text, c.yellow);
      case 'reset':
        this.context = event.payload.postTokens ?? 0;
        return this.line('  ~ ', event.text, c.yellow);
      case 'result': {
        this.costUsd += event.payload.costUsd;
        const { numTurns, costUsd, isError } = event.payload;
        const summary = `${formatTurns(numTurns)} · $${costUsd.toFixed(4)}${this.costNote} · ${this.elapsed()}`;
        return isError ? [c.red(`  x failed ${summary}`)] : [c.green(`  + done ${summary}`)];
      }
      case 'handoff':
        return this.handoffLines(event.text, event.payload);
      case 'ask':
        return this.askLines(event.text, event.payload as QuestionPayload);
      case 'system':
        // A gate's rejection (workflow.ts GATE_REJECTED) says what was missing: wrapped, never cut.
        if (event.payload.warning && event.payload.subtype === 'gate_rejected')
          return this.block(oneLine(event.text), '  ! ', c.yellow);
        if (event.payload.warning) return this.line('  ! ', event.text, c.yellow);
        if (event.payload.notice) {
          const style = NOTICE_STYLE[event.payload.notice];
          return this.line(style.prefix, event.text, style.paint(c), style.rest);
        }
        return this.verbose && event.text !== '' ? this.line('  - ', event.text, c.dim) : [];
      case 'unknown':
        return this.verbose && event.text !== '' ? this.line('  - ', event.text, c.dim) : [];
      default:
        return this.verbose ? this.line('  - ', String((event as { text?: unknown }).text ?? ''), c.dim) : [];
    }
  }

  /** The first live status of an outage, then one a minute: the wait is visible without flooding. */
  private offlineLineDue(downSince: number): boolean {
    const now = this.now();
    const shown = this.offlineShown;
    if (shown !== undefined && shown.downSince === downSince && now - shown.at < OFFLINE_LINE_EVERY_MS)
      return false;
    this.offlineShown = { downSince, at: now };
    return true;
  }

  /** The status line after main-thread prose: context · cumulative cost · elapsed. */
  status(): string {
    const parts = [];
    if (this.context > 0) parts.push(`context ${formatTokens(this.context)}`);
    parts.push(`total $${this.costUsd.toFixed(2)}${this.costNote}`, this.elapsed());
    return this.colors.dim(truncate(`  - ${parts.join(' · ')}`, this.width()));
  }

  /** `== name ======= 2/3`, preceded by a blank line; on resume a second line says so. */
  private stepLines(name: string, index: number, total: number, resumed: boolean, woke: number): string[] {
    const c = this.colors;
    const title = `== ${truncate(oneLine(name), this.width() - 20)} `;
    const counter = ` ${index}/${total}`;
    const fill = Math.max(MIN_RULE_FILL, this.width() - displayWidth(title) - counter.length);
    const lines = ['', c.cyan(truncate(`${title}${'='.repeat(fill)}${counter}`, this.width()))];
    if (resumed) lines.push(c.cyan(`  <- resumed the last session · wake ${woke}`));
    return lines;
  }

  private askLines(text: string, payload: QuestionPayload): string[] {
    const c = this.colors;
    if (payload.kind === 'mail') {
      return payload.state === 'delivered'
        ? this.line('  + delivered ', text, c.green)
        : this.line('  + received ', text, c.green);
    }
    switch (payload.state) {
      case 'asked': {
        const lines = this.block(text, '  ? ', c.yellow);
        const options = Array.isArray(payload.options) ? payload.options.map(String) : [];
        options.forEach((option, index) => {
          lines.push(...this.block(option, `     ${index + 1}) `, c.yellow));
        });
        const remaining = typeof payload.remaining === 'number' ? payload.remaining : -1;
        if (remaining >= 0)
          lines.push(c.dim(`     (${remaining} more question${remaining === 1 ? '' : 's'} allowed)`));
        return lines;
      }
      case 'answered':
        return this.block(String(payload.answer ?? ''), '  + ', c.green);
      case 'timeout': {
        // Unattended, the question was never shown: this line is the only place it appears. The
        // agent then decides and records why; a question of flower's own has a default of its own,
        // which the workflow's next line names.
        const quoted = `nobody answered "${truncate(oneLine(text), QUOTED_QUESTION_CHARS)}"`;
        const after =
          payload.askedBy === 'workflow'
            ? 'flower goes on without an answer'
            : 'the agent decides itself and records the assumption under "Unknowns & assumptions"';
        return this.block(`${quoted}: ${after}`, '  ! ', c.yellow);
      }
      case 'over_budget':
        return this.line('  ! ', `out of questions: "${oneLine(text)}" was not asked`, c.yellow);
      case 'declined':
        return [c.dim('  . skipped')];
      case 'invalid':
        return this.line('  ! ', 'the agent asked an empty question; it was told to write it out', c.yellow);
      default:
        return this.verbose ? this.line('  ? ', text, c.dim) : [];
    }
  }

  private handoffLines(text: string, payload: HandoffPayload): string[] {
    const c = this.colors;
    if (payload.phase !== 'done') return this.line('  # ', text, c.yellow);
    const lines = this.line(
      '  # ',
      `context ${formatTokens(payload.context)}/${formatTokens(payload.window)}: writing a handoff, a new session takes over`,
      c.yellow,
    );
    if (payload.degraded) {
      lines.push(
        ...this.block(
          'the handoff could not be written; a mechanical one was used (the successor looks at the scene itself)',
          '  ',
          c.red,
        ),
      );
    }
    const sections = payload.sections;
    if (sections) {
      const labelled: Array<[string, string]> = [
        ['Doing', sections.doing],
        ['Decided', sections.decided],
        ['Dead ends', sections.deadends],
        ['Next', sections.next],
      ];
      const labelWidth = Math.max(...labelled.map(([label]) => label.length)) + 2;
      for (const [label, body] of labelled) {
        if (oneLine(body) !== '')
          lines.push(...this.line(`    ${label.padEnd(labelWidth)}`, body, (line) => line));
      }
    }
    if (payload.path) lines.push(...this.line('  <- handoff written to ', payload.path, c.yellow));
    lines.push(c.yellow('  <- the new session starts with a fresh context'));
    this.context = 0;
    return lines;
  }

  /** `  judge: ` before main-thread prose when speakers are labelled, else the plain indent. */
  private prosePrefix(): string {
    return this.labelSpeakers && this.mainSpeaker ? `  ${this.mainSpeaker}: ` : '  ';
  }

  /** `  | ` for a subagent line, with its worker's name (`  | coder` + `after`) when labelled and known. */
  private gutter(meta: MessageMeta, after: string): string {
    const name = meta.parentToolUseId === undefined ? undefined : this.workers.get(meta.parentToolUseId);
    return this.labelSpeakers && name ? `${SUBAGENT_GUTTER}${name}${after}` : SUBAGENT_GUTTER;
  }

  /** One row: prefix + the text collapsed to a single line and cut to the width. */
  private row(prefix: string, text: string, paint: (line: string) => string): string[] {
    return [paint(truncate(`${prefix}${oneLine(text)}`.trimEnd(), this.width()))];
  }

  /**
   * A message: the text collapsed to a single line, wrapped under the prefix with a hanging indent,
   * and cut only past `MESSAGE_ROWS` rows.
   */
  private line(
    prefix: string,
    text: string,
    paint: (line: string) => string,
    restPrefix: string = ' '.repeat(displayWidth(prefix)),
  ): string[] {
    const rows = wrap(oneLine(text), this.width(), { firstPrefix: prefix, restPrefix });
    if (rows.length <= MESSAGE_ROWS) return rows.map((row) => paint(row.trimEnd()));
    const kept = rows.slice(0, MESSAGE_ROWS);
    kept[MESSAGE_ROWS - 1] = truncate(
      `${kept[MESSAGE_ROWS - 1]} ${rows[MESSAGE_ROWS]?.trim()}`,
      this.width(),
    );
    return kept.map((row) => paint(row.trimEnd()));
  }

  /**
   * Wrapped text with a hanging indent under the prefix (or `restPrefix` on every later line, as a
   * subagent's gutter does); blank lines at either end are dropped.
   */
  private block(
    text: string,
    prefix: string,
    paint: (line: string) => string,
    restPrefix: string = ' '.repeat(displayWidth(prefix)),
  ): string[] {
    const body = neutralise(text)
      .replace(/^\s*\n|\n\s*$/g, '')
      .trimEnd();
    if (body.trim() === '') return [];
    return wrap(body, this.width(), { firstPrefix: prefix, restPrefix }).map(paint);
  }
}
