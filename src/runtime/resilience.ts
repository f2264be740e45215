/**
 * Surviving network outages and overloaded servers without losing the conversation.
 *
 * A run can last hours, so the network will drop at some point. The policy here:
 * - Classify every failure first. Fatal ones (bad key, no permission, bad request, no credit)
 *   stop at once: waiting out a typo in the API key only burns time. Transient ones (network,
 *   429/5xx/529, overload) are waited out. Fatal patterns are checked *before* transient ones,
 *   because a 401 message often also says "connection", and the wrong order would wait forever.
 *   Anything unrecognised is retried (by default): an unknown failure is more often a glitch than
 *   a permanent condition, and the attempt budget bounds the cost of being wrong.
 * - Wait for the endpoint before retrying: a free DNS + TCP probe of the host:port of
 *   `ANTHROPIC_BASE_URL` (the configured gateway, not api.anthropic.com), every `probeIntervalMs`,
 *   with one notice line when it goes away and one when it is back; in between, a live status after
 *   every failed probe (down since when, next probe, when flower gives up) for a screen to show.
 *   An endpoint that never answered this task is not waited for at all (fail-fast.ts), whether
 *   nothing listens there or something that does not speak the URL's protocol (https on a
 *   plain-HTTP port, another server's port): the TCP probe here cannot tell the latter apart.
 * - Resume the same session afterwards with `resumePrompt`, which carries no error details: the
 *   model needs to know it was cut off, not whether it was ENOTFOUND or a 503. The details belong
 *   in the manifest's `errors`, never in the context.
 */
import { setTimeout as sleepFor } from 'node:timers/promises';
import { checkReachable, endpointOf } from '../config/reachability.js';

export interface ResiliencePolicy {
  /** Off means a failed attempt ends the step (tests and one-shot scripts that want to see failures). */
  enabled: boolean;
  /** Attempts per step including the first, so at most five back-offs; enough for a bad hour. */
  maxAttempts: number;
  /** First back-off: long enough for a rate limiter to refill, short enough not to be noticed. */
  baseDelayMs: number;
  /** Back-off ceiling (reached from the fifth retry): longer waits add nothing but idle time. */
  maxDelayMs: number;
  /** One probe's budget: a TCP handshake to a healthy endpoint takes milliseconds, not seconds. */
  probeTimeoutMs: number;
  /** Pause between probes while offline: frequent enough to resume promptly, rare enough to be noise-free. */
  probeIntervalMs: number;
  /** Give up after this long offline: an hour is no longer a glitch, something is broken. */
  maxOfflineWaitMs: number;
  /** Retry failures nobody recognised: more often glitches than permanent, and attempts are bounded. */
  retryUnknown: boolean;
  /** Sent when resuming after a failure; deliberately free of error details (they would mislead the model). */
  resumePrompt: string;
}

export const defaultResiliencePolicy: Readonly<ResiliencePolicy> = Object.freeze({
  enabled: true,
  maxAttempts: 6,
  baseDelayMs: 4_000,
  maxDelayMs: 120_000,
  probeTimeoutMs: 5_000,
  probeIntervalMs: 15_000,
  maxOfflineWaitMs: 60 * 60_000,
  retryUnknown: true,
  resumePrompt:
    'Your previous turn was cut off before it finished. Check what has already been saved to disk ' +
    '(the workbench, notes, artifacts and the files you were editing) and continue from the point ' +
    'where you stopped. Do not start over.',
});

/** The default policy with `overrides` applied. */
export function resiliencePolicy(overrides: Partial<ResiliencePolicy> = {}): ResiliencePolicy {
  return { ...defaultResiliencePolicy, ...overrides };
}

export type FailureKind = 'fatal' | 'transient' | 'unknown';

