/**
 * Is the model endpoint reachable? A free check: DNS lookup plus a TCP handshake to the host and
 * port of `ANTHROPIC_BASE_URL`, then the socket is closed at once.
 *
 * `checkProtocol` (below) asks the next question, once per decision: does what listens there speak
 * the URL's protocol?
 *
 * Invariants of `checkReachable`:
 * - No HTTP and no credentials: this runs every few seconds while waiting out a network outage, so
 *   it must cost nothing and must not count against any quota.
 * - It targets the configured endpoint, never api.anthropic.com: a self-hosted gateway's health says
 *   nothing about Anthropic's and vice versa.
 * - Any failure (DNS, refused, timeout, bad URL) is "unreachable"; `reason` says which, for humans.
 * - Never throws.
 */
import { connect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { DEFAULT_BASE_URL } from './credentials.js';

export interface Endpoint {
  host: string;
  port: number;
}

export interface Reachability extends Endpoint {
  reachable: boolean;
  /** Why it is unreachable (e.g. "ECONNREFUSED 127.0.0.1:9"), absent when reachable. */
  reason?: string;
  elapsedMs: number;
}

/** Host and port of a base URL; the port defaults by scheme (https 443, http 80). */
export function endpointOf(baseUrl: string | undefined): Endpoint {
  const url = new URL(baseUrl || DEFAULT_BASE_URL);
  const port = url.port ? Number(url.port) : url.protocol === 'http:' ? 80 : 443;
  // URL keeps IPv6 literals in brackets; DNS and sockets want them bare.
  return { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port };
}

function errorReason(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}

/**
 * Resolves the name and completes a TCP handshake in one step. Letting `net.connect` resolve the name
 * (rather than connecting to the first DNS answer) tries every address family, so `localhost` works
 * whether the endpoint listens on 127.0.0.1 or ::1.
 */
function tcpHandshake(endpoint: Endpoint, timeoutMs: number): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const socket = connect({ host: endpoint.host, port: endpoint.port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no TCP handshake within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolvePromise();
    });
    socket.once('error', (error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(error);
    });
  });
}

export async function checkReachable(baseUrl: string | undefined, timeoutMs = 5_000): Promise<Reachability> {
  const started = Date.now();
  let endpoint: Endpoint;
  try {
    endpoint = endpointOf(baseUrl);
  } catch {
    return { host: '', port: 0, reachable: false, reason: `not a valid URL: ${baseUrl}`, elapsedMs: 0 };
  }
  try {
    await tcpHandshake(endpoint, timeoutMs);
    return { ...endpoint, reachable: true, elapsedMs: Date.now() - started };
  } catch (error) {
    return { ...endpoint, reachable: false, reason: errorReason(error), elapsedMs: Date.now() - started };
  }
}

/**
 * Does the endpoint speak the protocol its URL names? A TCP handshake only proves that something
 * listens; `https://` on a plain-HTTP port, or the port of another server (a database), passes it,
 * and the binary then fails every request with a TLS or parse error that looks like an outage.
 *
 * Invariants:
 * - One request line with no credentials and no body (`HEAD / HTTP/1.1`), over TLS for `https:`
 *   (certificates are not judged: the question is the protocol, not trust). Any status line counts
 *   as HTTP, a 404 or a 400 as much as a 200. It runs once per decision, never in the outage loop.
 * - A mistake is named only on evidence: TLS refused and plain HTTP answered on the same port
 *   (`use-http`); plain HTTP not answered and a TLS handshake completed (`use-https`); neither
 *   answered with an HTTP status line (`not-http`: bytes of another protocol, or the connection
 *   closed without a byte). Silence until the timeout, or no connection at all, is undecided.
 * - Never throws.
 */
export type ProtocolMistake = 'use-http' | 'use-https' | 'not-http';

export interface ProtocolCheck {
  /** true: HTTP answered as the URL says; false: a mistake was found; undefined: cannot tell. */
  speaks: boolean | undefined;
  mistake?: ProtocolMistake;
  /** What the endpoint did, for humans ("closed the connection without a byte"). */
  observed: string;
}

type Exchange =
  | { kind: 'http' }
  | { kind: 'other'; observed: string }
  | { kind: 'tls-refused'; observed: string }
  | { kind: 'tls-ok' }
  | { kind: 'undecided'; observed: string };

/** What a server that hung up on the request without a byte `observed`. */
export const HUNG_UP = 'closed the connection without a byte';

/** The first bytes of an answer, printable: `"R\x00\x00\x00\x08"`. */
function printable(bytes: Buffer): string {
  const shown = [...bytes.subarray(0, 12)]
    .map((byte) =>
      byte >= 0x20 && byte < 0x7f ? String.fromCharCode(byte) : `\\x${byte.toString(16).padStart(2, '0')}`,
    )
    .join('');
  return `"${shown}"`;
}

/**
 * Connects (over TLS when `secure`), sends one request line unless `handshakeOnly`, and reads the
 * first bytes of the answer.
 */
