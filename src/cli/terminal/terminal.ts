/**
 * The one path to the user's terminal during `go`/`run`/`demo`: output lines above a persistent
 * bottom prompt, and input read for the whole run.
 *
 * Invariants:
 * - Every output block erases the prompt row, writes its lines, then redraws the prompt with the
 *   half-typed input, all in a single `write` so nothing else can land between them. (The reference
 *   also took a cross-process lock per TTY; one write per block gives the same "never interleaved
 *   mid-line" property for flower's own output without lock files.)
 * - Input is read all the time, not only while a question waits, so text typed during work is
 *   never eaten as the next answer; events that arrive while nobody listens are queued, never lost
 *   (the first piped line is the request, the rest belong to the run).
 * - On a terminal, input is in raw mode, edited by `LineEditor`, and the terminal is always restored
 *   (`close`, process exit, SIGTERM/SIGHUP). Off a terminal, input is split into lines and no prompt
 *   is drawn.
 * - An input that cannot be read has ended: a read error is end of input, never a crash. (`nohup`
 *   started from a terminal gives /dev/null opened write-only, and each read fails with EBADF;
 *   seen: an unhandled 'error' event ended flower with a stack trace.)
 * - Only text flower produced reaches `print`; model text has been sanitised by the renderer.
 * - Below the output sits a footer of at most two rows: the live status (`setStatus`) and the
 *   prompt. It is drawn only on a terminal that takes cursor control (not `TERM=dumb`, which gets
 *   no escape sequence at all and reads lines the way a pipe does), every row is cut to `width - 1`
 *   columns so that it never wraps, and erasing it moves the cursor up over exactly the rows drawn.
 */
import { StringDecoder } from 'node:string_decoder';
import { guarded } from '../../output/sink.js';
import { onTerminationSignal } from '../../runtime/signals.js';
import { cursorControlAllowed } from './colors.js';
import { type EditorEvent, LineEditor, type LineEditorPolicy } from './line-editor.js';
import { promptRow } from './prompt-line.js';
import { terminalWidth, truncate } from './terminal-text.js';

export interface TerminalInput extends NodeJS.EventEmitter {
  readonly isTTY?: boolean;
  setRawMode?(mode: boolean): unknown;
  resume(): unknown;
  pause(): unknown;
}

export interface TerminalOutput {
  readonly isTTY?: boolean;
  readonly columns?: number;
  write(chunk: string): unknown;
}

export interface TerminalOptions {
  readonly input: TerminalInput;
  readonly output: TerminalOutput;
  readonly editor?: LineEditorPolicy;
  /** Whether the output takes cursor movements (default: unless `TERM=dumb`). */
  readonly cursorControl?: boolean;
}

const ERASE_ROW = '\r\x1b[K';
/** Up one row, then erase it: the second footer row. */
const ERASE_ROW_ABOVE = '\x1b[1A\r\x1b[K';

export class Terminal {
  /** Keys are edited here and a prompt is drawn: both ends are terminals. */
  readonly interactive: boolean;
  /** A footer (status, prompt) can be drawn: the output is a terminal that takes cursor control. */
  readonly drawsFooter: boolean;
  private readonly input: TerminalInput;
  private readonly output: TerminalOutput;
  private readonly editor: LineEditor;
  private readonly queued: EditorEvent[] = [];
  private listener: ((event: EditorEvent) => void) | undefined;
  private hint: (() => string) | undefined;
  private status: (() => string | undefined) | undefined;
  private paintStatus: (text: string) => string = (text) => text;
  /** Footer rows now on screen (0, 1 or 2); the cursor is on the last of them. */
  private footerRows = 0;
  private reading = false;
  private ended = false;
  private pipeBuffer = '';
  private readonly pipeDecoder = new StringDecoder('utf8');
  private readonly restoreOnExit = () => this.restoreMode();
  private stopSignalRescue: (() => void) | undefined;

  constructor(options: TerminalOptions) {
    this.input = options.input;
    // Every byte goes through the sink's last pass (output/sink.ts): the footer's own controls pass,
    // anything else a caller forgot to neutralise is made inert and masked.
    this.output = guarded(options.output);
    this.drawsFooter =
      Boolean(options.output.isTTY) && (options.cursorControl ?? cursorControlAllowed(process.env));
    this.interactive = Boolean(this.drawsFooter && options.input.isTTY && options.input.setRawMode);
    this.editor = new LineEditor(options.editor);
    // Attached for the input's whole life, not only while reading: a read under way at `close`
    // may still fail afterwards.
    this.input.on('error', this.onInputError);
  }

  /** Whether the input is a terminal someone can type into. */
  get inputIsTerminal(): boolean {
    return Boolean(this.input.isTTY);
  }

  /** The column budget for output lines. */
  width(): number {
    return terminalWidth(this.output.isTTY ? this.output.columns : undefined);
  }

  /** Print lines above the footer (which is redrawn below them). */
  print(lines: readonly string[]): void {
    if (lines.length === 0) return;
    this.output.write(`${this.eraseFooter()}${lines.join('\n')}\n${this.footer()}`);
  }

  /**
   * Show a live status row above the prompt; `status` is asked for its plain text at every redraw
   * (undefined = no row), `paint` colours it after it was cut to the width. Nothing is drawn where
   * no footer can be (a pipe, `TERM=dumb`).
   */
  setStatus(status: (() => string | undefined) | undefined, paint?: (text: string) => string): void {
    this.status = status;
    if (paint) this.paintStatus = paint;
    this.redraw();
  }

