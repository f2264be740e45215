/**
 * The mock model's server, driven over HTTP with fetch: routes, streaming, recording, routing of
 * requests to agents' queues, fallback, and every kind of fault.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  type MockModel,
  type MockModelOptions,
  type MockScript,
  type MockStep,
  mock,
  startMockModel,
} from '../../../src/testing/index.js';

const servers: MockModel[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function start(script?: MockScript | MockStep[], options?: MockModelOptions): Promise<MockModel> {
  const server = await startMockModel(script, options);
  servers.push(server);
  return server;
}

const TOOLS = [{ name: 'Write', input_schema: { type: 'object' } }];

function post(
  server: MockModel,
  body: Record<string, unknown>,
  { path = '/v1/messages?beta=true', headers = {} }: { path?: string; headers?: Record<string, string> } = {},
) {
  return fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'test-key', ...headers },
    body: JSON.stringify(body),
  });
}

function ask(text: string, extra: Record<string, unknown> = {}) {
  return {
    model: 'claude-test',
    max_tokens: 100,
    stream: true,
    tools: TOOLS,
    messages: [{ role: 'user', content: text }],
    ...extra,
  };
}

function parseSse(text: string): Array<{ event: string; data: Record<string, unknown> }> {
  return text
    .split('\n\n')
    .filter((chunk) => chunk.trim() !== '')
    .map((chunk) => {
      const event = /^event: (.*)$/m.exec(chunk)?.[1] ?? '';
      const data = /^data: (.*)$/m.exec(chunk)?.[1] ?? '{}';
      return { event, data: JSON.parse(data) as Record<string, unknown> };
    });
}

/** The text a streamed reply says, deltas joined. */
async function streamedText(response: Response): Promise<string> {
  return parseSse(await response.text())
    .filter((event) => event.event === 'content_block_delta')
    .map((event) => (event.data.delta as { text?: string }).text ?? '')
    .join('');
}

describe('routes', () => {
  it('streams a scripted reply as SSE for POST /v1/messages?beta=true', async () => {
    const server = await start([{ text: 'Hello from the script' }]);
    const response = await post(server, ask('hi'));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const events = parseSse(await response.text());
    expect(events.map((event) => event.event)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(events[3]?.data.delta).toMatchObject({ text: 'Hello from the script' });
  });

  it('answers a non-streaming request with one JSON message', async () => {
    const server = await start([{ text: 'plain', usage: { input_tokens: 3, output_tokens: 4 } }]);
    const response = await post(server, ask('hi', { stream: false }), { path: '/v1/messages' });
    expect(response.headers.get('content-type')).toContain('application/json');
    expect(await response.json()).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude-test',
      content: [{ type: 'text', text: 'plain' }],
      stop_reason: 'end_turn',
      usage: {
        input_tokens: 3,
        output_tokens: 4,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
      },
    });
  });

  it('counts tokens without consuming the script', async () => {
    const server = await start([{ text: 'still here' }]);
    const counted = await post(server, ask('x'.repeat(400)), { path: '/v1/messages/count_tokens?beta=true' });
    expect(counted.status).toBe(200);
    expect(((await counted.json()) as { input_tokens: number }).input_tokens).toBeGreaterThanOrEqual(100);
    expect(await streamedText(await post(server, ask('hi')))).toBe('still here');
    expect(server.requests[0]?.outcome).toEqual({ kind: 'count_tokens' });
  });

  it('answers any other path with an API-shaped 404 and records it', async () => {
    const server = await start();
    const response = await fetch(`${server.url}/v1/models`);
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    expect(server.lastRequest()).toMatchObject({
      method: 'GET',
      path: '/v1/models',
      outcome: { kind: 'not_found' },
    });
  });
});

