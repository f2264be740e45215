import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ENDPOINTS_FILE, EndpointHistory } from '../../../src/runtime/endpoint-history.js';
import { type FlowerEvent, retryCause } from '../../../src/runtime/events.js';
import { AttemptSentinel, launchWords, unreachableLine } from '../../../src/runtime/fail-fast.js';
import {
  CONTEXT_FULL_HANDOFF,
  INTERRUPTED_BY_HUMAN,
  newStepResult,
  type StepResult,
} from '../../../src/runtime/step-result.js';
import { closedPort } from '../../support/closed-port.js';

let runDir: string;
let server: Server | undefined;
beforeEach(() => {
  runDir = mkdtempSync(join(tmpdir(), 'flower-fail-fast-'));
});
afterEach(async () => {
  rmSync(runDir, { recursive: true, force: true });
  await new Promise((done) => (server ? server.close(done) : done(undefined)));
  server = undefined;
});

/** Answers any request with an HTTP status line (what a gateway does, whatever it then says). */
const httpAnswer = (socket: Socket): void => {
  socket.on('error', () => {});
  socket.once('data', () => socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n'));
};

/** A server on 127.0.0.1 (by default one that hangs up at once); its http:// URL. */
async function listeningUrl(
  onSocket: (socket: Socket) => void = (socket) => socket.destroy(),
): Promise<string> {
  server = createServer(onSocket);
  await new Promise<void>((done) => server!.listen(0, '127.0.0.1', done));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

const init: FlowerEvent = {
  kind: 'system',
  text: 'init',
  payload: { subtype: 'init', data: { model: 'claude-main' } },
};
const retry = (errorStatus: number | null, errorCode = 'unknown'): FlowerEvent => ({
  kind: 'retry',
  text: 'API request failed',
  payload: { source: 'binary', errorStatus, errorCode },
});
const synthetic = (text: string, status?: number, errorCode?: string): FlowerEvent => ({
  kind: 'error',
  text,
  payload: {
    synthetic: true,
    ...(status === undefined ? {} : { status }),
    ...(errorCode ? { errorCode } : {}),
  },
});
const reply: FlowerEvent = { kind: 'text', text: 'hi', payload: { subagent: false, model: 'claude-main' } };

function sentinel(baseUrl: string, env: Record<string, string> = {}) {
  const endpoints = new EndpointHistory(runDir, baseUrl);
  return {
    endpoints,
    watch: new AttemptSentinel({
      env: { ANTHROPIC_BASE_URL: baseUrl, ANTHROPIC_API_KEY: 'k', ...env },
      endpoints,
      probeTimeoutMs: 500,
    }),
  };
}

function failed(error: string): StepResult {
  const result = newStepResult('work', 'run');
  result.error = error;
  return result;
}

describe('AttemptSentinel', () => {
  it.each([
    [401, 'authentication_failed'],
    [403, 'unknown'],
  ])(
    'stops at the first api_retry with status %i, with the setup hint and the key named',
    async (status, code) => {
      const { watch } = sentinel('http://127.0.0.1:1');
      await watch.inspect(init);
      const stop = await watch.inspect(retry(status, code));
      expect(stop?.cause).toBe('credentials');
      expect(stop?.message).toContain(
        `HTTP ${status}: the credential was refused (ANTHROPIC_API_KEY, set in`,
      );
      expect(stop?.message).toContain('flower setup');
    },
  );

  it('lets the binary retry a 529 or a 500, and records that the endpoint answered', async () => {
    const { watch, endpoints } = sentinel('http://127.0.0.1:1');
    expect(await watch.inspect(retry(529, 'overloaded'))).toBeUndefined();
    expect(endpoints.answered()).toBe(true);
  });

  it.each([
    ["There's an issue with the selected model (claude-nope). It may not exist", 404, 'model_not_found'],
    ['API Error: 400 model: claude-nope is not a valid model ID', 400, 'unknown'],
  ])('a missing model (%j) stops, naming it and its setting', async (text, status, code) => {
    const { watch } = sentinel('http://127.0.0.1:1', { ANTHROPIC_MODEL: 'claude-nope[1m]' });
    await watch.inspect(init);
    const stop = await watch.inspect(synthetic(text, status, code));
    expect(stop).toEqual({
      cause: 'model',
      message:
        'the endpoint does not serve the model claude-nope (ANTHROPIC_MODEL, set in the environment flower was given); choose one it serves with `flower setup`',
    });
  });

  it('a synthetic 404 whose text names no model stops at once all the same (the status says it)', async () => {
    const { watch } = sentinel('http://127.0.0.1:1');
    await watch.inspect(init);
    const text =
      'API Error: {"type":"error","error":{"type":"not_found_error","message":"Not Found"},"request_id":"req_1"}';
    const stop = await watch.inspect(synthetic(text, 404));
    expect(stop?.cause).toBe('model');
    // No model in the text: the one the session started with is named.
    expect(stop?.message).toContain('the endpoint does not serve the model claude-main');
    // The same text without the 404 is no stop: the status alone decided it.
    const other = sentinel('http://127.0.0.1:1').watch;
    await other.inspect(init);
    expect(await other.inspect(synthetic(text))).toBeUndefined();
  });

  it('a missing model nobody configured says so', async () => {
    const { watch } = sentinel('http://127.0.0.1:1');
    await watch.inspect(init);
    const stop = await watch.inspect(synthetic("There's an issue with the selected model (claude-x).", 404));
    expect(stop?.message).toContain('no flower setting names it');
  });

  it('an attempt that ended before init is a launch failure, in the words from stderr', async () => {
    const { watch } = sentinel('http://127.0.0.1:1');
    watch.onStderr('[claude-code:unrecognized_model] {"model":"x"}\n');
    watch.onStderr('--dangerously-skip-permissions cannot be used with root\n');
    const stop = await watch.conclude(failed('Error: Claude Code process exited with code 1'));
    expect(stop).toEqual({
      cause: 'launch',
      message:
        'Claude Code stopped before its first turn: --dangerously-skip-permissions cannot be used with root',
    });
  });

  it('an interrupt before init is not a launch failure', async () => {
    const { watch } = sentinel('http://127.0.0.1:1');
    expect(await watch.conclude(failed(INTERRUPTED_BY_HUMAN))).toBeUndefined();
  });

  it('a refused connection to an endpoint that never answered stops with one line', async () => {
    const port = await closedPort();
    const { watch } = sentinel(`http://127.0.0.1:${port}`);
    await watch.inspect(init);
    const stop = await watch.inspect(retry(null));
    expect(stop).toEqual({
      cause: 'unreachable',
      message: `nothing listens at 127.0.0.1:${port}; check ANTHROPIC_BASE_URL — flower doctor`,
    });
  });

  it('the same refusal from an endpoint that answered this task is left to the outage handling', async () => {
    const port = await closedPort();
    const { watch } = sentinel(`http://127.0.0.1:${port}`);
    await watch.inspect(init);
    await watch.inspect(reply);
    expect(await watch.inspect(retry(null))).toBeUndefined();
    expect(await watch.conclude(failed('API Error: Connection refused (ECONNREFUSED)'))).toBeUndefined();
  });

  it('a connection failure while an HTTP server does listen is left to the binary and the outage handling', async () => {
    const { watch } = sentinel(await listeningUrl(httpAnswer));
    await watch.inspect(init);
    expect(await watch.inspect(retry(null))).toBeUndefined();
    expect(await watch.conclude(failed('API Error: Connection dropped (ECONNRESET)'))).toBeUndefined();
  });

  it('https:// on a plain-HTTP port that never answered this task stops: use http://', async () => {
    const url = (await listeningUrl(httpAnswer)).replace('http:', 'https:');
    const { watch } = sentinel(url);
    await watch.inspect(init);
    const stop = await watch.inspect(retry(null));
    expect(stop?.cause).toBe('protocol');
    expect(stop?.message).toMatch(
      new RegExp(
        `^${url} answers plain HTTP, not HTTPS \\(.*\\): use ${url.replace('https:', 'http:')} — fix ANTHROPIC_BASE_URL; flower doctor shows where it is set$`,
      ),
    );
  });

  it('a port that hangs up and never answered this task stops: is this the right port?', async () => {
    const url = await listeningUrl();
    const { watch } = sentinel(url);
    await watch.inspect(init);
    const stop = await watch.conclude(failed('API Error: Connection dropped (ECONNRESET)'));
    expect(stop).toEqual({
      cause: 'protocol',
      message: `${url} is not an HTTP server (closed the connection without a byte): is this the right port? — fix ANTHROPIC_BASE_URL; flower doctor shows where it is set`,
    });
  });

  it('the same hang-up from an endpoint that answered this task is an outage: left to resilience', async () => {
    const { watch } = sentinel(await listeningUrl());
    await watch.inspect(init);
    await watch.inspect(reply);
    expect(await watch.inspect(retry(null))).toBeUndefined();
    expect(await watch.conclude(failed('API Error: Connection dropped (ECONNRESET)'))).toBeUndefined();
  });

  it('with the binary not retrying at all, the end of the attempt tells the same', async () => {
    const port = await closedPort();
    const { watch } = sentinel(`http://127.0.0.1:${port}`);
    await watch.inspect(init);
    const stop = await watch.conclude(failed('API Error: Connection refused (ECONNREFUSED)'));
    expect(stop?.cause).toBe('unreachable');
  });
});

describe('AttemptSentinel: the rest of its promises', () => {
  it('an account error in a synthetic message stops as refused credentials, with or without a status', async () => {
    const { watch } = sentinel('http://127.0.0.1:1');
    await watch.inspect(init);
    const stop = await watch.inspect(
      synthetic('Your account does not have access to Claude Code', undefined, 'account_on_hold'),
    );
    expect(stop?.cause).toBe('credentials');
    expect(stop?.message).toContain('the API: the credential was refused');
  });

  it('a synthetic error with an HTTP status proves the endpoint answered', async () => {
    const { watch, endpoints } = sentinel('http://127.0.0.1:1');
    await watch.inspect(init);
    expect(await watch.inspect(synthetic('API Error: 500 Internal server error', 500))).toBeUndefined();
    expect(endpoints.answered()).toBe(true);
  });

  it('the binary error code model_not_found stops by itself, whatever the text says', async () => {
    const { watch } = sentinel('http://127.0.0.1:1');
    await watch.inspect(init);
    const stop = await watch.inspect(synthetic('Something went wrong.', undefined, 'model_not_found'));
    expect(stop?.cause).toBe('model');
    expect(stop?.message).toContain('the model claude-main');
  });

  it('one stop per attempt: once stopped, every later event and the end return that same stop', async () => {
    const { watch } = sentinel('http://127.0.0.1:1');
    await watch.inspect(init);
    const stop = await watch.inspect(retry(401, 'authentication_failed'));
    expect(stop?.cause).toBe('credentials');
    expect(await watch.inspect(reply)).toBe(stop);
    expect(await watch.inspect(retry(529, 'overloaded'))).toBe(stop);
    expect(await watch.conclude(failed('Error: aborted'))).toBe(stop);
  });

  it("flower's own retries are not the binary's: a runtime retry never stops the attempt", async () => {
    const port = await closedPort();
    const { watch } = sentinel(`http://127.0.0.1:${port}`);
    await watch.inspect(init);
    const own: FlowerEvent = {
      kind: 'retry',
      text: 'retrying in 5 s',
      payload: { source: 'runtime', errorStatus: 401 },
    };
    expect(await watch.inspect(own)).toBeUndefined();
    expect(await watch.inspect({ ...own, payload: { source: 'runtime' } })).toBeUndefined();
  });

  it('a context-full handoff before init is not a launch failure', async () => {
    const { watch } = sentinel('http://127.0.0.1:1');
    expect(await watch.conclude(failed(CONTEXT_FULL_HANDOFF))).toBeUndefined();
  });

  it('a fatal failure after init is left to the resilience policy, not reported as unreachable', async () => {
    const port = await closedPort();
    const { watch } = sentinel(`http://127.0.0.1:${port}`);
    await watch.inspect(init);
    expect(
      await watch.conclude(failed('API Error: 400 invalid_request: prompt is too long')),
    ).toBeUndefined();
  });
});

describe('unreachableLine and launchWords', () => {
  const probe = { host: 'gw.example', port: 8443, reachable: false, elapsedMs: 1 };
  it('words each kind of unreachable, and names ANTHROPIC_BASE_URL only when it is set', () => {
    expect(unreachableLine({ ...probe, reason: 'getaddrinfo ENOTFOUND gw.example' }, true)).toBe(
      'gw.example does not resolve; check ANTHROPIC_BASE_URL and the network — flower doctor',
    );
    expect(unreachableLine({ ...probe, reason: 'no TCP handshake within 5000 ms' }, false)).toBe(
      'gw.example:8443 does not answer (no TCP handshake within 5000 ms); check the network (or ANTHROPIC_BASE_URL, if you use a gateway) — flower doctor',
    );
  });

  it('keeps the last lines that are not diagnostics', () => {
    expect(launchWords('[claude-code:x] {}\n\n')).toBeUndefined();
    expect(launchWords('a\nb\nc\nd\n')).toBe('b c d');
  });
});

describe('EndpointHistory', () => {
  it('records an answer once, under the endpoint host:port, and a new instance reads it', () => {
    const history = new EndpointHistory(runDir, 'https://gw.example/v1');
    expect(history.answered()).toBe(false);
    history.recordAnswer();
    history.recordAnswer();
    const file = JSON.parse(readFileSync(join(runDir, ENDPOINTS_FILE), 'utf8'));
    expect(Object.keys(file)).toEqual(['gw.example:443']);
    expect(new EndpointHistory(runDir, 'https://gw.example:443/other').answered()).toBe(true);
    expect(new EndpointHistory(runDir, 'http://gw.example').answered()).toBe(false);
  });

  it('a run directory from before the record: a step that succeeded or cost money stands in for it', () => {
    writeFileSync(join(runDir, 'manifest.json'), JSON.stringify([{ step: 'work', ok: false, cost_usd: 0 }]));
    expect(new EndpointHistory(runDir, 'http://127.0.0.1:9').answered()).toBe(false);
    writeFileSync(
      join(runDir, 'manifest.json'),
      JSON.stringify([{ step: 'work', ok: false, cost_usd: 0.01 }]),
    );
    expect(new EndpointHistory(runDir, 'http://127.0.0.1:9').answered()).toBe(true);
    // Once the record exists, it alone decides (it names the endpoints that answered).
    writeFileSync(join(runDir, ENDPOINTS_FILE), JSON.stringify({ 'other:1': { firstAnswer: 'then' } }));
    expect(new EndpointHistory(runDir, 'http://127.0.0.1:9').answered()).toBe(false);
  });

  it('a step that succeeded stands in for the record even when it cost nothing', () => {
    writeFileSync(join(runDir, 'manifest.json'), JSON.stringify([{ step: 'work', ok: true, cost_usd: 0 }]));
    expect(new EndpointHistory(runDir, 'http://127.0.0.1:9').answered()).toBe(true);
  });

  it("the first answer is kept: a later process's answer does not rewrite its time", () => {
    writeFileSync(
      join(runDir, ENDPOINTS_FILE),
      JSON.stringify({
        'gw.example:443': { firstAnswer: '2020-01-01T00:00:00.000Z' },
        'other:1': { firstAnswer: 'x' },
      }),
    );
    // A process that has not read the file yet records its own answer.
    new EndpointHistory(runDir, 'https://gw.example').recordAnswer();
    const file = JSON.parse(readFileSync(join(runDir, ENDPOINTS_FILE), 'utf8'));
    expect(file['gw.example:443']).toEqual({ firstAnswer: '2020-01-01T00:00:00.000Z' });
    expect(file['other:1']).toEqual({ firstAnswer: 'x' });
  });

  it('never throws: an answer in a run directory that cannot be written is kept in memory only', () => {
    const notADirectory = join(runDir, 'file');
    writeFileSync(notADirectory, '');
    const history = new EndpointHistory(join(notADirectory, 'run'), 'http://127.0.0.1:9');
    expect(() => history.recordAnswer()).not.toThrow();
    expect(history.answered()).toBe(true);
  });

  it('an unreadable file counts as answered: doubt means waiting, as before', () => {
    writeFileSync(join(runDir, ENDPOINTS_FILE), '{ not json');
    expect(new EndpointHistory(runDir, 'http://127.0.0.1:9').answered()).toBe(true);
  });
});

describe('retryCause', () => {
  it('names the status and the code, and never says a bare "unknown"', () => {
    expect(retryCause(529, 'overloaded')).toBe('HTTP 529 overloaded');
    expect(retryCause(401, 'authentication_failed')).toBe('HTTP 401 authentication failed');
    expect(retryCause(500, 'unknown')).toBe('HTTP 500');
    expect(retryCause(null, 'unknown')).toBe('no connection: refused, reset or timed out');
    expect(retryCause(null, undefined, 30_000)).toBe('no response headers within 30 s');
  });
});

describe('AttemptSentinel: each way a refusal or a missing model is said', () => {
  it.each([
    [401, 'unknown'],
    [400, 'oauth_org_not_allowed'],
  ])('an api_retry with status %i and code %s is a refused credential', async (status, code) => {
    const { watch } = sentinel('http://127.0.0.1:1');
    await watch.inspect(init);
    expect((await watch.inspect(retry(status, code)))?.cause).toBe('credentials');
  });

  it.each([
    [401, 'unknown'],
    [403, 'unknown'],
  ])('a synthetic error with status %i is a refused credential whatever its code', async (status, code) => {
    const { watch } = sentinel('http://127.0.0.1:1');
    await watch.inspect(init);
    const stop = await watch.inspect(synthetic('API Error: refused', status, code));
    expect(stop?.cause).toBe('credentials');
    expect(stop?.message).toContain(`HTTP ${status}: the credential was refused (ANTHROPIC_API_KEY`);
  });

  it('names no origin when no credential is set where flower looks', async () => {
    const { watch } = sentinel('http://127.0.0.1:1', { ANTHROPIC_API_KEY: '' });
    await watch.inspect(init);
    const stop = await watch.inspect(retry(401, 'authentication_failed'));
    expect(stop?.message).toContain('HTTP 401: the credential was refused\n');
  });

  it('an error the binary did not synthesise is no stop and no answer, whatever its status', async () => {
    const { watch, endpoints } = sentinel('http://127.0.0.1:1');
    await watch.inspect(init);
    const own: FlowerEvent = {
      kind: 'error',
      text: 'Error: 401',
      payload: { synthetic: false, status: 401 },
    };
    expect(await watch.inspect(own)).toBeUndefined();
    expect(endpoints.answered()).toBe(false);
  });

  it('a synthetic error without an HTTP status is no proof that the endpoint answered', async () => {
    const { watch, endpoints } = sentinel('http://127.0.0.1:1');
    await watch.inspect(init);
    expect(await watch.inspect(synthetic('API Error: Connection error.'))).toBeUndefined();
    expect(endpoints.answered()).toBe(false);
  });

  it('only a reply naming its model proves an answer; other events do not', async () => {
    const { watch, endpoints } = sentinel('http://127.0.0.1:1');
    await watch.inspect(init);
    const quiet: FlowerEvent[] = [
      { kind: 'system', text: 'status', payload: { subtype: 'status', data: {} } },
      { kind: 'text', text: 'hi', payload: { subagent: false } },
      // Not a message at all: it has no model to say.
      { kind: 'unknown', text: 'rate_limit_event', payload: {} } as FlowerEvent,
      {
        kind: 'retry',
        text: 'retrying in 5 s',
        payload: { source: 'runtime', errorStatus: 500 },
      },
    ];
    for (const event of quiet) expect(await watch.inspect(event)).toBeUndefined();
    expect(endpoints.answered()).toBe(false);
  });

  it.each([
    ['API Error: 400 The model claude-nope does not exist or you do not have access to it'],
    ['API Error: 404 {"error":{"message":"model claude-nope was not found"}}'],
  ])('a gateway wording a missing model its own way (%s) stops', async (text) => {
    const { watch } = sentinel('http://127.0.0.1:1');
    await watch.inspect(init);
    expect((await watch.inspect(synthetic(text, 400, 'unknown')))?.cause).toBe('model');
  });

  it('names the model from "model X is not a valid model" without a colon too', async () => {
    const { watch } = sentinel('http://127.0.0.1:1');
    await watch.inspect(init);
    const stop = await watch.inspect(
      synthetic('API Error: 400 model claude-nope is not a valid model ID', 400),
    );
    expect(stop?.message).toContain('does not serve the model claude-nope (');
  });

  it('a missing model that neither the text nor the session names is "(unnamed)"', async () => {
    for (const model of [undefined, '', 42]) {
      const { watch } = sentinel('http://127.0.0.1:1');
      await watch.inspect({ ...init, payload: { subtype: 'init', data: { model } } });
      const stop = await watch.inspect(synthetic('Something went wrong.', undefined, 'model_not_found'));
      expect(stop?.message, String(model)).toContain('does not serve the model (unnamed) (');
    }
  });

  it('only the init message starts the session: another system message before it does not', async () => {
    const { watch } = sentinel('http://127.0.0.1:1');
    await watch.inspect({ kind: 'system', text: 'hook', payload: { subtype: 'hook_response', data: {} } });
    const stop = await watch.conclude(failed('Error: Claude Code process exited with code 1'));
    expect(stop).toEqual({
      cause: 'launch',
      message: 'Claude Code stopped before its first turn: Error: Claude Code process exited with code 1',
    });
  });

  it('a launch failure with nothing on stderr and no error says so', async () => {
    const { watch } = sentinel('http://127.0.0.1:1');
    const result = newStepResult('work', 'run');
    result.ok = false;
    expect(await watch.conclude(result)).toEqual({
      cause: 'launch',
      message: 'Claude Code stopped before its first turn: no reason given',
    });
  });

  it("keeps only the tail of the binary's stderr: a flood does not become the message", async () => {
    const { watch } = sentinel('http://127.0.0.1:1');
    watch.onStderr(`${'x'.repeat(10_000)}\n`);
    watch.onStderr('the reason\n');
    const stop = await watch.conclude(failed('Error: exited'));
    expect(stop?.message.length).toBeLessThanOrEqual(
      'Claude Code stopped before its first turn: '.length + 4_000,
    );
    expect(stop?.message.endsWith(' the reason')).toBe(true);
  });

  it('once stopped, stays stopped: a probe that finds nothing to say later does not undo the stop', async () => {
    const { watch } = sentinel(await listeningUrl(httpAnswer));
    await watch.inspect(init);
    // The probe of the connection failure is still running when the refusal arrives.
    const probing = watch.inspect(retry(null));
    const refused = await watch.inspect(retry(401, 'authentication_failed'));
    expect(refused?.cause).toBe('credentials');
    expect(await probing).toBeUndefined();
    expect(await watch.conclude(failed('API Error: Connection dropped (ECONNRESET)'))).toBe(refused);
  });

  it('probes an endpoint once per attempt, however many connection failures it reports', async () => {
    let connections = 0;
    const { watch } = sentinel(
      await listeningUrl((socket) => {
        connections += 1;
        httpAnswer(socket);
      }),
    );
    await watch.inspect(init);
    expect(await watch.inspect(retry(null))).toBeUndefined();
    const once = connections;
    expect(once).toBeGreaterThan(0);
    expect(await watch.inspect(retry(null))).toBeUndefined();
    expect(await watch.conclude(failed('API Error: Connection dropped (ECONNRESET)'))).toBeUndefined();
    expect(connections).toBe(once);
  });

  it('an ANTHROPIC_BASE_URL that is no URL is left to the binary: nothing to probe', async () => {
    const { watch } = sentinel('not a url');
    await watch.inspect(init);
    expect(await watch.inspect(retry(null))).toBeUndefined();
  });
});

describe('unreachableLine and launchWords: the edges', () => {
  it('says no empty reason', () => {
    expect(unreachableLine({ host: 'gw.example', port: 8443, reachable: false, elapsedMs: 1 }, true)).toBe(
      'gw.example:8443 does not answer; check ANTHROPIC_BASE_URL — flower doctor',
    );
  });

  it('trims the lines it keeps, drops a diagnostic even when indented, and keeps a line that only mentions one', () => {
    expect(launchWords('  [claude-code:x] {}\n   the reason   \n')).toBe('the reason');
    expect(launchWords('error: bad flag [claude-code:x] here\n')).toBe(
      'error: bad flag [claude-code:x] here',
    );
  });
});

describe('AttemptSentinel at the default endpoint', () => {
  it("never blames the protocol of Anthropic's own endpoint: no setting of the user's names it", async () => {
    // The default endpoint cannot be reached from a test: what the probes would find there is given.
    const checkProtocol = vi.fn(async () => ({
      speaks: false,
      mistake: 'not-http' as const,
      observed: 'closed',
    }));
    vi.resetModules();
    vi.doMock('../../../src/config/reachability.js', async (original) => ({
      ...(await original<typeof import('../../../src/config/reachability.js')>()),
      checkReachable: async () => ({ host: 'api.anthropic.com', port: 443, reachable: true, elapsedMs: 1 }),
      checkProtocol,
    }));
    try {
      const fresh = await import('../../../src/runtime/fail-fast.js');
      const endpoints = new EndpointHistory(runDir, undefined);
      const watch = new fresh.AttemptSentinel({
        env: { ANTHROPIC_API_KEY: 'k' },
        endpoints,
        probeTimeoutMs: 500,
      });
      await watch.inspect(init);
      expect(await watch.inspect(retry(null))).toBeUndefined();
      expect(await watch.conclude(failed('API Error: Connection dropped (ECONNRESET)'))).toBeUndefined();
    } finally {
      vi.doUnmock('../../../src/config/reachability.js');
      vi.resetModules();
    }
  });
});
