/**
 * One attempt: one SDK query from start to end (or to a cooperative break), with its books kept
 * in the step's `StepResult`.
 *
 * Invariants:
 * - The session id is captured from the first message that carries one (the init message), and
 *   announced at once, so a process killed a second later still leaves it in the lineage.
 * - A break (handoff due, human interrupt) happens only at a message boundary, and never in front
 *   of a `result` message: the turn it closes is already over, and cutting it would throw away its
 *   cost and its outcome. A human interrupt also asks the agent to end its turn at once
 *   (`onRunning`), so it does not wait for a long reply to produce the next message.
 * - Synthetic API errors go to `errors`, never to `text`. A failed attempt that produced no prose
 *   keeps the text of an earlier one.
 * - Turns are added up over every `result` message: with background subagents one query reports
 *   several results (one per main-thread turn the subagents' notifications start). Cost is not:
 *   the binary reports the session's running total, which also survives a resume (measured:
 *   three one-turn queries on one session reported 0.0042, 0.0084, 0.0126). Each result is
 *   charged the growth of that total over `costBaseline`, the total the session had before.
 * - Nothing a model or API does makes this throw: failures end up in `result.error`.
 * - An error from `watch.inspect` stops the turn at once (an interrupt: the binary would otherwise
 *   retry a rejected key for minutes) and becomes the attempt's error whatever the turn reports.
 *   The interrupted turn's `result` is still read, so its cost is booked; if none comes within
 *   `FATAL_GRACE_MS` the query is closed.
 */
import type { Options } from '@anthropic-ai/claude-agent-sdk';
import { type EventSink, type FlowerEvent, normalize } from './events.js';
import { startQuery } from './options.js';
import type { StepResult } from './step-result.js';

/** How the step loop watches an attempt from outside. */
export interface AttemptWatch {
  /** A session id appeared for the first time in this attempt (or changed, after a fork). */
  onSession(sessionId: string): void;
  /** Checked at every message boundary; a returned error value ends the attempt with it. */
  breakReason(result: StepResult): string | undefined;
  /** Every normalised event, before it reaches the sink: the loop tracks context and models here. */
  observe(event: FlowerEvent, result: StepResult): void;
  /**
   * Every normalised event, after the sink saw it: a returned error is a failure retrying cannot
   * fix (see fail-fast.ts). The turn is stopped at once and the attempt ends with that error.
   */
  inspect?(event: FlowerEvent): Promise<string | undefined>;
  /**
   * The query is running: `stopTurn` asks the agent to end its current turn now (a human
   * interrupt need not wait for a long reply to finish before the next message boundary);
   * `endNow` also ends the binary if the turn does not stop within `graceMs` (default
   * `FATAL_GRACE_MS`).
   */
  onRunning?(stopTurn: () => void, endNow: (graceMs?: number) => void): void;
}

/** How long a turn stopped for a fatal failure may take to report its result (measured: ~10 ms). */
export const FATAL_GRACE_MS = 5_000;

function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

/**
 * Runs `prompt` with `options` and records the outcome in `result`. `costBaseline` is the running
 * total of the resumed session before this query (0 for a new one). Returns the session's running
 * total after it.
 */
export async function runAttempt(
  prompt: string,
  options: Options,
  result: StepResult,
  watch: AttemptWatch,
  sink: EventSink | undefined,
  costBaseline = 0,
): Promise<number> {
  let sessionTotal = costBaseline;
  result.ok = false;
  result.error = null;
  const texts: string[] = [];
  const errorsBefore = result.errors.length;
  const session = startQuery(prompt, options);
  let fatal: string | undefined;
  let closeAfterGrace: NodeJS.Timeout | undefined;
  const stopForGood = (reason: string) => {
    fatal = reason;
    session.interrupt().catch(() => {
      // Already over: the iterator ends by itself.
    });
    closeAfterGrace = setTimeout(() => session.close(), FATAL_GRACE_MS);
  };
  watch.onRunning?.(
    () => {
      session.interrupt().catch(() => {
        // The turn may have ended on its own meanwhile; the boundary check still applies.
      });
    },
    // The agent must stop working now (the task's lease is in danger): interrupt, and end the
    // binary if it has not reported its result within the grace.
    (graceMs = FATAL_GRACE_MS) => {
      session.interrupt().catch(() => {});
      closeAfterGrace ??= setTimeout(() => session.close(), graceMs);
    },
  );
  try {
    for await (const message of session) {
      const sessionId = (message as { session_id?: unknown }).session_id;
      if (typeof sessionId === 'string' && sessionId !== '' && sessionId !== result.sessionId) {
        result.sessionId = sessionId;
        watch.onSession(sessionId);
      }
      if (message.type !== 'result') {
        const reason = watch.breakReason(result);
        if (reason !== undefined) {
          result.ok = false;
          result.error = reason;
          break;
        }
      }
      for (const event of normalize(message)) {
        if (event.kind === 'result') {
          const reported = event.payload.sessionCostUsd ?? event.payload.costUsd;
          event.payload.costUsd = Math.max(0, reported - sessionTotal);
          sessionTotal = Math.max(sessionTotal, reported);
        }
        watch.observe(event, result);
        sink?.(event);
        if (event.kind === 'text' && !event.payload.subagent) texts.push(event.text);
        else if (event.kind === 'error' && event.payload.synthetic) result.errors.push(event.text);
        else if (event.kind === 'result') {
          if (event.payload.sessionId) result.sessionId = event.payload.sessionId;
          result.costUsd += event.payload.costUsd;
          result.numTurns += event.payload.numTurns;
          result.ok = !event.payload.isError;
          if (result.ok) result.error = null;
          // A failed API call reports subtype "success" with is_error; the SDK then throws with the real text.
          else
            result.error =
              event.payload.errors.join('; ') ||
              (event.payload.subtype === 'success' ? null : event.payload.subtype);
        }
        if (fatal === undefined && watch.inspect) {
          const reason = await watch.inspect(event);
          if (reason !== undefined) stopForGood(reason);
        }
      }
      if (fatal !== undefined && message.type === 'result') break;
    }
  } catch (error) {
    result.ok = false;
    result.error = describeError(error);
  } finally {
    clearTimeout(closeAfterGrace);
    session.close();
  }
  if (fatal !== undefined) {
    result.ok = false;
    result.error = fatal;
  }
  const newErrors = result.errors.slice(errorsBefore);
  if (!result.ok && !result.error && newErrors.length > 0)
    result.error = newErrors[newErrors.length - 1] ?? null;
  if (!result.ok && !result.error) result.error = 'the session ended without a result';
  if (newErrors.length === 0 || result.ok || texts.length > 0) {
    result.text = texts.join('\n').trim() || result.text;
  }
  return sessionTotal;
}
