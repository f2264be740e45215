/**
 * Talking to a running workflow from the terminal: what the user types goes to the pending
 * question, the oracle, the interrupt or the inbox (see input-routing.ts), and Ctrl-C interrupts.
 *
 * Invariants:
 * - The first Ctrl-C only arms the interrupt: the prompt asks what the agent should hear, and the
 *   next line (empty = nothing) is handed to the runtime, which cuts the round at the next message
 *   boundary and resumes the same session with it. Nothing is read or printed inside the signal path.
 * - A second Ctrl-C before that line is entered quits at once with exit code 130, terminal restored.
 * - Ctrl-C handling exists only when stdin is a terminal; piped runs keep Node's default.
 * - End of input skips every waiting question, and every question asked after it, so the agent
 *   decides itself instead of waiting the full timeout for an answer that cannot come (the reference
 *   let later questions wait); the prompt is removed and the run goes on.
 * - An aside never blocks the input: it runs concurrently and its answer is printed when it comes.
 * - A number that is no option of the waiting question is not sent as its answer: the person is
 *   told the range and the question keeps waiting (input-routing.ts).
 */
import type { HumanChannel } from '../../agents/human/channel.js';
import type { FlowerEvent } from '../../runtime/events.js';
import type { EditorEvent } from '../terminal/line-editor.js';
import { PROMPT_HINTS, type PromptMode } from '../terminal/prompt-line.js';
import type { Terminal } from '../terminal/terminal.js';
import { routeLine } from './input-routing.js';

export interface InteractionPaint {
  dim(text: string): string;
  yellow(text: string): string;
}

export interface InteractionOptions {
  readonly terminal: Terminal;
  /** The workflow's human channel; without one there is nobody to answer and no inbox. */
  readonly channel: HumanChannel | undefined;
  /** Cut the running round and resume it with these words (`Runtime.interrupt`). */
  readonly interrupt: (words: string) => void;
  /** Start a side question; resolves when its answer has been printed. */
  readonly aside: ((question: string) => Promise<void>) | undefined;
  /** Quit the process with this code (the second Ctrl-C). */
  readonly quit: (code: number) => void;
  readonly paint: InteractionPaint;
}

/** Why a question was skipped when the input closed; the model sees it. */
const INPUT_CLOSED = 'input closed';

export class Interaction {
  private armed = false;
  /** Input has ended: nobody can answer any more, so questions are skipped as they come. */
  private inputClosed = false;
  private listening = false;
  private readonly asides = new Set<Promise<void>>();
  private readonly onSignal = () => this.controlC();

  constructor(private readonly options: InteractionOptions) {}

  /** Asides still running (the driver waits for them, within a limit, before exiting). */
  get pendingAsides(): Promise<void>[] {
    return [...this.asides];
  }

  /** The prompt's situation now. */
  mode(): PromptMode {
    if (this.armed) return 'interrupt';
    return (this.options.channel?.pending().length ?? 0) > 0 ? 'question' : 'idle';
  }

  start(): void {
    const { terminal } = this.options;
    terminal.start();
    terminal.listen((event) => this.onInput(event));
    terminal.showPrompt(() => PROMPT_HINTS[this.mode()]);
    this.listening = true;
    // In raw mode Ctrl-C arrives as a key; a SIGINT can still come from `kill -INT`.
    if (terminal.inputIsTerminal) process.on('SIGINT', this.onSignal);
  }

  stop(): void {
    if (!this.listening) return;
    this.listening = false;
    process.off('SIGINT', this.onSignal);
    this.options.terminal.close();
  }

  /** Sees the run's events: a question asked after the input ended is skipped at once. */
  observe(event: FlowerEvent): void {
    if (!this.inputClosed || event.kind !== 'ask') return;
    const payload = event.payload as { kind?: unknown; state?: unknown; id?: unknown };
    if (payload.kind === 'question' && payload.state === 'asked') {
      this.options.channel?.decline(String(payload.id), INPUT_CLOSED);
    }
  }

  private onInput(event: EditorEvent): void {
    switch (event.kind) {
      case 'interrupt':
        this.controlC();
        return;
      case 'eof':
        this.endOfInput();
        return;
      case 'submit':
        this.submit(event.line);
        return;
    }
  }

  private controlC(): void {
    const { terminal, quit } = this.options;
    if (!terminal.inputIsTerminal) return;
    if (this.armed) {
      terminal.print([
        this.options.paint.yellow('! quit (Ctrl-C twice); run the same command again to continue'),
      ]);
      this.stop();
      quit(130);
      return;
    }
    this.armed = true;
    // With no prompt row (output piped), say it on a line of its own.
    if (terminal.interactive) terminal.redraw();
    else terminal.print([this.options.paint.yellow(PROMPT_HINTS.interrupt.trimEnd())]);
  }

  private endOfInput(): void {
    this.inputClosed = true;
    const { channel, terminal } = this.options;
    for (const ask of channel?.pending() ?? []) channel?.decline(ask.id, INPUT_CLOSED);
    terminal.hidePrompt();
  }

  private submit(line: string): void {
    const { channel, terminal, paint } = this.options;
    const pending = channel?.pending()[0];
    const routed = routeLine(line, {
      interruptArmed: this.armed,
      pendingAskId: pending?.id,
      pendingOptions: pending?.options.length ?? 0,
    });
    switch (routed.kind) {
      case 'interrupt': {
        this.armed = false;
        this.options.interrupt(routed.message);
        const lines = [
          paint.yellow('! interrupted this round; a subagent that was running loses its half-finished work'),
        ];
        const waiting = channel?.pending().length ?? 0;
        if (waiting > 0) {
          lines.push(
            paint.dim(
              `  (${waiting} question${waiting === 1 ? ' is' : 's are'} still waiting; the interrupt leaves them alone)`,
            ),
          );
        }
        terminal.print(lines);
        break;
      }
      case 'aside': {
        if (!this.options.aside) {
          terminal.print([paint.dim('  (side questions are not available in this run)')]);
          break;
        }
        const running = this.options.aside(routed.question).finally(() => this.asides.delete(running));
        this.asides.add(running);
        break;
      }
      case 'answer':
        channel?.answer(routed.askId, routed.text);
        break;
      case 'skip':
        channel?.decline(routed.askId);
        break;
      case 'reask':
        terminal.print([
          paint.yellow(
            `! there is no option ${routed.typed}: answer 1-${routed.options}, or type the answer in words (Enter = skip)`,
          ),
        ]);
        break;
      case 'mail': {
        if (!channel) {
          terminal.print([paint.dim('  (this workflow has no inbox; nobody will read that)')]);
          break;
        }
        const mail = channel.send(routed.text);
        if (mail) {
          const receipt = channel.amendPath
            ? '  (it reads this at its next inbox check; also added to the brief)'
            : '  (it reads this at its next inbox check; there is no brief to keep it in, so it may not outlive this step)';
          terminal.print([paint.dim(receipt)]);
        }
        break;
      }
      case 'nothing':
        break;
    }
    terminal.redraw();
  }
}
