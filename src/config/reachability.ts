/**
 * Is the model endpoint reachable? A free check: DNS lookup plus a TCP handshake to the host and
 * port of `ANTHROPIC_BASE_URL`, then the socket is closed at once.
 *
 * Invariants:
 * - No HTTP and no credentials: this runs every few seconds while waiting out a network outage, so
 *   it must cost nothing and must not count against any quota.
 * - It targets the configured endpoint, never api.anthropic.com: a self-hosted gateway's health says
 *   nothing about Anthropic's and vice versa.
 * - Any failure (DNS, refused, timeout, bad URL) is "unreachable"; `reason` says which, for humans.
 * - Never throws.
 */
import { connect } from 'node:net';
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
