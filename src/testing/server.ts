/**
 * The mock model's HTTP server: a scripted Anthropic Messages API on 127.0.0.1, built on node:http.
 *
 * Routes: `POST /v1/messages` (any query string, e.g. `?beta=true`) answers from the script,
 * streaming SSE when the body says `stream: true` and a JSON message otherwise;
 * `POST /v1/messages/count_tokens` answers an estimate without touching the script; anything else
 * gets the API's 404 shape. Every request is recorded before it is answered.
 *
 * Invariants:
 * - One request takes at most one step, from the queue of the agent it is attributed to.
 * - Imperatively injected faults (`injectFaults`) take precedence over the script, for the next
 *   main-thread or subagent requests; side requests and token counts never consume them.
 * - `refuseConnectionsFor` closes the listener and reopens it on the same port, so a client that
 *   remembers the URL sees ECONNREFUSED and then recovers, exactly like an endpoint outage.
 * - `close()` ends every connection and timer, so a test never leaks a handle.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import {
  agentIdOf,
  type Delegation,
  identifyAgent as defaultIdentifyAgent,
  delegationsIn,
  type IdentifyInput,
  UNKNOWN_SUBAGENT,
} from './identify.js';
import { contentText, type MessagesRequestBody, type RecordedRequest } from './recording.js';
import {
  type AgentIdentity,
  isFault,
  type MockDropFault,
  type MockFault,
  type MockReply,
  type MockResponse,
  type MockScript,
  type MockStep,
  normalizeScript,
} from './script.js';
import { buildMessage, errorBody, estimateTokens, formatSse, freshId, streamEvents } from './wire.js';

export interface MockModelOptions {
  /** Port to listen on; default 0 (a free port chosen by the OS). */
  port?: number;
  /**
   * Attributes a request to an agent. Default: `identifyAgent` from `identify.js`, which tells the
   * main thread, subagents (by name, learnt from the Agent tool calls the script makes) and the
   * binary's side requests apart; replace it when a test needs different routing.
   */
  identifyAgent?: (input: IdentifyInput) => AgentIdentity;
  /**
   * Subagent name → a piece of that agent's prompt (the `prompt` of its SDK AgentDefinition, or
   * any distinctive part of it). Only needed when a subagent is started by something other than a
   * scripted Agent tool call; the default `identifyAgent` then finds it by this text in the
   * request's system prompt.
   */
  agentPrompts?: Record<string, string>;
  /** Milliseconds between streamed SSE events; default 0. Raise it to test stall handling. */
  streamIntervalMs?: number;
  /**
   * When set, a `/v1/` request whose `x-api-key` (or `Authorization: Bearer` token) differs gets
   * the API's 401 without touching the script, as the real endpoint treats a wrong credential.
   */
  requireApiKey?: string;
}

export interface MockModel {
  /** Base URL for ANTHROPIC_BASE_URL, e.g. `http://127.0.0.1:40123` (no `/v1`). */
  readonly url: string;
  readonly port: number;
  /** Every request received, in arrival order (live array). */
  readonly requests: readonly RecordedRequest[];
  /** Requests that found nothing scripted for them and got the fallback. */
  readonly unmatched: readonly RecordedRequest[];
  /** Replace the script; queues restart from the new script's first steps. */
  setScript(script: MockScript | MockStep[]): void;
  /** Faults for the next main-thread or subagent requests, before any scripted step. */
  injectFaults(...faults: MockFault[]): void;
  /** Delay every reply by this many milliseconds (0 to stop). */
  setDelay(ms: number): void;
  /** Refuse connections for `ms`, then listen again on the same port; resolves once listening. */
  refuseConnectionsFor(ms: number): Promise<void>;
  /** `POST /v1/messages` requests only. */
  messageRequests(): RecordedRequest[];
  /** Main-thread message requests. */
  mainRequests(): RecordedRequest[];
  /** Message requests of the named subagent. */
  agentRequests(name: string): RecordedRequest[];
  /** The binary's side requests (title generation and the like). */
  sideRequests(): RecordedRequest[];
  lastRequest(): RecordedRequest | undefined;
  /** Resolves with the first recorded request (past or future) matching `predicate`. */
  waitForRequest(
    predicate: (request: RecordedRequest) => boolean,
    timeoutMs?: number,
  ): Promise<RecordedRequest>;
  close(): Promise<void>;
}