function exchange(
  endpoint: Endpoint,
  secure: boolean,
  timeoutMs: number,
  handshakeOnly = false,
): Promise<Exchange> {
  return new Promise((resolvePromise) => {
    let settled = false;
    let received = Buffer.alloc(0);
    let handshaken = false;
    const servername = isIP(endpoint.host) === 0 ? endpoint.host : undefined;
    const socket: Socket = secure
      ? tlsConnect({ host: endpoint.host, port: endpoint.port, servername, rejectUnauthorized: false })
      : connect({ host: endpoint.host, port: endpoint.port });
    const finish = (result: Exchange): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolvePromise(result);
    };
    const timer = setTimeout(
      () => finish({ kind: 'undecided', observed: `no answer within ${timeoutMs} ms` }),
      timeoutMs,
    );
    const judge = (ended: boolean): void => {
      if (received.length >= 5 || (ended && received.length > 0)) {
        if (received.subarray(0, 5).toString('latin1') === 'HTTP/') finish({ kind: 'http' });
        else finish({ kind: 'other', observed: `answered ${printable(received)}, not HTTP` });
      } else if (ended) {
        finish({ kind: 'other', observed: HUNG_UP });
      }
    };
    socket.once(secure ? 'secureConnect' : 'connect', () => {
      handshaken = true;
      if (handshakeOnly) return finish({ kind: 'tls-ok' });
      const host = endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host;
      socket.write(`HEAD / HTTP/1.1\r\nHost: ${host}:${endpoint.port}\r\nConnection: close\r\n\r\n`);
    });
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      judge(false);
    });
    socket.once('end', () => judge(true));
    socket.once('close', () => judge(true));
    socket.once('error', (error) => {
      if (!handshaken) {
        const reason = errorReason(error);
        // Not even TCP: that is reachability's question, not this one.
        if (!secure || /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT/.test(reason))
          return finish({ kind: 'undecided', observed: reason });
        // OpenSSL's message runs over lines of source paths; its code says it all.
        const code = (error as NodeJS.ErrnoException).code;
        const said = code ?? reason.split('\n')[0];
        return finish({ kind: 'tls-refused', observed: `TLS failed: ${said}` });
      }
      // After the handshake a reset is the server hanging up on the request.
      if (received.length === 0) finish({ kind: 'other', observed: HUNG_UP });
      else judge(true);
    });
  });
}

/** Whether the endpoint of `baseUrl` speaks HTTP, over TLS when the URL says https. */
export async function checkProtocol(baseUrl: string | undefined, timeoutMs = 5_000): Promise<ProtocolCheck> {
  let endpoint: Endpoint;
  let secure: boolean;
  try {
    endpoint = endpointOf(baseUrl);
    secure = new URL(baseUrl || DEFAULT_BASE_URL).protocol !== 'http:';
  } catch {
    return { speaks: undefined, observed: `not a valid URL: ${baseUrl}` };
  }
  const first = await exchange(endpoint, secure, timeoutMs);
  if (first.kind === 'http') return { speaks: true, observed: 'answered HTTP' };
  if (first.kind === 'undecided') return { speaks: undefined, observed: first.observed };
  if (first.kind === 'tls-ok') return { speaks: undefined, observed: 'TLS handshake only' };
  // It did not answer in the URL's protocol: does it in the other one?
  const other = await exchange(endpoint, !secure, timeoutMs, !secure);
  if (secure && other.kind === 'http')
    return { speaks: false, mistake: 'use-http', observed: `${first.observed}; plain HTTP answered` };
  if (!secure && other.kind === 'tls-ok')
    return { speaks: false, mistake: 'use-https', observed: `${first.observed}; a TLS handshake succeeded` };
  if (first.kind === 'other') return { speaks: false, mistake: 'not-http', observed: first.observed };
  // TLS refused and plain HTTP not answered either: name what the plain attempt saw.
  if (other.kind === 'other') return { speaks: false, mistake: 'not-http', observed: other.observed };
  return { speaks: undefined, observed: first.observed };
}

/** A base URL as it may be shown: no user, password, query or fragment. */
export function shownUrl(baseUrl: string): string {
  try {
    const url = new URL(baseUrl);
    return `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`;
  } catch {
    return baseUrl;
  }
}

/**
 * What is wrong and what to do, in one clause: `https://h:1 answers plain HTTP, not TLS: use
 * http://h:1`. The fixed URL keeps the port explicit: `https://h` → `http://h` would move to port 80.
 */
export function protocolMistakeText(baseUrl: string, check: ProtocolCheck): string | undefined {
  if (check.mistake === undefined) return undefined;
  const shown = shownUrl(baseUrl);
  let endpoint: Endpoint;
  try {
    endpoint = endpointOf(baseUrl);
  } catch {
    return undefined;
  }
  const host = endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host;
  const rest = shown.replace(/^[a-z]+:\/\/[^/]*/i, '');
  if (check.mistake === 'use-http')
    return `${shown} answers plain HTTP, not HTTPS (${check.observed}): use http://${host}:${endpoint.port}${rest}`;
  if (check.mistake === 'use-https')
    return `${shown} expects HTTPS, not plain HTTP (${check.observed}): use https://${host}:${endpoint.port}${rest}`;
  return `${shown} is not an HTTP server (${check.observed}): is this the right port?`;
}