describe('recording', () => {
  it('records method, path, query, headers and the parsed body', async () => {
    const server = await start([{ text: 'ok' }]);
    await (await post(server, ask('record me'))).text();
    const recorded = server.lastRequest();
    expect(recorded).toMatchObject({
      index: 0,
      method: 'POST',
      path: '/v1/messages',
      query: { beta: 'true' },
      agent: { kind: 'main' },
      outcome: { kind: 'reply', source: 'main#0' },
      unmatched: false,
    });
    expect(recorded?.headers['x-api-key']).toBe('test-key');
    expect(recorded?.body?.messages?.[0]?.content).toBe('record me');
    expect(server.mainRequests()).toHaveLength(1);
  });

  it('waits for a request that has not arrived yet', async () => {
    const server = await start([{ text: 'ok' }]);
    const waiting = server.waitForRequest((request) => request.path === '/v1/messages');
    await (await post(server, ask('hi'))).text();
    expect((await waiting).index).toBe(0);
  });
});

describe('script', () => {
  it('streams thinking, text and several tool calls in one reply', async () => {
    const server = await start([
      {
        thinking: 'Let me think.',
        text: 'Writing two files.',
        toolUses: [
          { name: 'Write', input: { file_path: '/a', content: 'A' } },
          { name: 'Write', input: { file_path: '/b', content: 'B' }, id: 'toolu_fixed' },
        ],
      },
    ]);
    const events = parseSse(await (await post(server, ask('go'))).text());
    const starts = events
      .filter((event) => event.event === 'content_block_start')
      .map((event) => event.data.content_block);
    expect(starts).toMatchObject([
      { type: 'thinking' },
      { type: 'text' },
      { type: 'tool_use', name: 'Write' },
      { type: 'tool_use', name: 'Write', id: 'toolu_fixed' },
    ]);
    expect(events.find((event) => event.event === 'message_delta')?.data.delta).toMatchObject({
      stop_reason: 'tool_use',
    });
  });

  it('computes a reply from the request when the step is a function', async () => {
    const server = await start([
      (request) => ({ text: `You said: ${request.body?.messages?.[0]?.content}` }),
    ]);
    expect(await streamedText(await post(server, ask('ping')))).toBe('You said: ping');
  });

  it('gives an unscripted request the default fallback and records it as unmatched', async () => {
    const server = await start([{ text: 'first' }]);
    await (await post(server, ask('1'))).text();
    const text = await streamedText(await post(server, ask('2')));
    expect(text).toContain('Nothing was scripted');
    expect(server.unmatched.map((request) => request.index)).toEqual([1]);
    expect(server.lastRequest()?.outcome).toMatchObject({ kind: 'reply', source: 'fallback' });
  });

  it('uses a configured fallback, which may be a fault', async () => {
    const server = await start({ main: [], fallback: mock.error(500, { message: 'unscripted request' }) });
    const response = await post(server, ask('?'));
    expect(response.status).toBe(500);
    expect(await response.json()).toMatchObject({
      error: { type: 'api_error', message: 'unscripted request' },
    });
    expect(server.unmatched).toHaveLength(1);
  });

  it('restarts from the new script after setScript', async () => {
    const server = await start([{ text: 'old' }]);
    server.setScript([{ text: 'new' }]);
    expect(await streamedText(await post(server, ask('hi')))).toBe('new');
  });
});

