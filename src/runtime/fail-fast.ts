/**
 * Failures that no amount of waiting fixes, recognised while the attempt is still running, so the
 * step stops in seconds instead of after the binary's own retries and flower's hour of waiting.
 *
 * Measured against the bundled binary (see src/testing/README.md):
 * - it retries a 401 like a 5xx, ten times over ~2.5 minutes, reporting each as `api_retry` with
 *   `error_status: 401`; a 403 gives up at once;
 * - a model the endpoint does not serve ends as a synthetic message with `error: model_not_found`
 *   and a text without the number 404, which text matching took for a glitch (six attempts, ~140 s);
 * - a launch failure (`--resume` of an unknown session, `bypassPermissions` as root) ends the query
 *   before any `system/init`, with the reason only on the child's stderr or in the result's errors;
 * - a refused connection is reported as `api_retry` with `error_status: null`, `error: unknown`.
 *
 * Stops (each a complete, user-facing message; the step then ends without another attempt):
 * - credentials: the first `api_retry` or synthetic error with status 401/403 or an account error;
 * - model: a synthetic error saying the model does not exist, naming the model and where it was set;
 * - launch: the query ended before the binary's `init`, in the binary's own words (its stderr);
 * - unreachable: a connection failure while the endpoint has never answered this task
 *   (`EndpointHistory`) and a TCP probe confirms nothing answers there. An endpoint that did answer
 *   is left to the resilience policy: that is an outage, and outages are waited out.
 * - protocol: the same connection failure, never answered, and something does listen but does not
 *   speak the URL's protocol (`checkProtocol`: https on a plain-HTTP port → "use http://"; bytes of
 *   another protocol or a hang-up → "is this the right port?"). A TLS error or a parse error from
 *   the binary looks like a network failure (`error_status: null`) and used to be retried ~20 min.
 *
 * One sentinel per attempt. It records every HTTP answer in the endpoint history as it goes.
 */

import type { EnvMap } from '../config/paths.js';
import {
  checkProtocol,
  checkReachable,
  protocolMistakeText,
  type Reachability,
} from '../config/reachability.js';
import { credentialOrigin, modelOrigin } from '../config/setting-origin.js';
import type { EndpointHistory } from './endpoint-history.js';
import { type FlowerEvent, messageMetaOf } from './events.js';
import { classifyFailure, fatalFailureMessage } from './resilience.js';
import { CONTEXT_FULL_HANDOFF, INTERRUPTED_BY_HUMAN, type StepResult } from './step-result.js';

export type StopCause = 'credentials' | 'model' | 'launch' | 'unreachable' | 'protocol';

export interface FailFastStop {
  readonly cause: StopCause;
  /** The whole message for the user: what was refused and what to do. */
  readonly message: string;
}

export interface SentinelSetup {
  readonly env: EnvMap;
  readonly endpoints: EndpointHistory;
  /** Budget of the one TCP probe that confirms an endpoint is unreachable. */
  readonly probeTimeoutMs: number;
}

/** The binary's error codes (`SDKAssistantMessageError`) that mean the account or key was refused. */
const CREDENTIAL_ERRORS: ReadonlySet<string> = new Set([
  'authentication_failed',
  'oauth_org_not_allowed',
  'account_on_hold',
  'verification_required',
  'cloud_credential_error',
]);

/** How a missing model is worded: the binary's 404 text, and a gateway's 400. */
const MISSING_MODEL = /issue with the selected model|not a valid model|model[^.]{0,40}not (?:found|exist)/i;
const MODEL_IN_TEXT = /selected model \(([^)\s]+)\)|model:? (\S+) is not a valid model/i;

/** Lines of stderr kept: a launch failure says why in its last few lines. */
const STDERR_TAIL_CHARS = 4_000;
/** The binary's own diagnostic tags (`[claude-code:unrecognized_model] {...}`) are not its reason. */
const DIAGNOSTIC_LINE = /^\[claude-code:[^\]]*\]/;

function asString(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The line that says an endpoint is unreachable, with what to check. */
export function unreachableLine(probe: Reachability, baseUrlSet: boolean): string {
  const where = `${probe.host}:${probe.port}`;
  const reason = probe.reason ?? '';
  const check = baseUrlSet
    ? 'check ANTHROPIC_BASE_URL'
    : 'check the network (or ANTHROPIC_BASE_URL, if you use a gateway)';
  if (/ECONNREFUSED/.test(reason)) return `nothing listens at ${where}; ${check} — flower doctor`;
  if (/ENOTFOUND|EAI_AGAIN/.test(reason))
    return `${probe.host} does not resolve; ${check} and the network — flower doctor`;
  return `${where} does not answer${reason === '' ? '' : ` (${reason})`}; ${check} — flower doctor`;
}

/** The line that says the endpoint speaks another protocol than its URL names, with what to do. */
export function protocolLine(mistake: string): string {
  return `${mistake} — fix ANTHROPIC_BASE_URL; flower doctor shows where it is set`;
}

/** The binary's reason for not starting: the last stderr lines that are not diagnostics. */
export function launchWords(stderr: string): string | undefined {
  const lines = stderr
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !DIAGNOSTIC_LINE.test(line));
  return lines.length === 0 ? undefined : lines.slice(-3).join(' ');
}

