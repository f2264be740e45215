import { createServer, type Server } from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  backoffDelay,
  classifyFailure,
  defaultResiliencePolicy,
  describeFailure,
  describeOffline,
  describeWait,
  fatalFailureMessage,
  type OfflineStatus,
  offlineGaveUpError,
  resiliencePolicy,
  shouldRetry,
  waitOnline,
} from '../../../src/runtime/resilience.js';

describe('classifyFailure', () => {
  it.each([
    'API Error: 401 {"type":"error","error":{"type":"authentication_error"}}',
    'Request failed with status 403',
    'invalid x-api-key',
    'Invalid API key · Please run /login',
    'invalid_api_key',
    'Your credit balance is too low to access the Anthropic API',
    'Error: 400 invalid_request_error: messages: text content blocks must be non-empty',
    'Reached maximum budget ($1.00)',
    'error_max_turns',
    'permission denied',
    'quota exceeded for this month',
    'CLINotFoundError: Claude Code not found',
    '404 model not found',
  ])('treats %j as fatal', (text) => {
    expect(classifyFailure(text)).toBe('fatal');
  });

  it.each([
    "API Error: Can't reach the API server (ECONNREFUSED)",
    'getaddrinfo ENOTFOUND api.example.com',
    'read ECONNRESET',
    'socket hang up',
    'TypeError: fetch failed',
    'API Error: 529 {"type":"overloaded_error"}',
    'API Error: 500 Internal server error',
    '502 Bad Gateway',
    '503 Service Unavailable',
    '429 Too Many Requests',
    'rate_limit_error: slow down',
    'Request timed out.',
    'Connection error.',
    'EAI_AGAIN',
  ])('treats %j as transient', (text) => {
    expect(classifyFailure(text)).toBe('transient');
  });

  it('checks fatal before transient: a 401 that mentions the connection is still fatal', () => {
    expect(classifyFailure('401 Unauthorized: connection error while authenticating')).toBe('fatal');
  });

  it('matches status codes as whole numbers only', () => {
    expect(classifyFailure('processed 4010 records')).toBe('unknown');
    expect(classifyFailure('port 15290 busy')).toBe('unknown');
  });

  it('calls empty or unrecognised text unknown, which is retried by default only', () => {
    expect(classifyFailure('')).toBe('unknown');
    expect(classifyFailure(null)).toBe('unknown');
    expect(classifyFailure('something odd happened')).toBe('unknown');
    expect(shouldRetry('unknown')).toBe(true);
    expect(shouldRetry('unknown', resiliencePolicy({ retryUnknown: false }))).toBe(false);
    expect(shouldRetry('transient')).toBe(true);
    expect(shouldRetry('fatal')).toBe(false);
  });
});

describe('backoffDelay', () => {
  it('doubles from 4 s and caps at 120 s, with the jitter at its middle', () => {
    const middle = () => 0.5;
    expect(
      [1, 2, 3, 4, 5, 6, 9].map((attempt) => backoffDelay(attempt, defaultResiliencePolicy, middle)),
    ).toEqual([4_000, 8_000, 16_000, 32_000, 64_000, 120_000, 120_000]);
  });

  it('stays within ±25 % of min(base·2^(n−1), max) for any attempt and random value', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (n, r) => {
          const nominal = Math.min(4_000 * 2 ** (n - 1), 120_000);
          const delay = backoffDelay(n, defaultResiliencePolicy, () => r);
          expect(delay).toBeGreaterThanOrEqual(nominal * 0.75);
          expect(delay).toBeLessThan(nominal * 1.25 + 1e-9);
          expect(delay).toBeCloseTo(nominal * (0.75 + 0.5 * r), 6);
        },
      ),
    );
  });
});

describe('policy and messages', () => {
  it('has the reference defaults', () => {
    expect(defaultResiliencePolicy).toMatchObject({
      enabled: true,
      maxAttempts: 6,
      baseDelayMs: 4_000,
      maxDelayMs: 120_000,
      probeTimeoutMs: 5_000,
      probeIntervalMs: 15_000,
      maxOfflineWaitMs: 3_600_000,
      retryUnknown: true,
    });
  });

  it('keeps error details out of the resume prompt', () => {
    const prompt = defaultResiliencePolicy.resumePrompt;
    expect(prompt).toMatch(/cut off/);
    expect(prompt).toMatch(/do not start over/i);
    expect(classifyFailure(prompt)).toBe('unknown');
    expect(prompt).not.toMatch(/error|network|ECONN|\b5\d\d\b/i);
  });

  it('tells the user to run flower setup for fatal failures', () => {
    const message = fatalFailureMessage('401 invalid x-api-key', 'https://gw.example.com');
    expect(message).toContain('401 invalid x-api-key');
    expect(message).toContain('https://gw.example.com');
    expect(message).toContain('flower setup');
  });

  it('renders waits in seconds below a minute and in minutes above', () => {
    expect(describeWait(45_000)).toBe('45 seconds');
    expect(describeWait(3_600_000)).toBe('60 minutes');
    expect(offlineGaveUpError('fetch failed')).toBe(
      'fetch failed | the network did not come back within 60 minutes',
    );
  });
});

