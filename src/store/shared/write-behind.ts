/**
 * Write-behind to the shared store: jobs (an appended transcript batch, a change of the task's
 * records) run one at a time in the order they were pushed, behind the work that produced them.
 *
 * Invariants:
 * - Order: a job starts only after the one before it succeeded (or was given up as refused), so
 *   the shared store sees a session's batches and a task's changes in the order they happened.
 * - A job that fails for a reason that passes (the server is down, the network cut, a timeout)
 *   is retried, with a pause that doubles up to `maxRetryDelayMs`, for as long as the queue is
 *   open: nothing is dropped because the database was away. The jobs are idempotent (appends by
 *   uuid, records by key), so a retry after a reply that was lost writes nothing twice.
 * - The outage is said once per process (`OutageNotice`, shared by every queue of one store):
 *   one line naming the server (password masked) and that the work continues locally; when it
 *   answers again, one `-v` line.
 * - A job the server refuses (not an outage: a constraint, a bad value) is not retried forever,
 *   which would block every job behind it: it is said in one line and dropped here. Its data
 *   stays in the run directory, which the next start's reconcile sends again.
 * - Bounded memory through a long outage: with `catchUp`, at most `maxPending` jobs are kept; past
 *   that, new jobs are not kept and one catch-up job (which sends everything the local store holds
 *   and the shared one lacks) is queued instead. A job dropped while a catch-up runs queues
 *   another, so nothing appended meanwhile is left behind.
 * - `flush(ms)` waits at most `ms` for the queue to drain and says whether it did (an empty queue
 *   is drained, at once); `close()` stops retrying and answers every waiting flush at once, and
 *   every later one too; a job that fails after it is not said (the close tore its connection
 *   down). Nothing here throws into the work.
 */
import { errorCode, errorText, PostgresStoreError } from '../postgres/errors.js';

export interface OutageNotice {
  /** The store's failure; `line` is said once. */
  failed(error: unknown): void;
  /** The store answered after a failure. */
  recovered(): void;
  readonly down: boolean;
}

/** One line when the store first fails, one `-v` line when it answers again. */
export function outageNotice(
  display: string,
  say: { onWarning?: (line: string) => void; onVerbose?: (line: string) => void },
): OutageNotice {
  let warned = false;
  let down = false;
  return {
    failed(error) {
      down = true;
      if (warned) return;
      warned = true;
      say.onWarning?.(
        `PostgreSQL store ${display} does not answer (${outageCause(error)}); the work continues in the run directory and is sent when it answers again.`,
      );
    },
    recovered() {
      if (!down) return;
      down = false;
      say.onVerbose?.(`PostgreSQL store ${display} answers again; catching up.`);
    },
    get down() {
      return down;
    },
  };
}

/** Connection-level failures: what retrying can fix. */
const PASSING_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  '53300',
  '57P01',
  '57P02',
  '57P03',
  // idle_session_timeout, idle_in_transaction_session_timeout, statement_timeout (connection.ts):
  // a session the server ended or a statement it cancelled because an answer took too long.
  '57P05',
  '25P03',
  '57014',
  '40001',
  '40P01',
]);

export function isPassingFailure(error: unknown): boolean {
  const code = errorCode(error) ?? errorCode((error as { cause?: unknown } | null)?.cause);
  if (code !== undefined && (PASSING_CODES.has(code) || code.startsWith('08'))) return true;
  // Stryker disable next-line StringLiteral: the stand-in for a missing cause only has to match none of the outage words below
  const text = `${errorText(error)} ${errorText((error as { cause?: unknown } | null)?.cause ?? '')}`;
  return /timeout|timed out|terminated|not queryable|connection.*(lost|closed|ended)|ECONN|did not answer|cannot be reached|closed the connection/i.test(
    text,
  );
}

export interface WriteBehindOptions {
  notice: OutageNotice;
  /** A job dropped because the server refused it (one line each). */
  onRefused?: (label: string, error: unknown) => void;
  retryDelayMs?: number;
  maxRetryDelayMs?: number;
  /** Told whenever the queue becomes empty. */
  onDrained?: () => void;
  /** Replaces the jobs past `maxPending` (see the module header). */
  catchUp?: { label: string; run: () => Promise<void> };
  /** Default 20 000 jobs. */
  maxPending?: number;
}

interface Job {
  label: string;
  run: () => Promise<void>;
}