export class AttemptSentinel {
  private readonly setup: SentinelSetup;
  private started = false;
  private sessionModel: string | undefined;
  private reachabilityChecked = false;
  private stderrTail = '';
  private stopped: FailFastStop | undefined;

  constructor(setup: SentinelSetup) {
    this.setup = setup;
  }

  /** For the SDK's `stderr` option: keeps the tail of what the binary printed. */
  readonly onStderr = (chunk: string): void => {
    this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_TAIL_CHARS);
  };

  /** Looks at one event of the running attempt; a returned stop ends the attempt now. */
  async inspect(event: FlowerEvent): Promise<FailFastStop | undefined> {
    if (this.stopped) return this.stopped;
    switch (event.kind) {
      case 'system':
        if (event.payload.subtype === 'init') {
          this.started = true;
          this.sessionModel = asString(event.payload.data.model);
        }
        return undefined;
      case 'retry': {
        if (event.payload.source !== 'binary') return undefined;
        const status = event.payload.errorStatus ?? null;
        if (status !== null) this.setup.endpoints.recordAnswer();
        // Stryker disable next-line StringLiteral: no error code is in the set, whichever string stands for none
        if (status === 401 || status === 403 || CREDENTIAL_ERRORS.has(event.payload.errorCode ?? ''))
          return this.halt(this.credentialsStop(status));
        // Stryker disable next-line ConditionalExpression: with a status the answer is recorded just above, so the probe would not run
        return status === null ? this.halt(await this.unreachableStop()) : undefined;
      }
      case 'error': {
        if (!event.payload.synthetic) return undefined;
        const status = event.payload.status;
        if (status !== undefined) this.setup.endpoints.recordAnswer();
        // Stryker disable next-line StringLiteral: no error code is in the set or is model_not_found, whichever string stands for none
        const code = event.payload.errorCode ?? '';
        if (status === 401 || status === 403 || CREDENTIAL_ERRORS.has(code))
          return this.halt(this.credentialsStop(status ?? null));
        if (code === 'model_not_found' || status === 404 || MISSING_MODEL.test(event.text))
          return this.halt(this.modelStop(event.text));
        return undefined;
      }
      default:
        if (messageMetaOf(event)?.model !== undefined) this.setup.endpoints.recordAnswer();
        return undefined;
    }
  }

  /**
   * After a failed attempt: the stop found while it ran, or one that only its end shows (it never
   * started; or it could not connect, with the binary retrying too little to have said so).
   */
  async conclude(result: StepResult): Promise<FailFastStop | undefined> {
    if (this.stopped || result.ok) return this.stopped;
    if (result.error === INTERRUPTED_BY_HUMAN || result.error === CONTEXT_FULL_HANDOFF) return undefined;
    if (!this.started) {
      const words = launchWords(this.stderrTail) ?? result.error ?? 'no reason given';
      return this.halt({
        cause: 'launch',
        message: `Claude Code stopped before its first turn: ${words}`,
      });
    }
    if (classifyFailure(result.error) === 'fatal') return undefined;
    return this.halt(await this.unreachableStop());
  }

  private halt(stop: FailFastStop | undefined): FailFastStop | undefined {
    if (stop) this.stopped = stop;
    return stop;
  }

  private credentialsStop(status: number | null): FailFastStop {
    const origin = credentialOrigin(this.setup.env);
    const refused = `${status === null ? 'the API' : `HTTP ${status}`}: the credential was refused`;
    return {
      cause: 'credentials',
      message: fatalFailureMessage(
        `${refused}${origin ? ` (${origin})` : ''}`,
        this.setup.env.ANTHROPIC_BASE_URL,
      ),
    };
  }

  private modelStop(text: string): FailFastStop {
    const named = MODEL_IN_TEXT.exec(text);
    const model = named?.[1] ?? named?.[2] ?? this.sessionModel ?? '(unnamed)';
    const origin =
      modelOrigin(model, this.setup.env) ??
      'no flower setting names it: the agent definition or Claude Code chose it';
    return {
      cause: 'model',
      // One line, what to do included: the CLI shows the first line of a step's error only.
      message: `the endpoint does not serve the model ${model} (${origin}); choose one it serves with \`flower setup\``,
    };
  }

  /**
   * A stop when the endpoint never answered this task and either a TCP probe finds nothing there,
   * or something listens that does not speak the URL's protocol (https on a plain-HTTP port, the
   * port of another server): the binary would fail every request alike for its whole retry budget.
   */
  private async unreachableStop(): Promise<FailFastStop | undefined> {
    if (this.reachabilityChecked || this.setup.endpoints.answered()) return undefined;
    this.reachabilityChecked = true;
    const baseUrl = this.setup.env.ANTHROPIC_BASE_URL;
    const probe = await checkReachable(baseUrl, this.setup.probeTimeoutMs);
    if (probe.host === '') return undefined;
    if (!probe.reachable) return { cause: 'unreachable', message: unreachableLine(probe, Boolean(baseUrl)) };
    // The default endpoint is Anthropic's own: a protocol mismatch there is no setting of the user's.
    if (!baseUrl) return undefined;
    const mistake = protocolMistakeText(baseUrl, await checkProtocol(baseUrl, this.setup.probeTimeoutMs));
    return mistake === undefined ? undefined : { cause: 'protocol', message: protocolLine(mistake) };
  }
}