const HOST = '127.0.0.1';
const DEFAULT_DROP_AFTER_EVENTS = 3;
const DEFAULT_PARTIAL_REPLY: MockReply = { text: 'This reply is cut off in the middle of the stream.' };
/**
 * What an unscripted side request gets, by purpose: title generation asks for JSON with a `title`;
 * compaction needs a non-empty text summary (an empty or tool-only reply fails the compaction and
 * ends the turn with "Prompt is too long").
 */
function defaultSideReply(purpose: string): MockReply {
  if (purpose === 'compact') {
    return {
      text: '<analysis>Scripted.</analysis>\n<summary>A scripted summary of the conversation so far.</summary>',
    };
  }
  return { text: '{"title":"Scripted session"}' };
}

/** The key of an agent's queue; side requests share one queue whatever their purpose. */
function queueKey(agent: AgentIdentity): string | undefined {
  switch (agent.kind) {
    case 'main':
      return 'main';
    case 'subagent':
      return `agent:${agent.name}`;
    case 'side':
      return 'side';
    default:
      return undefined;
  }
}

function queuesOf(script: MockScript): Map<string, MockStep[]> {
  const queues = new Map<string, MockStep[]>();
  queues.set('main', [...(script.main ?? [])]);
  queues.set('side', [...(script.side ?? [])]);
  for (const [name, steps] of Object.entries(script.agents ?? {})) queues.set(`agent:${name}`, [...steps]);
  return queues;
}

function describeAgent(agent: AgentIdentity): string {
  switch (agent.kind) {
    case 'subagent':
      return `subagent "${agent.name}"`;
    case 'side':
      return `side request (${agent.purpose})`;
    default:
      return `${agent.kind} request`;
  }
}

function defaultFallback(request: RecordedRequest): MockReply {
  return {
    text: `[mock model] Nothing was scripted for this ${describeAgent(request.agent)} (request #${request.index}).`,
  };
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    request.on('error', reject);
  });
}

function parseJson(text: string): MessagesRequestBody | undefined {
  if (text.trim() === '') return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as MessagesRequestBody) : undefined;
  } catch {
    return undefined;
  }
}

function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'request-id': (body as { request_id?: string }).request_id ?? 'req_mock',
    ...headers,
  });
  response.end(text);
}

