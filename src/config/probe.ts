/**
 * The credential probe: one real, minimal request that tells whether the configured key, endpoint
 * and model actually work, before a long run is started on them.
 *
 * Invariants:
 * - Exactly one `POST <base>/v1/messages` (non-streaming, `max_tokens` 16, one user message "hi").
 *   Never `max_tokens` 1: a model that always thinks first was measured taking ~30 s at 1 and
 *   ~3.6 s at 16.
 * - It asks with the model the run will use (`ANTHROPIC_MODEL`, a tier alias through its
 *   `ANTHROPIC_DEFAULT_*_MODEL` mapping), so a gateway that serves only the configured model passes
 *   and a configured model the endpoint does not serve fails here rather than in the run. A dated
 *   snapshot as the default was retired by the API and blocked gateways that worked.
 * - With no model configured the run uses the binary's own default, which flower cannot name; the
 *   probe then asks for `DEFAULT_PROBE_MODEL`, an alias the API serves. If the endpoint does not
 *   serve that one the verdict is still `ok`: the request got past authentication (a key is
 *   checked before the model is looked up), and nothing the user configured is wrong.
 * - Verdicts: `auth` (no credential, 401, 403) and `config` (404, or a 400 whose body clearly says the
 *   model does not exist) mean "reconfigure"; `net` (5xx, connection, DNS, TLS, timeout) means "the
 *   network, not you"; everything else is `ok`, including undecidable errors such as 429 or a plain
 *   400: better to let a run start than to block a working setup on a guess.
 * - A network error on a configured URL is looked at once more (`checkProtocol`): https on a
 *   plain-HTTP port, http on a TLS port, or a port answering another protocol is `config` (issue
 *   21: it was "net" and the run retried it for 20 minutes).
 * - The word "model" alone never means a bad model: Anthropic error bodies mention it all the time.
 * - Never throws.
 */
import { activeCredentialKey, DEFAULT_BASE_URL } from './credentials.js';
import type { EnvMap } from './paths.js';
import { checkProtocol, HUNG_UP, protocolMistakeText } from './reachability.js';
import { apiModelName } from './setting-origin.js';

export type ProbeVerdict = 'ok' | 'auth' | 'config' | 'net';

export interface ProbeResult {
  verdict: ProbeVerdict;
  /** One line for humans: the HTTP status and the start of the body, or the network error. */
  detail: string;
  /** HTTP status when a response arrived. */
  status?: number;
  /** The model name the probe asked for. */
  model: string;
  /** The key that configured `model`; absent when the probe used `DEFAULT_PROBE_MODEL`. */
  modelKey?: string;
  /** The endpoint said it does not serve `model` (verdict `config`). */
  modelMissing?: boolean;
  /** The URL the probe posted to. */
  url: string;
}

export interface ProbeOptions {
  /** Whole-request timeout. */
  timeoutMs?: number;
}

/** Asked for when no model is configured: a cheap model's alias (aliases outlive dated snapshots). */
export const DEFAULT_PROBE_MODEL = 'claude-haiku-4-5';
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

/** Claude Code's tier aliases and the keys that map them to a model name. */
const TIER_KEYS: Readonly<Record<string, string>> = {
  opus: 'ANTHROPIC_DEFAULT_OPUS_MODEL',
  sonnet: 'ANTHROPIC_DEFAULT_SONNET_MODEL',
  haiku: 'ANTHROPIC_DEFAULT_HAIKU_MODEL',
};

export interface ProbeModelChoice {
  /** The name sent to the API. */
  model: string;
  /** The key that named it; absent for the default. */
  key?: string;
}

/**
 * The model the run's main thread will ask for: `ANTHROPIC_MODEL`, or for a tier alias (`opus`,
 * `sonnet[1m]`) the model its mapping names. An alias without a mapping, or no model at all, is
 * resolved by the binary itself; the probe then asks for `DEFAULT_PROBE_MODEL`.
 */