/** Credentials, permissions, malformed requests, exhausted money or turns: retrying cannot help. */
const FATAL = new RegExp(
  [
    String.raw`\b(?:400|401|403|404)\b`,
    // Also the API's own wording for a bad key, "invalid x-api-key".
    'invalid.?(?:x.)?api.?key',
    'authentication',
    'unauthorized',
    'permission denied',
    'invalid_request',
    'credit balance',
    'quota exceeded',
    'budget',
    'max_turns',
    'CLINotFound',
    // The agent cannot even start (a variable too large for the kernel); the message names it.
    'E2BIG',
    // A damaged session database: retrying reads the same broken pages (it is set aside at open).
    'database disk image is malformed',
    'file is not a database',
  ].join('|'),
  'i',
);

/** The network, the gateway or the model service is having a bad moment: wait and resume. */
const TRANSIENT = new RegExp(
  [
    'ENOTFOUND',
    'EAI_AGAIN',
    'ECONNRESET',
    'ECONNREFUSED',
    'ETIMEDOUT',
    'EPIPE',
    'EHOSTUNREACH',
    'ENETDOWN',
    'socket hang up',
    'fetch failed',
    'network error',
    'connection error',
    "can't reach the api server",
    String.raw`\b(?:429|500|502|503|504|529)\b`,
    'overloaded',
    'rate.?limit',
    'too many requests',
    'timeout',
    'timed out',
    'temporarily unavailable',
    'service unavailable',
    'internal server error',
  ].join('|'),
  'i',
);

/** Sorts a failure message into fatal / transient / unknown (fatal wins when both match). */
export function classifyFailure(text: string | null | undefined): FailureKind {
  if (!text) return 'unknown';
  if (FATAL.test(text)) return 'fatal';
  if (TRANSIENT.test(text)) return 'transient';
  return 'unknown';
}

/** Whether a failure of this kind is worth another attempt under `policy`. */
export function shouldRetry(kind: FailureKind, policy: ResiliencePolicy = defaultResiliencePolicy): boolean {
  return kind === 'transient' || (kind === 'unknown' && policy.retryUnknown);
}

/**
 * Milliseconds to wait after failed attempt number `attempt` (1-based):
 * `min(base · 2^(attempt−1), max) · (0.75 + 0.5 · random)`. The ±25 % jitter keeps many processes
 * that lost the network together from all retrying in the same instant when it comes back.
 */
export function backoffDelay(
  attempt: number,
  policy: ResiliencePolicy = defaultResiliencePolicy,
  random: () => number = Math.random,
): number {
  const exponential = Math.min(policy.baseDelayMs * 2 ** (Math.max(1, attempt) - 1), policy.maxDelayMs);
  return exponential * (0.75 + 0.5 * random());
}