export class WriteBehindQueue {
  private readonly jobs: Job[] = [];
  private running = false;
  private closed = false;
  private wake: (() => void) | undefined;
  private waiters: Array<(drained: boolean) => void> = [];
  private catchUpQueued = false;
  // Stryker disable next-line BooleanLiteral: read only while a catch-up runs, which sets it first
  private catchUpRunning = false;
  // Stryker disable next-line BooleanLiteral: read only after a catch-up ran, which clears it when it starts
  private droppedDuringCatchUp = false;
  /** Jobs done (sent or given up) since the queue was made. */
  done = 0;

  constructor(private readonly options: WriteBehindOptions) {}

  /** Jobs not sent yet (the one running included). */
  get pending(): number {
    return this.jobs.length;
  }

  push(label: string, run: () => Promise<void>): void {
    if (this.closed) return;
    const catchUp = this.options.catchUp;
    if (catchUp !== undefined && this.jobs.length >= (this.options.maxPending ?? 20_000)) {
      // Stryker disable next-line ConditionalExpression: a drop while no catch-up runs is followed by one, which clears the flag when it starts
      if (this.catchUpRunning) this.droppedDuringCatchUp = true;
      this.queueCatchUp(catchUp);
      return;
    }
    this.jobs.push({ label, run });
    if (!this.running) void this.drain();
  }

  private queueCatchUp(catchUp: { label: string; run: () => Promise<void> }): void {
    if (this.catchUpQueued) return;
    this.catchUpQueued = true;
    this.jobs.push({
      label: catchUp.label,
      run: async () => {
        this.catchUpRunning = true;
        this.droppedDuringCatchUp = false;
        try {
          await catchUp.run();
        } finally {
          // Stryker disable next-line BooleanLiteral: a drop after the catch-up ended queues another, which clears the flag when it starts
          this.catchUpRunning = false;
          this.catchUpQueued = false;
        }
        // Jobs dropped while it read were appended after it looked: one more round.
        if (this.droppedDuringCatchUp) this.queueCatchUp(catchUp);
      },
    });
    if (!this.running) void this.drain();
  }

  /** Waits until every job pushed so far is done, at most `timeoutMs`; true when it drained. */
  async flush(timeoutMs: number): Promise<boolean> {
    if (this.jobs.length === 0) return true;
    // Closed: nothing will send what is left, so waiting could only run out the bound.
    if (this.closed) return false;
    // A flush cuts the current backoff pause short: the caller is about to wait anyway.
    this.wake?.();
    let timer: NodeJS.Timeout | undefined;
    const drained = new Promise<boolean>((resolve) => this.waiters.push(resolve));
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    const result = await Promise.race([drained, timeout]);
    clearTimeout(timer);
    return result;
  }

  /** Stops sending (what is left stays unsent) and releases every flush waiting. */
  close(): void {
    this.closed = true;
    this.wake?.();
    // Stryker disable next-line ConditionalExpression: a flush waits only while jobs are left (the last job done answers every waiter), so this is false whenever a waiter exists
    for (const waiter of this.waiters.splice(0)) waiter(this.jobs.length === 0);
  }

  private async drain(): Promise<void> {
    this.running = true;
    let delay = this.options.retryDelayMs ?? 500;
    while (this.jobs.length > 0 && !this.closed) {
      const job = this.jobs[0] as Job;
      try {
        await job.run();
        this.options.notice.recovered();
        delay = this.options.retryDelayMs ?? 500;
      } catch (error) {
        // A job given up by close() fails as its connections are torn down: that is no news.
        if (this.closed) break;
        if (isPassingFailure(error)) {
          this.options.notice.failed(error);
          await this.pause(delay);
          delay = Math.min(delay * 2, this.options.maxRetryDelayMs ?? 5000);
          continue;
        }
        this.options.onRefused?.(job.label, error);
      }
      this.jobs.shift();
      this.done += 1;
      if (this.jobs.length === 0) {
        this.options.onDrained?.();
        for (const waiter of this.waiters.splice(0)) waiter(true);
      }
    }
    this.running = false;
  }

  private pause(ms: number): Promise<void> {
    const paused = new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      timer.unref();
      this.wake = done;
      function done() {
        clearTimeout(timer);
        resolve();
      }
    });
    // Stryker disable next-line BlockStatement: a stale wake calls a settled pause's done: clearing a fired timer and resolving a settled promise do nothing
    return paused.finally(() => {
      this.wake = undefined;
    });
  }
}

/**
 * What went wrong, for the outage line: the driver's or socket's own words ("read ECONNRESET",
 * "Query read timeout") when a store error wraps them, since the line names the server already and
 * the wrapped advice (check the URL, the sslmode) is for a start that fails, not a run that goes on.
 */
function outageCause(error: unknown): string {
  const cause = error instanceof PostgresStoreError ? error.cause : undefined;
  return oneLine(errorText(cause ?? error));
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
