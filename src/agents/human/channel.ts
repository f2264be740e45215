/**
 * The human channel: an in-process MCP server `human` with two tools —
 * `ask(question, options?)`, which blocks until a human answers (or the wait ends), and `inbox()`,
 * which returns at once with whatever the human has said unasked since the last look.
 *
 * Invariants:
 * - `ask` never fails the tool call: every way a question can end (answered, skipped, timed out,
 *   over quota, empty) gives the model a text telling it how to continue. Only an aborted query
 *   rejects.
 * - Invalid and over-quota questions count toward the quota (they are recorded before any check).
 * - Unattended mode (`timeoutSeconds <= 0`) answers "decide yourself" at once; no `asked` event is
 *   emitted and nothing waits in the queue, so a UI never shows a question nobody can answer.
 * - `answer`, `decline` and `send` may be called by a UI at any moment, including while the agent
 *   is blocked inside `ask`; they return false rather than throw when it is too late.
 * - A UI callback that throws never disturbs the run: the error is kept in `uiErrors`.
 * - Human mail is appended to the brief (`amendPath`) under a timestamped heading, so it outlives
 *   the current step; the Q&A log (`logPath`) is for the record only and never enters a context.
 * - The Q&A log is for people and quotes the model and the human verbatim, so every entry goes
 *   through the output sink's `shown` (secrets masked, controls and bidi characters visible and
 *   inert), and the file is private (0600, an older run's readable one tightened): an answer may
 *   hold a password the human typed, and a mask knows only the secrets it can recognise. The brief
 *   is not masked: the model works from it, and a value the human gave it on purpose must arrive.
 */
import { appendFileSync, chmodSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  createSdkMcpServer,
  type McpSdkServerConfigWithInstance,
  tool,
} from '@anthropic-ai/claude-agent-sdk';
import { z } from 'zod';
import { shown } from '../../output/sink.js';
import { ASK_TOOL, HUMAN_SERVER, INBOX_TOOL } from '../tools.js';
import { type Ask, type AskEvent, type Asker, type AskState, type Mail, resolveReply } from './ask.js';

/** Texts the model receives when no human answer comes. All point at the brief's last section. */
export interface ChannelTexts {
  overBudget: string;
  timeout: string;
  declined: string;
  invalid: string;
  noMail: string;
}

export const DEFAULT_CHANNEL_TEXTS: ChannelTexts = {
  overBudget:
    'No more questions are allowed in this run. Stop asking: write the remaining uncertainties under ' +
    '"Unknowns & assumptions" and carry on with your own best judgment.',
  timeout:
    'No one answered. Decide yourself and carry on: write this question and the assumption you chose under ' +
    '"Unknowns & assumptions". Do not ask it again, and do not stop here.',
  declined:
    'The human skipped this question. Decide yourself and write the assumption you chose under ' +
    '"Unknowns & assumptions".',
  invalid: 'The question was empty. Write the question out clearly, then ask again.',
  noMail: 'The inbox is empty. Carry on with your work.',
};

/** Heading label for human words appended to the brief mid-run. */
export const AMEND_LABEL = 'Added during run';

export interface HumanChannelOptions {
  /** Receives every ask and mail event (push mode). Exceptions are collected in `uiErrors`. */
  onEvent?: (event: AskEvent) => void;
  /** Question quota for the channel's life; undefined = unlimited, 0 = no questions at all. */
  maxAsks?: number;
  /** How long a question waits: default 1800 s; `null` = forever; 0 or less = unattended. */
  timeoutSeconds?: number | null;
  /** Q&A log, appended (e.g. `notes/qa-log.md`). */
  logPath?: string;
  /** File that unsolicited human words are appended to (normally the brief). */
  amendPath?: string;
  /** Replacement fall-through texts. */
  texts?: Partial<ChannelTexts>;
}

const DEFAULT_TIMEOUT_SECONDS = 1800;

/** The Q&A log is the user's alone (see the module's header). */
const QA_LOG_MODE = 0o600;

interface Waiting {
  ask: Ask;
  settle: (state: AskState, answer: string) => void;
}

export class HumanChannel {
  /** Tool names as the model sees them; put them in `allowedTools`. */
  readonly askTool = ASK_TOOL;
  readonly inboxTool = INBOX_TOOL;
  readonly asks: Ask[] = [];
  readonly mail: Mail[] = [];
  readonly uiErrors: unknown[] = [];
  readonly maxAsks: number | undefined;
  readonly timeoutSeconds: number | null;
  readonly logPath: string | undefined;
  readonly amendPath: string | undefined;
  readonly texts: ChannelTexts;

  private readonly onEvent: ((event: AskEvent) => void) | undefined;
  private readonly waiting = new Map<string, Waiting>();
  private readonly queue: Ask[] = [];
  private readonly pullers: ((ask: Ask) => void)[] = [];
  private counter = 0;

  constructor(options: HumanChannelOptions = {}) {
    this.onEvent = options.onEvent;
    this.maxAsks = options.maxAsks;
    this.timeoutSeconds =
      options.timeoutSeconds === undefined ? DEFAULT_TIMEOUT_SECONDS : options.timeoutSeconds;
    this.logPath = options.logPath;
    this.amendPath = options.amendPath;
    this.texts = { ...DEFAULT_CHANNEL_TEXTS, ...options.texts };
  }