  /**
   * Show the bottom prompt; `hint` is asked for its text at every redraw, so the prompt follows the
   * situation (idle, a question waiting, an interrupt being collected).
   */
  showPrompt(hint: () => string): void {
    this.hint = hint;
    this.redraw();
  }

  /** Remove the prompt row (input keeps being read). */
  hidePrompt(): void {
    this.hint = undefined;
    this.redraw();
  }

  /** Redraw the footer, e.g. after the prompt's hint or the status changed. */
  redraw(): void {
    const erase = this.eraseFooter();
    const footer = this.footer();
    // A first footer still starts by clearing its row: the cursor may sit after a half-written line.
    if (erase !== '' || footer !== '') this.output.write(`${erase || ERASE_ROW}${footer}`);
  }

  /** Start reading input; events queue until someone listens. Idempotent. */
  start(): void {
    if (this.reading || this.ended) return;
    this.reading = true;
    if (this.interactive) {
      this.input.setRawMode?.(true);
      // A raw terminal left behind breaks the user's shell: restore it on exit and on SIGTERM/SIGHUP
      // (which end the process without an 'exit' event).
      process.once('exit', this.restoreOnExit);
      this.stopSignalRescue = onTerminationSignal(this.restoreOnExit);
    }
    this.input.on('data', this.onData);
    this.input.on('end', this.onEnd);
    this.input.resume();
  }

  /** The next input event (a queued one first). */
  next(): Promise<EditorEvent> {
    return this.nextWithin(undefined) as Promise<EditorEvent>;
  }

  /**
   * The next input event, or undefined when none came within `ms` (undefined: wait for ever). An
   * event that comes later is queued for whoever listens next, never lost.
   */
  nextWithin(ms: number | undefined): Promise<EditorEvent | undefined> {
    const queued = this.queued.shift();
    if (queued) return Promise.resolve(queued);
    if (this.ended) return Promise.resolve({ kind: 'eof' });
    return new Promise((resolve) => {
      const previous = this.listener;
      const timer =
        ms === undefined
          ? undefined
          : setTimeout(() => {
              this.listener = previous;
              resolve(undefined);
            }, ms);
      this.listener = (event) => {
        clearTimeout(timer);
        this.listener = previous;
        resolve(event);
      };
    });
  }

  /** Deliver every input event to `listener` (queued ones first) until `close`. */
  listen(listener: (event: EditorEvent) => void): void {
    this.listener = listener;
    for (let event = this.queued.shift(); event; event = this.queued.shift()) listener(event);
  }

  /** Stop reading, remove the footer and give the terminal back as it was. */
  close(): void {
    this.hint = undefined;
    this.status = undefined;
    this.redraw();
    this.listener = undefined;
    if (!this.reading) return;
    this.reading = false;
    this.input.off('data', this.onData);
    this.input.off('end', this.onEnd);
    this.input.pause();
    this.restoreMode();
    process.off('exit', this.restoreOnExit);
    this.stopSignalRescue?.();
    this.stopSignalRescue = undefined;
  }

  private restoreMode(): void {
    if (this.interactive) this.input.setRawMode?.(false);
  }

  private promptShown(): boolean {
    return this.interactive && this.reading && this.hint !== undefined;
  }

  /** What takes the footer off the screen, leaving the cursor at the start of its first row. */
  private eraseFooter(): string {
    const rows = this.footerRows;
    this.footerRows = 0;
    if (rows === 0) return '';
    return rows === 1 ? ERASE_ROW : `${ERASE_ROW}${ERASE_ROW_ABOVE}`;
  }

  /** The footer rows (status, then prompt), recording how many were drawn. */
  private footer(): string {
    if (!this.drawsFooter) return '';
    const rows: string[] = [];
    const status = this.status?.();
    if (status) rows.push(this.paintStatus(truncate(status, this.width() - 1)));
    if (this.promptShown()) rows.push(this.promptText());
    this.footerRows = rows.length;
    return rows.join('\n');
  }

  private promptText(): string {
    const before = this.editor.text.slice(0, this.editor.text.length - this.editor.textAfterCursor.length);
    const { row, cursorLeft } = promptRow(
      this.hint?.() ?? '',
      before,
      this.editor.textAfterCursor,
      this.width(),
    );
    return cursorLeft > 0 ? `${row}\x1b[${cursorLeft}D` : row;
  }

  private readonly onData = (chunk: Buffer | string) => {
    if (this.interactive) {
      const events = this.editor.feed(typeof chunk === 'string' ? chunk : new Uint8Array(chunk));
      for (const event of events) {
        // Keep what was typed visible above the prompt, as a terminal's own echo would.
        if (event.kind === 'submit' && this.hint)
          this.print([truncate(`${this.hint()}${event.line}`, this.width() - 1)]);
        this.emit(event);
      }
      this.redraw();
      return;
    }
    this.pipeBuffer += typeof chunk === 'string' ? chunk : this.pipeDecoder.write(chunk);
    const lines = this.pipeBuffer.split(/\r?\n/);
    this.pipeBuffer = lines.pop() ?? '';
    for (const line of lines) this.emit({ kind: 'submit', line });
  };

  private readonly onEnd = () => {
    this.pipeBuffer += this.pipeDecoder.end();
    if (this.pipeBuffer !== '') this.emit({ kind: 'submit', line: this.pipeBuffer });
    this.pipeBuffer = '';
    this.ended = true;
    this.emit({ kind: 'eof' });
  };

  private readonly onInputError = () => {
    if (!this.ended) this.onEnd();
  };

  private emit(event: EditorEvent): void {
    if (this.listener) this.listener(event);
    else this.queued.push(event);
  }
}