describe('routing by agent', () => {
  it('gives a subagent its own replies, attributed by the Agent call the script made', async () => {
    const server = await start({
      main: [
        mock.toolUse('Agent', {
          description: 'look',
          prompt: 'Find the config file.',
          subagent_type: 'scout',
        }),
        { text: 'main again' },
      ],
      agents: { scout: [{ text: 'scout reply 1' }, { text: 'scout reply 2' }] },
    });
    await (await post(server, ask('start'))).text();
    const subagentHeaders = { 'x-claude-code-agent-id': 'a123' };
    const subagentAsk = ask('Find the config file.');
    expect(await streamedText(await post(server, subagentAsk, { headers: subagentHeaders }))).toBe(
      'scout reply 1',
    );
    expect(await streamedText(await post(server, ask('tool result')))).toBe('main again');
    // Later requests of the same subagent carry only its id; the first attribution sticks.
    const later = ask('something else entirely');
    expect(await streamedText(await post(server, later, { headers: subagentHeaders }))).toBe('scout reply 2');
    expect(server.agentRequests('scout').map((request) => request.agentId)).toEqual(['a123', 'a123']);
    expect(server.mainRequests()).toHaveLength(2);
  });

  it('finds a subagent by a piece of its prompt when agentPrompts names it', async () => {
    const server = await start(
      { agents: { critic: [{ text: 'critique' }] } },
      { agentPrompts: { critic: 'You are the critic.' } },
    );
    const body = ask('review this', {
      system: [
        { type: 'text', text: 'x-anthropic-billing-header: cc_is_subagent=true;' },
        { type: 'text', text: 'You are the critic. Be harsh.' },
      ],
    });
    expect(
      await streamedText(await post(server, body, { headers: { 'x-claude-code-agent-id': 'b9' } })),
    ).toBe('critique');
  });

  it('answers side requests (no tools) without consuming main-thread steps', async () => {
    const server = await start([{ text: 'for the main thread' }]);
    const title = ask('<session>hi</session>', {
      tools: [],
      system: [{ type: 'text', text: 'You are naming a coding session so the user can pick it out.' }],
    });
    const titleText = await streamedText(await post(server, title));
    expect(JSON.parse(titleText)).toHaveProperty('title');
    expect(server.sideRequests()[0]?.agent).toEqual({ kind: 'side', purpose: 'title' });
    expect(server.unmatched).toEqual([]);
    expect(await streamedText(await post(server, ask('hi')))).toBe('for the main thread');
  });
});

describe('faults', () => {
  it.each([
    [401, 'authentication_error'],
    [404, 'not_found_error'],
    [429, 'rate_limit_error'],
    [500, 'api_error'],
    [503, 'api_error'],
    [529, 'overloaded_error'],
  ])('answers HTTP %i with an API-shaped %s body', async (status, type) => {
    const server = await start([mock.error(status)]);
    const response = await post(server, ask('hi'));
    expect(response.status).toBe(status);
    expect(await response.json()).toMatchObject({ type: 'error', error: { type } });
    expect(server.lastRequest()?.outcome).toEqual({ kind: 'error', status, source: 'main#0' });
  });

  it('names the missing model in a 400', async () => {
    const server = await start([mock.modelNotFound()]);
    const response = await post(server, ask('hi', { model: 'claude-nonexistent-9' }));
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toContain('claude-nonexistent-9');
  });

  it('sends retry-after when the script asks for it', async () => {
    const server = await start([mock.error(429, { retryAfterSeconds: 7 })]);
    expect((await post(server, ask('hi'))).headers.get('retry-after')).toBe('7');
  });

  it('cuts the connection in the middle of a stream', async () => {
    const server = await start([
      mock.drop({ afterEvents: 4, partial: { text: 'x'.repeat(200) } }),
      { text: 'after' },
    ]);
    const response = await post(server, ask('hi'));
    expect(response.status).toBe(200);
    await expect(response.text()).rejects.toThrow();
    expect(server.lastRequest()?.outcome).toEqual({ kind: 'drop', source: 'main#0' });
    expect(await streamedText(await post(server, ask('again')))).toBe('after');
  });

  it('resets the connection before any response with afterEvents 0', async () => {
    const server = await start([mock.drop({ afterEvents: 0 })]);
    await expect(post(server, ask('hi'))).rejects.toThrow();
  });

  it('refuses connections for a while and then listens again on the same port', async () => {
    const server = await start([mock.refuse(400), { text: 'back' }]);
    await expect(post(server, ask('hi'))).rejects.toThrow();
    const refused = await post(server, ask('again')).catch((error: Error) => error);
    expect(refused).toBeInstanceOf(Error);
    expect(String((refused as Error & { cause?: { code?: string } }).cause?.code)).toBe('ECONNREFUSED');
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(await streamedText(await post(server, ask('later')))).toBe('back');
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
  });

  it('refuses connections when a test asks, imperatively', async () => {
    const server = await start([{ text: 'served' }]);
    const reopened = server.refuseConnectionsFor(300);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await expect(post(server, ask('hi'))).rejects.toThrow();
    await reopened;
    expect(await streamedText(await post(server, ask('hi')))).toBe('served');
  });

  it('delays a scripted reply, and every reply after setDelay', async () => {
    const server = await start([{ text: 'slow', delayMs: 300 }, { text: 'slower' }]);
    let started = Date.now();
    await (await post(server, ask('1'))).text();
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    server.setDelay(200);
    started = Date.now();
    await (await post(server, ask('2'))).text();
    expect(Date.now() - started).toBeGreaterThanOrEqual(180);
  });

  it('puts injected faults before the script, for main-thread requests only', async () => {
    const server = await start([{ text: 'scripted' }]);
    server.injectFaults(mock.error(529), mock.error(500));
    const side = ask('title please', { tools: [] });
    expect((await post(server, side)).status).toBe(200);
    expect((await post(server, ask('1'))).status).toBe(529);
    expect((await post(server, ask('2'))).status).toBe(500);
    expect(await streamedText(await post(server, ask('3')))).toBe('scripted');
    expect(server.mainRequests().map((request) => request.outcome)).toMatchObject([
      { kind: 'error', source: 'injected' },
      { kind: 'error', source: 'injected' },
      { kind: 'reply', source: 'main#0' },
    ]);
  });

  it('closes cleanly while a delayed reply is pending', async () => {
    const server = await startMockModel([{ text: 'never', delayMs: 60_000 }]);
    const pending = post(server, ask('hi')).catch(() => 'failed');
    await server.waitForRequest(() => true);
    await server.close();
    expect(await pending).toBe('failed');
  });
});

