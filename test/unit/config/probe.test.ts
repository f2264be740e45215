import { afterEach, describe, expect, it } from 'vitest';
import {
  classifyProbeResponse,
  DEFAULT_PROBE_MODEL,
  probeCredentials,
  probeDisabled,
  probeModel,
  probeModelChoice,
} from '../../../src/config/probe.js';
import { type MockModel, mock, startMockModel } from '../../../src/testing/index.js';
import { closedPort } from '../../support/closed-port.js';

let model: MockModel | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

describe('classifyProbeResponse', () => {
  it.each([
    [200, '{}', 'ok'],
    [301, '', 'ok'],
    [401, '{"error":{"type":"authentication_error"}}', 'auth'],
    [403, 'forbidden', 'auth'],
    [404, '{"error":{"type":"not_found_error","message":"model: x"}}', 'config'],
    [400, '{"error":{"message":"model: claude-x does not exist"}}', 'config'],
    [400, 'Unknown model claude-x', 'config'],
    [400, 'no such model', 'config'],
    [400, 'Invalid model name', 'config'],
    [400, 'model: claude-x is not a valid model ID', 'config'],
    [400, '{"error":{"type":"invalid_request_error","message":"model: field required"}}', 'ok'],
    [429, 'rate limited', 'ok'],
    [500, 'boom', 'net'],
    [503, 'unavailable', 'net'],
    [529, 'overloaded', 'net'],
  ] as const)('HTTP %d %j → %s', (status, body, verdict) => {
    expect(classifyProbeResponse(status, body).verdict).toBe(verdict);
  });

  describe('a "no such model" answer depends on who chose the model', () => {
    const notServed = '{"type":"error","error":{"type":"not_found_error","message":"model: claude-x"}}';
    it('a configured model the endpoint lacks is a setup error, marked as such', () => {
      expect(classifyProbeResponse(404, notServed, { model: 'claude-x', configured: true })).toMatchObject({
        verdict: 'config',
        modelMissing: true,
      });
      expect(
        classifyProbeResponse(400, 'model: claude-x is not a valid model ID', {
          model: 'claude-x',
          configured: true,
        }),
      ).toMatchObject({ verdict: 'config', modelMissing: true });
    });

    it("flower's own default that the endpoint lacks is not: the key got through", () => {
      const verdict = classifyProbeResponse(404, notServed, { model: 'claude-x', configured: false });
      expect(verdict.verdict).toBe('ok');
      expect(verdict.detail).toContain('the key was accepted');
      expect(verdict.modelMissing).toBeUndefined();
    });

    it('a 404 that does not name the model is a wrong URL, whoever chose the model', () => {
      const wrongPath = '{"type":"error","error":{"type":"not_found_error","message":"Not Found"}}';
      expect(classifyProbeResponse(404, wrongPath, { model: 'claude-x', configured: false })).toEqual({
        verdict: 'config',
        detail: expect.stringMatching(/^HTTP 404 /),
      });
    });
  });

  it('keeps at most 200 body characters in the detail', () => {
    const { detail } = classifyProbeResponse(401, 'x'.repeat(500));
    expect(detail).toBe(`HTTP 401 ${'x'.repeat(200)}`);
  });
});

describe('probe model and switch', () => {
  it('asks with the model the run uses: ANTHROPIC_MODEL, never a cheaper mapping', () => {
    expect(
      probeModelChoice({ ANTHROPIC_DEFAULT_HAIKU_MODEL: 'claude-h', ANTHROPIC_MODEL: 'claude-m' }),
    ).toEqual({ model: 'claude-m', key: 'ANTHROPIC_MODEL' });
    expect(probeModel({ ANTHROPIC_MODEL: 'claude-m' })).toBe('claude-m');
  });

  it('sends the name the API sees: a [1m] suffix is Claude Code’s, not the model’s', () => {
    expect(probeModel({ ANTHROPIC_MODEL: 'claude-opus-5[1m]' })).toBe('claude-opus-5');
  });

  it('resolves a tier alias through its mapping, else falls back to the default', () => {
    expect(
      probeModelChoice({ ANTHROPIC_MODEL: 'opus', ANTHROPIC_DEFAULT_OPUS_MODEL: 'gw-opus[1m]' }),
    ).toEqual({ model: 'gw-opus', key: 'ANTHROPIC_DEFAULT_OPUS_MODEL' });
    expect(probeModelChoice({ ANTHROPIC_MODEL: 'sonnet[1m]' })).toEqual({ model: DEFAULT_PROBE_MODEL });
  });

  it('with no model configured: an alias the API serves, not a dated snapshot', () => {
    expect(probeModelChoice({ ANTHROPIC_DEFAULT_HAIKU_MODEL: 'claude-h' })).toEqual({
      model: DEFAULT_PROBE_MODEL,
    });
    expect(DEFAULT_PROBE_MODEL).not.toMatch(/\d{8}$/);
  });

  it('FLOWER_NO_PROBE set to anything non-empty turns the probe off', () => {
    expect(probeDisabled({ FLOWER_NO_PROBE: '0' })).toBe(true);
    expect(probeDisabled({ FLOWER_NO_PROBE: '' })).toBe(false);
    expect(probeDisabled({})).toBe(false);
  });
});

