/**
 * The credential probe: one real, minimal request that tells whether the configured key, endpoint
 * and model actually work, before a long run is started on them.
 *
 * Invariants:
 * - Exactly one `POST <base>/v1/messages` (non-streaming, `max_tokens` 16, one user message "hi").
 *   Never `max_tokens` 1: a model that always thinks first was measured taking ~30 s at 1 and
 *   ~3.6 s at 16.
 * - Verdicts: `auth` (no credential, 401, 403) and `config` (404, or a 400 whose body clearly says the
 *   model does not exist) mean "reconfigure"; `net` (5xx, connection, DNS, TLS, timeout) means "the
 *   network, not you"; everything else is `ok`, including undecidable errors such as 429 or a plain
 *   400: better to let a run start than to block a working setup on a guess.
 * - The word "model" alone never means a bad model: Anthropic error bodies mention it all the time.
 * - Never throws.
 */
import { activeCredentialKey, DEFAULT_BASE_URL } from './credentials.js';
import type { EnvMap } from './paths.js';

export type ProbeVerdict = 'ok' | 'auth' | 'config' | 'net';

export interface ProbeResult {
  verdict: ProbeVerdict;
  /** One line for humans: the HTTP status and the start of the body, or the network error. */
  detail: string;
  /** HTTP status when a response arrived. */
  status?: number;
  /** The model name the probe asked for. */
  model: string;
  /** The URL the probe posted to. */
  url: string;
}

export interface ProbeOptions {
  /** Whole-request timeout. */
  timeoutMs?: number;
}

/** Asked for when no model is configured: a cheap model every Anthropic account has. */
export const DEFAULT_PROBE_MODEL = 'claude-3-5-haiku-20241022';
export const PROBE_MAX_TOKENS = 16;
export const PROBE_TIMEOUT_MS = 20_000;
/** Body characters kept in the detail line. */
const DETAIL_CHARS = 200;

/**
 * Phrases that, in a 400 body, mean the model name is wrong. "not a valid model" is ours: gateways
 * word an unknown model ID that way ("model: X is not a valid model ID").
 */
const MISSING_MODEL_PHRASES = [
  'not_found',
  'not found',
  'does not exist',
  'unknown model',
  'no such model',
  'invalid model',
  'not a valid model',
];

/** `FLOWER_NO_PROBE` set to anything non-empty turns the probe off (its value is not parsed). */
export function probeDisabled(env: EnvMap): boolean {
  return Boolean(env.FLOWER_NO_PROBE);
}

/** Prefer the cheapest configured model: the haiku mapping, then the main model, then a default. */
export function probeModel(env: EnvMap): string {
  return env.ANTHROPIC_DEFAULT_HAIKU_MODEL || env.ANTHROPIC_MODEL || DEFAULT_PROBE_MODEL;
}

export function probeUrl(env: EnvMap): string {
  return `${(env.ANTHROPIC_BASE_URL || DEFAULT_BASE_URL).replace(/\/+$/, '')}/v1/messages`;
}

/** Pure classification of an HTTP answer. */
export function classifyProbeResponse(
  status: number,
  body: string,
): { verdict: ProbeVerdict; detail: string } {
  const excerpt = body.slice(0, DETAIL_CHARS).replace(/\s+/g, ' ').trim();
  const detail = `HTTP ${status}${excerpt ? ` ${excerpt}` : ''}`;
  if (status < 400) return { verdict: 'ok', detail };
  if (status === 401 || status === 403) return { verdict: 'auth', detail };
  if (status === 404) return { verdict: 'config', detail };
  if (status === 400) {
    const lower = body.toLowerCase();
    if (MISSING_MODEL_PHRASES.some((phrase) => lower.includes(phrase))) return { verdict: 'config', detail };
  }
  if (status >= 500) return { verdict: 'net', detail };
  return {
    verdict: 'ok',
    detail: `${detail} (cannot tell whether the credentials work; letting it through)`,
  };
}

function networkDetail(error: unknown): string {
  if (error instanceof Error) {
    if (error.name === 'TimeoutError') return `TimeoutError: no answer within the timeout`;
    // fetch wraps the socket error ("fetch failed"); the cause names what really happened.
    const cause = (error as { cause?: unknown }).cause;
    if (cause instanceof Error) {
      const code = (cause as NodeJS.ErrnoException).code;
      return `${code ?? cause.name}: ${cause.message}`;
    }
    return `${error.name}: ${error.message}`;
  }
  return String(error);
}

export async function probeCredentials(
  env: EnvMap = process.env,
  options: ProbeOptions = {},
): Promise<ProbeResult> {
  const model = probeModel(env);
  const url = probeUrl(env);
  const credential = activeCredentialKey(env);
  if (credential === undefined) {
    return {
      verdict: 'auth',
      detail: 'no credentials (ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN)',
      model,
      url,
    };
  }
  try {
    new URL(url);
  } catch {
    return { verdict: 'config', detail: `ANTHROPIC_BASE_URL is not a valid URL: ${url}`, model, url };
  }
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'anthropic-version': '2023-06-01',
  };
  if (credential === 'ANTHROPIC_API_KEY') headers['x-api-key'] = env.ANTHROPIC_API_KEY!;
  else headers.authorization = `Bearer ${env.ANTHROPIC_AUTH_TOKEN!}`;
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        model,
        max_tokens: PROBE_MAX_TOKENS,
        messages: [{ role: 'user', content: 'hi' }],
      }),
      signal: AbortSignal.timeout(options.timeoutMs ?? PROBE_TIMEOUT_MS),
    });
    const body = await response.text();
    return { ...classifyProbeResponse(response.status, body), status: response.status, model, url };
  } catch (error) {
    return { verdict: 'net', detail: networkDetail(error), model, url };
  }
}