/** "45 seconds" below a minute, else whole minutes ("60 minutes"). */
export function describeWait(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds} ${seconds === 1 ? 'second' : 'seconds'}`;
  const minutes = Math.round(seconds / 60);
  return `${minutes} ${minutes === 1 ? 'minute' : 'minutes'}`;
}

/** The state of a wait for the endpoint, after a failed probe. Times are epoch milliseconds. */
export interface OfflineStatus {
  /** `host:port`. */
  endpoint: string;
  downSince: number;
  nextProbeAt: number;
  givesUpAt: number;
}

/** `HH:MM` in local time. */
function clockTime(at: number): string {
  const time = new Date(at);
  return `${String(time.getHours()).padStart(2, '0')}:${String(time.getMinutes()).padStart(2, '0')}`;
}

/** `endpoint down since 09:14, next probe in 12 s, gives up at 10:14`. */
export function describeOffline(status: OfflineStatus, now: number = Date.now()): string {
  const next = Math.max(0, Math.round((status.nextProbeAt - now) / 1000));
  return (
    `endpoint ${status.endpoint} down since ${clockTime(status.downSince)}, ` +
    `next probe in ${next} s, gives up at ${clockTime(status.givesUpAt)}`
  );
}

/** What made an attempt fail, in one short line for a retry notice (the full text is in the manifest). */
export function describeFailure(error: string | null | undefined, maxChars = 120): string {
  const line =
    (error ?? '')
      .replace(/^Error: /, '')
      .replace(/^Claude Code returned an error result: /, '')
      .split('\n')[0]
      ?.trim() ?? '';
  if (line === '') return 'no reason given';
  return line.length > maxChars ? `${line.slice(0, maxChars - 1)}…` : line;
}

export interface WaitOnlineOptions {
  policy?: ResiliencePolicy;
  /** Receives the one "unreachable" line and, if it comes back, the one "reachable again" line. */
  onNotice?: (line: string) => void;
  /** After every failed probe: the live state of the wait (a screen may redraw it in place). */
  onStatus?: (status: OfflineStatus) => void;
  /** Aborting stops the wait at once; the returned promise then rejects with the abort reason. */
  signal?: AbortSignal;
  /** Waits between probes; replaceable so callers can observe or shorten the pauses. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

const defaultSleep = (ms: number, signal?: AbortSignal): Promise<void> => sleepFor(ms, undefined, { signal });

/**
 * Probes the endpoint of `baseUrl` until it answers (true) or `maxOfflineWaitMs` has passed
 * (false). Returns true at once, silently, when the endpoint is reachable on the first probe, and
 * false at once when `baseUrl` is not a URL at all.
 */
export async function waitOnline(
  baseUrl: string | undefined,
  options: WaitOnlineOptions = {},
): Promise<boolean> {
  const policy = options.policy ?? defaultResiliencePolicy;
  const sleep = options.sleep ?? defaultSleep;
  const { signal } = options;
  try {
    endpointOf(baseUrl);
  } catch {
    // A malformed URL never becomes reachable: waiting an hour for it would only hide the mistake.
    options.onNotice?.(`ANTHROPIC_BASE_URL is not a valid URL (${baseUrl}); run \`flower setup\` to fix it.`);
    return false;
  }
  const started = Date.now();
  const deadline = started + policy.maxOfflineWaitMs;
  let announced = false;
  for (;;) {
    signal?.throwIfAborted();
    const probe = await checkReachable(baseUrl, policy.probeTimeoutMs);
    const where = `${probe.host}:${probe.port}`;
    if (probe.reachable) {
      if (announced) options.onNotice?.(`${where} is reachable again; continuing.`);
      return true;
    }
    if (!announced) {
      announced = true;
      options.onNotice?.(
        `${where} is unreachable; waiting for it to come back (up to ${describeWait(policy.maxOfflineWaitMs)}).`,
      );
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0) return false;
    const pause = Math.min(policy.probeIntervalMs, remaining);
    options.onStatus?.({
      endpoint: where,
      downSince: started,
      nextProbeAt: Date.now() + pause,
      givesUpAt: deadline,
    });
    try {
      await sleep(pause, signal);
    } catch (error) {
      signal?.throwIfAborted(); // surface the caller's own abort reason, not the timer's wrapper
      throw error;
    }
  }
}

/** The step's error when the endpoint stayed away for the whole offline budget. */
export function offlineGaveUpError(
  lastError: string,
  policy: ResiliencePolicy = defaultResiliencePolicy,
): string {
  return `${lastError} | the network did not come back within ${describeWait(policy.maxOfflineWaitMs)}`;
}

/**
 * What the user reads when a failure is fatal: retrying cannot fix it, and `flower setup` is where
 * the key and endpoint are fixed. `baseUrl` is named because a wrong gateway is a common cause.
 */
export function fatalFailureMessage(error: string, baseUrl?: string): string {
  const endpoint = baseUrl ? ` at ${baseUrl}` : '';
  return (
    `The model service${endpoint} refused the request: ${error}\n` +
    'This is not a network problem and retrying will not fix it (wrong or expired API key, missing ' +
    'permission, unknown model, or no credit left). Run `flower setup` to check the key, endpoint ' +
    'and model, or `flower doctor` to see where each setting comes from.'
  );
}