// The probe's request offers no tools, so the mock files it under its "side" queue.
describe('probeCredentials against the mock model', () => {
  it("ok: one POST /v1/messages with max_tokens 16, the run's model and x-api-key", async () => {
    model = await startMockModel({ side: [mock.text('hello')] });
    const result = await probeCredentials({
      ANTHROPIC_BASE_URL: `${model.url}/`,
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_AUTH_TOKEN: 'ignored-token',
      ANTHROPIC_DEFAULT_HAIKU_MODEL: 'claude-haiku-test',
      ANTHROPIC_MODEL: 'claude-opus-test',
    });
    expect(result).toMatchObject({
      verdict: 'ok',
      status: 200,
      model: 'claude-opus-test',
      modelKey: 'ANTHROPIC_MODEL',
    });
    expect(result.url).toBe(`${model.url}/v1/messages`);
    expect(model.requests).toHaveLength(1);
    const [request] = model.requests;
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/v1/messages');
    expect(request?.body).toEqual({
      model: 'claude-opus-test',
      max_tokens: 16,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(request?.headers['x-api-key']).toBe('test-key');
    expect(request?.headers.authorization).toBeUndefined();
    expect(request?.headers['anthropic-version']).toBe('2023-06-01');
    expect(request?.headers['content-type']).toBe('application/json');
  });

  it('sends a gateway token as a Bearer authorization', async () => {
    model = await startMockModel({ side: [mock.text('hello')] });
    const result = await probeCredentials({
      ANTHROPIC_BASE_URL: model.url,
      ANTHROPIC_AUTH_TOKEN: 'gw-token',
    });
    expect(result.verdict).toBe('ok');
    expect(model.requests[0]?.headers.authorization).toBe('Bearer gw-token');
    expect(model.requests[0]?.headers['x-api-key']).toBeUndefined();
    expect(model.requests[0]?.body?.model).toBe(DEFAULT_PROBE_MODEL);
  });

  it.each([
    ['401', mock.error(401), 'auth', 401],
    ['404', mock.error(404), 'config', 404],
    [
      '400 naming the model',
      mock.error(400, { message: 'model: claude-nope is not a valid model ID' }),
      'config',
      400,
    ],
    ['503', mock.error(503), 'net', 503],
  ] as const)('%s → %s', async (_name, fault, verdict, status) => {
    model = await startMockModel({ side: [fault] });
    const result = await probeCredentials({ ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: 'test-key' });
    expect(result.verdict).toBe(verdict);
    expect(result.status).toBe(status);
    expect(result.detail).toMatch(new RegExp(`^HTTP ${status} `));
    expect(model.requests).toHaveLength(1);
  });

  it('a refused port → net, naming the connection error', async () => {
    const port = await closedPort();
    const result = await probeCredentials({
      ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`,
      ANTHROPIC_API_KEY: 'k',
    });
    expect(result.verdict).toBe('net');
    expect(result.detail).toContain('ECONNREFUSED');
  });

  it('a server that does not answer in time → net (timeout)', async () => {
    model = await startMockModel({ side: [mock.text('late', { delayMs: 2_000 })] });
    const result = await probeCredentials(
      { ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: 'k' },
      { timeoutMs: 200 },
    );
    expect(result.verdict).toBe('net');
    expect(result.detail).toMatch(/timeout/i);
  });

  it('no credentials → auth without any request', async () => {
    model = await startMockModel({});
    const result = await probeCredentials({ ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: '' });
    expect(result.verdict).toBe('auth');
    expect(model.requests).toHaveLength(0);
  });

  it('a base URL that is not a URL → config', async () => {
    const result = await probeCredentials({ ANTHROPIC_BASE_URL: 'gateway.example', ANTHROPIC_API_KEY: 'k' });
    expect(result.verdict).toBe('config');
  });
});