  /** Questions left in the quota; −1 when unlimited. */
  get remaining(): number {
    return this.maxAsks === undefined ? -1 : Math.max(0, this.maxAsks - this.asks.length);
  }

  /**
   * Asks the human and resolves with the settled Ask once answered, skipped, timed out or refused.
   * Rejects only when `signal` aborts (the query was cancelled). `askedBy` is the workflow unless
   * the agent's own `ask` tool asks.
   */
  async ask(
    question: string,
    options: readonly string[] = [],
    { signal, askedBy = 'workflow' }: { signal?: AbortSignal; askedBy?: Asker } = {},
  ): Promise<Ask> {
    const ask: Ask = {
      askedBy,
      id: this.nextId('q'),
      question: question.trim(),
      options: options.map((option) => option.trim()).filter(Boolean),
      askedAt: Date.now(),
      state: 'asked',
      answer: '',
    };
    this.asks.push(ask);
    if (!ask.question) return this.finish(ask, 'invalid', this.texts.invalid);
    if (this.maxAsks !== undefined && this.asks.length > this.maxAsks) {
      return this.finish(ask, 'over_budget', this.texts.overBudget);
    }
    if (this.timeoutSeconds !== null && this.timeoutSeconds <= 0) {
      return this.finish(ask, 'timeout', this.texts.timeout);
    }
    signal?.throwIfAborted();
    const outcome = new Promise<[AskState, string]>((resolve, reject) => {
      const timer =
        this.timeoutSeconds === null
          ? undefined
          : setTimeout(() => settle('timeout', this.texts.timeout), this.timeoutSeconds * 1000);
      const onAbort = () => {
        cleanup();
        reject(signal?.reason ?? new Error('the question was cancelled'));
      };
      const cleanup = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.waiting.delete(ask.id);
      };
      const settle = (state: AskState, answer: string) => {
        cleanup();
        resolve([state, answer]);
      };
      this.waiting.set(ask.id, { ask, settle });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    this.emit(questionEvent(ask, this.remaining));
    this.enqueue(ask);
    const [state, answer] = await outcome;
    return this.finish(ask, state, answer);
  }

  /** Answers a waiting question. A reply that is an option number becomes that option. */
  answer(askId: string, reply: string): boolean {
    const waiting = this.waiting.get(askId);
    if (!waiting) return false;
    waiting.settle('answered', resolveReply(waiting.ask.options, reply));
    return true;
  }

  /** Skips a waiting question; the model is told to decide itself. */
  decline(askId: string, reason = ''): boolean {
    const waiting = this.waiting.get(askId);
    if (!waiting) return false;
    const because = reason.trim() ? ` (The human said: ${reason.trim()})` : '';
    waiting.settle('declined', `${this.texts.declined}${because}`);
    return true;
  }

  /** Questions currently waiting for a human. */
  pending(): Ask[] {
    return [...this.waiting.values()].map((waiting) => waiting.ask);
  }

  /**
   * Pull mode for UIs that poll instead of listening: the next question still waiting, or
   * undefined when none arrives within `timeoutMs` (undefined = wait as long as it takes).
   */
  nextAsk(timeoutMs?: number): Promise<Ask | undefined> {
    for (let next = this.queue.shift(); next; next = this.queue.shift()) {
      if (this.waiting.has(next.id)) return Promise.resolve(next);
    }
    return new Promise((resolve) => {
      const puller = (ask: Ask) => {
        clearTimeout(timer);
        resolve(ask);
      };
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              this.pullers.splice(this.pullers.indexOf(puller), 1);
              resolve(undefined);
            }, timeoutMs);
      this.pullers.push(puller);
    });
  }

  /**
   * Something the human says unasked. It waits in the inbox until the agent looks (the run is not
   * interrupted) and is appended to the brief at once. Empty text → undefined.
   */
  send(text: string): Mail | undefined {
    const body = text.trim();
    if (!body) return undefined;
    const mail: Mail = { id: this.nextId('m'), text: body, sentAt: Date.now(), taken: false };
    this.mail.push(mail);
    const amended = this.amend(body);
    this.emit(mailEvent(mail, 'queued', amended ? (this.amendPath ?? '') : ''));
    return mail;
  }

  /** Appends human words to `amendPath` under a timestamped heading; false when not possible. */
  amend(text: string, label = AMEND_LABEL): boolean {
    const body = text.trim();
    if (!this.amendPath || !body) return false;
    try {
      mkdirSync(dirname(this.amendPath), { recursive: true });
      const header = existsSync(this.amendPath) ? '' : '# Added during the run\n';
      appendFileSync(this.amendPath, `${header}\n## ${label} (${clockTime(new Date())})\n${body}\n`);
      return true;
    } catch {
      return false;
    }
  }

  /** Mail not yet delivered. */
  pendingMail(): Mail[] {
    return this.mail.filter((mail) => !mail.taken);
  }

  /** Delivers all waiting mail: the inbox tool's result text. */
  takeInbox(): string {
    const fresh = this.pendingMail();
    for (const mail of fresh) mail.taken = true;
    if (fresh.length === 0) return this.texts.noMail;
    for (const mail of fresh) {
      this.emit(mailEvent(mail, 'delivered', this.amendPath ?? ''));
      this.log(`\n- **Human, unasked** (${mail.id}) ${mail.text}\n`);
    }
    const lines = fresh.map((mail, index) => `${index + 1}. ${mail.text}`);
    const kept = this.amendPath
      ? `These have been appended to the brief (${this.amendPath}).`
      : 'These are NOT saved anywhere else: carry them forward yourself.';
    return ['While you worked, the human said (oldest first):', '', ...lines, '', kept].join('\n');
  }

  /** All questions so far as markdown. */
  transcript(): string {
    return this.asks.map((ask) => `- Q: ${ask.question}\n  A: [${ask.state}] ${ask.answer}`).join('\n');
  }

  /**
   * The MCP server table for `AgentSpec.mcpServers`. A fresh server object per call, because one
   * server instance can serve only one session at a time; all of them share this channel's state.
   */
  mcpServers(): Record<string, McpSdkServerConfigWithInstance> {
    const askTool = tool(
      'ask',
      'Ask the human a question and wait for the answer. Use it only when the answer changes what you do. ' +
        'Offer options when you can; the human may answer with an option number. The human may be away: ' +
        'if no answer comes you are told so, and must then decide yourself.',
      {
        question: z.string().describe('The question, self-contained.'),
        options: z.array(z.string()).optional().describe('Possible answers to choose from, if any.'),
      },
      async ({ question, options }, extra) => {
        const ask = await this.ask(question, options ?? [], {
          signal: abortSignalOf(extra),
          askedBy: 'agent',
        });
        return { content: [{ type: 'text', text: ask.answer }] };
      },
      { alwaysLoad: true },
    );
    const inboxTool = tool(
      'inbox',
      'Read what the human has said since you last looked, without waiting. Check it after each milestone.',
      {},
      async () => ({ content: [{ type: 'text', text: this.takeInbox() }] }),
      { alwaysLoad: true },
    );
    return { [HUMAN_SERVER]: createSdkMcpServer({ name: HUMAN_SERVER, tools: [askTool, inboxTool] }) };
  }

  private finish(ask: Ask, state: AskState, answer: string): Ask {
    ask.state = state;
    ask.answer = answer;
    ask.settledAt = Date.now();
    this.emit(questionEvent(ask, this.remaining));
    const options = ask.options.length > 0 ? `  - options: ${ask.options.join(' / ')}\n` : '';
    this.log(`- **Q** (${ask.id}) ${ask.question}\n${options}  - **A** [${state}] ${answer}\n`);
    return ask;
  }

  private enqueue(ask: Ask): void {
    const puller = this.pullers.shift();
    if (puller) puller(ask);
    else this.queue.push(ask);
  }

  private emit(event: AskEvent): void {
    if (!this.onEvent) return;
    try {
      this.onEvent(event);
    } catch (error) {
      this.uiErrors.push(error);
    }
  }

  /** Appends to the Q&A log, shown and private. Unlike the other writers this does not swallow
   * I/O errors: a lost record should be loud. */
  private log(text: string): void {
    if (!this.logPath) return;
    mkdirSync(dirname(this.logPath), { recursive: true });
    const header = existsSync(this.logPath)
      ? ''
      : '# Q&A log\n\n> Appended automatically. Kept for the record; it never enters a model context.\n\n';
    appendFileSync(this.logPath, shown(header + text), { mode: QA_LOG_MODE });
    // The mode above applies only to a new file, less the umask: a log an older run left readable
    // (or a strict umask left unwritable) gets 0600 here.
    if ((statSync(this.logPath).mode & 0o777) !== QA_LOG_MODE) chmodSync(this.logPath, QA_LOG_MODE);
  }

  private nextId(prefix: 'q' | 'm'): string {
    this.counter += 1;
    return `${prefix}${this.counter}`;
  }
}

function questionEvent(ask: Ask, remaining: number): AskEvent {
  return {
    kind: 'ask',
    text: ask.question,
    payload: {
      kind: 'question',
      id: ask.id,
      options: [...ask.options],
      state: ask.state,
      answer: ask.answer,
      remaining,
      askedAt: ask.askedAt,
      askedBy: ask.askedBy,
    },
  };
}

function mailEvent(mail: Mail, state: 'queued' | 'delivered', amended: string): AskEvent {
  return { kind: 'ask', text: mail.text, payload: { kind: 'mail', id: mail.id, state, amended } };
}

/** Local wall-clock time as HH:MM:SS. */
function clockTime(date: Date): string {
  return date.toTimeString().slice(0, 8);
}

/** The MCP request's abort signal, if the SDK passed one. */
function abortSignalOf(extra: unknown): AbortSignal | undefined {
  const signal = (extra as { signal?: unknown } | undefined)?.signal;
  return signal instanceof AbortSignal ? signal : undefined;
}