describe('describeOffline', () => {
  it('reads as the live line: since when, next probe, when flower gives up', () => {
    const at = (hours: number, minutes: number, seconds = 0) =>
      new Date(2026, 0, 2, hours, minutes, seconds).getTime();
    const status = {
      endpoint: '10.0.0.5:443',
      downSince: at(9, 14),
      nextProbeAt: at(9, 20, 12),
      givesUpAt: at(10, 14),
    };
    expect(describeOffline(status, at(9, 20))).toBe(
      'endpoint 10.0.0.5:443 down since 09:14, next probe in 12 s, gives up at 10:14',
    );
    expect(describeOffline(status, at(9, 21))).toContain('next probe in 0 s');
  });
});

describe('describeFailure', () => {
  it("keeps the cause's first line without the SDK's wrapping", () => {
    expect(
      describeFailure('Error: Claude Code returned an error result: API Error: 529 Overloaded\nmore'),
    ).toBe('API Error: 529 Overloaded');
    expect(describeFailure(null)).toBe('no reason given');
    expect(describeFailure('x'.repeat(300))).toHaveLength(120);
  });
});

describe('waitOnline (real TCP on loopback)', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.map((server) => new Promise((done) => server.close(done))));
    servers.length = 0;
  });

  function listen(port = 0): Promise<number> {
    const server = createServer((socket) => socket.destroy());
    servers.push(server);
    return new Promise((done) =>
      server.listen(port, '127.0.0.1', () => done((server.address() as { port: number }).port)),
    );
  }

  async function freePort(): Promise<number> {
    const port = await listen();
    await new Promise((done) => servers.pop()?.close(done));
    return port;
  }

  const fast = resiliencePolicy({ probeIntervalMs: 20, probeTimeoutMs: 500, maxOfflineWaitMs: 2_000 });

  it('returns at once and says nothing when the endpoint answers', async () => {
    const port = await listen();
    const notices: string[] = [];
    expect(
      await waitOnline(`http://127.0.0.1:${port}`, { policy: fast, onNotice: (line) => notices.push(line) }),
    ).toBe(true);
    expect(notices).toEqual([]);
  });

  it('says one line when unreachable and one when back, probing at the interval in between', async () => {
    const port = await freePort();
    const notices: string[] = [];
    const pauses: number[] = [];
    const statuses: OfflineStatus[] = [];
    const started = Date.now();
    const result = await waitOnline(`http://127.0.0.1:${port}`, {
      policy: fast,
      onNotice: (line) => notices.push(line),
      onStatus: (status) => statuses.push(status),
      sleep: async (ms) => {
        pauses.push(ms);
        if (pauses.length === 3) await listen(port);
      },
    });
    expect(result).toBe(true);
    expect(pauses).toEqual([20, 20, 20]);
    // A live status before every pause: since when, when the next probe is, when it gives up.
    expect(statuses).toHaveLength(3);
    for (const status of statuses) {
      expect(status.endpoint).toBe(`127.0.0.1:${port}`);
      expect(status.downSince).toBe(statuses[0]?.downSince);
      expect(status.downSince).toBeGreaterThanOrEqual(started);
      expect(status.givesUpAt).toBe(status.downSince + 2_000);
      expect(status.nextProbeAt).toBeGreaterThan(status.downSince);
    }
    expect(notices).toEqual([
      `127.0.0.1:${port} is unreachable; waiting for it to come back (up to 2 seconds).`,
      `127.0.0.1:${port} is reachable again; continuing.`,
    ]);
  });

  it('gives up after the maximum offline wait', async () => {
    const port = await freePort();
    const notices: string[] = [];
    const started = Date.now();
    const result = await waitOnline(`http://127.0.0.1:${port}`, {
      policy: resiliencePolicy({ probeIntervalMs: 50, probeTimeoutMs: 200, maxOfflineWaitMs: 300 }),
      onNotice: (line) => notices.push(line),
    });
    expect(result).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(notices).toHaveLength(1);
  });

  it('does not wait for a base URL that is not a URL at all', async () => {
    const notices: string[] = [];
    expect(
      await waitOnline('http://exa mple', { policy: fast, onNotice: (line) => notices.push(line) }),
    ).toBe(false);
    expect(notices).toEqual([
      'ANTHROPIC_BASE_URL is not a valid URL (http://exa mple); run `flower setup` to fix it.',
    ]);
  });

  it('stops waiting when aborted', async () => {
    const port = await freePort();
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('user stopped')), 50);
    await expect(
      waitOnline(`http://127.0.0.1:${port}`, {
        policy: resiliencePolicy({ probeIntervalMs: 10_000 }),
        signal: controller.signal,
      }),
    ).rejects.toThrow('user stopped');
  });
});