export function probeModelChoice(env: EnvMap): ProbeModelChoice {
  const main = apiModelName(env.ANTHROPIC_MODEL ?? '');
  if (main === '') return { model: DEFAULT_PROBE_MODEL };
  if (!/^[a-z]+$/i.test(main)) return { model: main, key: 'ANTHROPIC_MODEL' };
  const tierKey = TIER_KEYS[main.toLowerCase()];
  const mapped = tierKey === undefined ? '' : apiModelName(env[tierKey] ?? '');
  return mapped === '' || tierKey === undefined
    ? { model: DEFAULT_PROBE_MODEL }
    : { model: mapped, key: tierKey };
}

export function probeModel(env: EnvMap): string {
  return probeModelChoice(env).model;
}

export function probeUrl(env: EnvMap): string {
  return `${(env.ANTHROPIC_BASE_URL || DEFAULT_BASE_URL).replace(/\/+$/, '')}/v1/messages`;
}

/** What the probe asked for, as far as classifying the answer needs it. */
export interface ProbeAsked {
  model: string;
  /** False when the model is flower's default guess rather than the user's setting. */
  configured: boolean;
}

/**
 * Pure classification of an HTTP answer. `asked` decides what a "no such model" answer means: a
 * configured model the endpoint lacks is a setup error (`modelMissing`); flower's own default is
 * not, as long as the body names that model (a 404 that does not is a wrong URL path).
 */
export function classifyProbeResponse(
  status: number,
  body: string,
  asked?: ProbeAsked,
): { verdict: ProbeVerdict; detail: string; modelMissing?: boolean } {
  const excerpt = body.slice(0, DETAIL_CHARS).replace(/\s+/g, ' ').trim();
  const detail = `HTTP ${status}${excerpt ? ` ${excerpt}` : ''}`;
  if (status < 400) return { verdict: 'ok', detail };
  if (status === 401 || status === 403) return { verdict: 'auth', detail };
  const lower = body.toLowerCase();
  const missingModel =
    status === 404 || (status === 400 && MISSING_MODEL_PHRASES.some((phrase) => lower.includes(phrase)));
  if (missingModel) {
    const namesModel = asked !== undefined && lower.includes(asked.model.toLowerCase());
    if (asked !== undefined && !asked.configured && namesModel) {
      return {
        verdict: 'ok',
        detail: `${detail} (the key was accepted; this endpoint does not serve ${asked.model}, which flower asked for only because no model is configured)`,
      };
    }
    return namesModel ? { verdict: 'config', detail, modelMissing: true } : { verdict: 'config', detail };
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
  const choice = probeModelChoice(env);
  const model = choice.model;
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
    const asked = { model, configured: choice.key !== undefined };
    return {
      ...classifyProbeResponse(response.status, body, asked),
      status: response.status,
      model,
      ...(choice.key === undefined ? {} : { modelKey: choice.key }),
      url,
    };
  } catch (error) {
    const wrong = await protocolVerdict(env.ANTHROPIC_BASE_URL, options.timeoutMs ?? PROTOCOL_TIMEOUT_MS);
    if (wrong !== undefined) return { ...wrong, model, url };
    return { verdict: 'net', detail: networkDetail(error), model, url };
  }
}

/** Budget of each of the (at most two) connections of the protocol check after a network error. */
const PROTOCOL_TIMEOUT_MS = 5_000;

/**
 * After a network error: is the configured URL on the wrong protocol or port? A plain-HTTP answer
 * to an https URL, a TLS handshake on an http one, or bytes of another protocol are settings that
 * no wait repairs (`config`). A hang-up without a byte is named but stays `net`: a proxy whose
 * backend is down (docker-proxy, a port-forward) does the same during an outage.
 */
async function protocolVerdict(
  baseUrl: string | undefined,
  timeoutMs: number,
): Promise<{ verdict: ProbeVerdict; detail: string } | undefined> {
  if (!baseUrl) return undefined;
  const check = await checkProtocol(baseUrl, timeoutMs);
  const detail = protocolMistakeText(baseUrl, check);
  if (detail === undefined) return undefined;
  const hungUp = check.mistake === 'not-http' && check.observed === HUNG_UP;
  return { verdict: hungUp ? 'net' : 'config', detail };
}