describe('mid-stream errors', () => {
  it('streams the start of a reply and then an SSE error event', async () => {
    const server = await start([mock.error(529, { afterEvents: 3 })]);
    const response = await post(server, ask('hi'));
    expect(response.status).toBe(200);
    const events = parseSse(await response.text());
    expect(events.map((event) => event.event)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'error',
    ]);
    expect(events[3]?.data).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
  });
});

describe('pacing', () => {
  it('spaces streamed events out by streamIntervalMs', async () => {
    const server = await start([{ text: 'paced' }], { streamIntervalMs: 50 });
    const started = Date.now();
    const events = parseSse(await (await post(server, ask('hi'))).text());
    // Seven events, six gaps between them.
    expect(events).toHaveLength(7);
    expect(Date.now() - started).toBeGreaterThanOrEqual(6 * 45);
  });
});

describe('credentials', () => {
  it('answers a wrong key with 401 without consuming the script, and accepts the right one either way', async () => {
    const server = await start([{ text: 'welcome' }], { requireApiKey: 'right-key' });
    const wrong = await post(server, ask('hi'), { headers: { 'x-api-key': 'wrong-key' } });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ error: { type: 'authentication_error' } });
    const bearer = await fetch(`${server.url}/v1/messages`, {
      method: 'POST',
      headers: { authorization: 'Bearer right-key', 'content-type': 'application/json' },
      body: JSON.stringify(ask('hi')),
    });
    expect(await streamedText(bearer)).toBe('welcome');
    expect(server.requests[0]?.outcome).toEqual({ kind: 'error', status: 401, source: 'credentials' });
  });
});

describe('mock.times', () => {
  it('repeats a step', async () => {
    const server = await start([...mock.times(2, mock.error(400)), { text: 'third time' }]);
    expect((await post(server, ask('1'))).status).toBe(400);
    expect((await post(server, ask('2'))).status).toBe(400);
    expect(await streamedText(await post(server, ask('3')))).toBe('third time');
  });
});