export async function startMockModel(
  script?: MockScript | MockStep[],
  options: MockModelOptions = {},
): Promise<MockModel> {
  let current = normalizeScript(script);
  let queues = queuesOf(current);
  /** Steps taken per queue, to name the step that answered each request (`main#0`, `agent:x#2`). */
  const consumed = new Map<string, number>();
  /** Subagent name per `x-claude-code-agent-id`, once attributed (the header is all later requests carry). */
  const knownAgents = new Map<string, string>();
  /** The Agent tool calls this server has emitted: how a subagent's first request is attributed. */
  const delegations: Delegation[] = [];
  const injected: MockFault[] = [];
  const requests: RecordedRequest[] = [];
  const waiters = new Set<{
    predicate: (request: RecordedRequest) => boolean;
    resolve: (r: RecordedRequest) => void;
  }>();
  const sockets = new Set<Socket>();
  /** Pending sleeps; `close()` ends them early so nothing waits on a closed server. */
  const timers = new Map<NodeJS.Timeout, () => void>();
  const identify = options.identifyAgent ?? defaultIdentifyAgent;
  const agentPrompts = options.agentPrompts ?? {};
  const streamIntervalMs = options.streamIntervalMs ?? 0;
  let delayMs = 0;
  let closed = false;
  let reopening: Promise<void> | undefined;
  let reopenError: unknown;

  const sleep = (ms: number): Promise<void> =>
    ms <= 0
      ? Promise.resolve()
      : new Promise((resolve) => {
          const timer = setTimeout(() => {
            timers.delete(timer);
            resolve();
          }, ms);
          timers.set(timer, resolve);
        });

  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) sendJson(response, 500, errorBody(500, 'api_error', String(error)));
      else response.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  const listen = (port: number): Promise<void> =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, HOST, () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(options.port ?? 0);
  const port = (server.address() as AddressInfo).port;

  function record(request: IncomingMessage, rawBody: string): RecordedRequest {
    const url = new URL(request.url ?? '/', `http://${HOST}`);
    const body = parseJson(rawBody);
    const path = url.pathname;
    const headers = { ...request.headers };
    const input: IdentifyInput = {
      method: request.method ?? 'GET',
      path,
      headers,
      body,
      agentPrompts,
      knownAgents,
      delegations,
    };
    const agent = identify(input);
    const agentId = agentIdOf(headers);
    if (agent.kind === 'subagent' && agentId !== undefined && agent.name !== UNKNOWN_SUBAGENT) {
      knownAgents.set(agentId, agent.name);
    }
    const recorded: RecordedRequest = {
      index: requests.length,
      method: request.method ?? 'GET',
      path,
      query: Object.fromEntries(url.searchParams),
      headers,
      rawBody,
      body,
      agent,
      agentId,
      unmatched: false,
      outcome: { kind: 'pending' },
      receivedAt: new Date(),
    };
    requests.push(recorded);
    for (const waiter of waiters) {
      if (waiter.predicate(recorded)) {
        waiters.delete(waiter);
        waiter.resolve(recorded);
      }
    }
    return recorded;
  }

  /** Picks what this request gets: an injected fault, the agent's next step, or the fallback. */
  function nextResponse(recorded: RecordedRequest): { response: MockResponse; source: string } {
    const key = queueKey(recorded.agent);
    const takesInjected = recorded.agent.kind === 'main' || recorded.agent.kind === 'subagent';
    const fault = takesInjected ? injected.shift() : undefined;
    if (fault) return { response: fault, source: 'injected' };
    const step = key === undefined ? undefined : queues.get(key)?.shift();
    if (key !== undefined && step !== undefined) {
      const position = consumed.get(key) ?? 0;
      consumed.set(key, position + 1);
      return { response: typeof step === 'function' ? step(recorded) : step, source: `${key}#${position}` };
    }
    if (recorded.agent.kind === 'side') {
      return { response: defaultSideReply(recorded.agent.purpose), source: 'side-default' };
    }
    recorded.unmatched = true;
    const fallback = current.fallback;
    const response =
      fallback === undefined
        ? defaultFallback(recorded)
        : typeof fallback === 'function'
          ? fallback(recorded)
          : fallback;
    return { response, source: 'fallback' };
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const rawBody = await readBody(request);
    const recorded = record(request, rawBody);
    // Answered, failed or abandoned by the client: the request is over either way.
    response.once('close', () => {
      recorded.endedAt = new Date();
    });
    if (options.requireApiKey !== undefined && recorded.path.startsWith('/v1/')) {
      if (presentedCredential(recorded.headers) !== options.requireApiKey) {
        recorded.outcome = { kind: 'error', status: 401, source: 'credentials' };
        sendJson(response, 401, errorBody(401));
        return;
      }
    }
    if (request.method === 'POST' && recorded.path === '/v1/messages/count_tokens') {
      recorded.outcome = { kind: 'count_tokens' };
      sendJson(response, 200, { input_tokens: countTokens(recorded.body, rawBody) });
      return;
    }
    if (request.method !== 'POST' || recorded.path !== '/v1/messages') {
      recorded.outcome = { kind: 'not_found' };
      sendJson(
        response,
        404,
        errorBody(404, 'not_found_error', `Not Found: ${request.method} ${recorded.path}`),
      );
      return;
    }
    const { response: scripted, source } = nextResponse(recorded);
    await sleep(delayMs + ('delayMs' in scripted ? (scripted.delayMs ?? 0) : 0));
    if (closed) {
      response.socket?.destroy();
      return;
    }
    if (isFault(scripted)) {
      await answerWithFault(scripted, recorded, response, source);
      return;
    }
    recorded.outcome = { kind: 'reply', source };
    const message = buildMessage(scripted, recorded.body, rawBody);
    delegations.push(
      ...delegationsIn(message.content.flatMap((block) => (block.type === 'tool_use' ? [block] : []))),
    );
    if (recorded.body?.stream !== true) {
      sendJson(response, 200, message, { 'request-id': message.id.replace('msg_', 'req_') });
      return;
    }
    await stream(response, streamEvents(message).map(formatSse), Number.POSITIVE_INFINITY);
  }

  async function stream(response: ServerResponse, events: string[], limit: number): Promise<void> {
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'request-id': freshId('req'),
    });
    response.flushHeaders();
    for (const [index, event] of events.entries()) {
      if (index >= limit) {
        response.socket?.destroy();
        return;
      }
      if (index > 0) await sleep(streamIntervalMs);
      if (response.destroyed || closed) return;
      // Waiting for each write to reach the socket keeps a planned cut after exactly `limit` events.
      await new Promise<void>((resolve) => response.write(event, () => resolve()));
    }
    response.end();
  }

  async function answerWithFault(
    fault: MockFault,
    recorded: RecordedRequest,
    response: ServerResponse,
    source: string,
  ): Promise<void> {
    switch (fault.kind) {
      case 'error': {
        recorded.outcome = { kind: 'error', status: fault.status, source };
        if (fault.afterEvents !== undefined) {
          const message = buildMessage(
            fault.partial ?? DEFAULT_PARTIAL_REPLY,
            recorded.body,
            recorded.rawBody,
          );
          const events = streamEvents(message).slice(0, fault.afterEvents).map(formatSse);
          const error = errorBody(fault.status, fault.errorType, fault.message);
          await stream(
            response,
            [...events, formatSse({ event: 'error', data: error })],
            Number.POSITIVE_INFINITY,
          );
          return;
        }
        const headers: Record<string, string> =
          fault.retryAfterSeconds === undefined ? {} : { 'retry-after': String(fault.retryAfterSeconds) };
        sendJson(response, fault.status, errorBody(fault.status, fault.errorType, fault.message), headers);
        return;
      }
      case 'drop':
        recorded.outcome = { kind: 'drop', source };
        await drop(fault, recorded, response);
        // No await between the cut and closing the listener: the client cannot reconnect in between.
        if (fault.thenRefuseForMs !== undefined) startOutage(fault.thenRefuseForMs);
        return;
      case 'refuse':
        recorded.outcome = { kind: 'refuse', source };
        response.socket?.destroy();
        startOutage(fault.forMs);
        return;
    }
  }

  async function drop(
    fault: MockDropFault,
    recorded: RecordedRequest,
    response: ServerResponse,
  ): Promise<void> {
    const afterEvents = fault.afterEvents ?? DEFAULT_DROP_AFTER_EVENTS;
    if (afterEvents <= 0) {
      response.socket?.destroy();
      return;
    }
    const message = buildMessage(fault.partial ?? DEFAULT_PARTIAL_REPLY, recorded.body, recorded.rawBody);
    await stream(response, streamEvents(message).map(formatSse), afterEvents);
  }

  /** A scripted outage: nobody awaits it, so a failure to listen again surfaces from close(). */
  function startOutage(ms: number): void {
    refuseConnectionsFor(ms).catch((error: unknown) => {
      reopenError = error;
    });
  }

  function refuseConnectionsFor(ms: number): Promise<void> {
    if (reopening) return reopening;
    reopening = (async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await sleep(ms);
      if (!closed) await listen(port);
    })().finally(() => {
      reopening = undefined;
    });
    return reopening;
  }

  const messageRequests = () => requests.filter((request) => request.path === '/v1/messages');

  return {
    url: `http://${HOST}:${port}`,
    port,
    requests,
    get unmatched() {
      return requests.filter((request) => request.unmatched);
    },
    setScript(next) {
      current = normalizeScript(next);
      queues = queuesOf(current);
      consumed.clear();
    },
    injectFaults(...faults) {
      injected.push(...faults);
    },
    setDelay(ms) {
      delayMs = ms;
    },
    refuseConnectionsFor,
    messageRequests,
    mainRequests: () => messageRequests().filter((request) => request.agent.kind === 'main'),
    agentRequests: (name) =>
      messageRequests().filter((request) => request.agent.kind === 'subagent' && request.agent.name === name),
    sideRequests: () => messageRequests().filter((request) => request.agent.kind === 'side'),
    lastRequest: () => requests[requests.length - 1],
    waitForRequest(predicate, timeoutMs = 30_000) {
      const seen = requests.find(predicate);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const waiter = {
          predicate,
          resolve: (found: RecordedRequest) => {
            clearTimeout(timer);
            resolve(found);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`No matching request reached the mock model within ${timeoutMs} ms.`));
        }, timeoutMs);
        waiters.add(waiter);
      });
    },
    async close() {
      closed = true;
      for (const [timer, wake] of timers) {
        clearTimeout(timer);
        wake();
      }
      timers.clear();
      await reopening?.catch(() => undefined);
      if (reopenError !== undefined) throw reopenError;
      if (!server.listening) return;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}

/** The API key or bearer token a request presents, whichever header carries it. */
function presentedCredential(headers: RecordedRequest['headers']): string | undefined {
  const apiKey = headers['x-api-key'];
  if (typeof apiKey === 'string') return apiKey;
  const authorization = headers.authorization;
  return typeof authorization === 'string' ? /^Bearer (.*)$/i.exec(authorization)?.[1] : undefined;
}

/** A rough, deterministic token count: the messages, system prompt and tools at 4 characters a token. */
function countTokens(body: MessagesRequestBody | undefined, rawBody: string): number {
  if (body === undefined) return estimateTokens(rawBody);
  const text = [JSON.stringify(body.system ?? ''), JSON.stringify(body.tools ?? [])]
    .concat((body.messages ?? []).map((message) => contentText(message.content)))
    .join('');
  return estimateTokens(text);
}
