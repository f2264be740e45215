import { afterEach, describe, expect, it } from 'vitest';
import { checkReachable, endpointOf } from '../../../src/config/reachability.js';
import { type MockModel, startMockModel } from '../../../src/testing/index.js';
import { closedPort } from '../../support/closed-port.js';

let model: MockModel | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

describe('checkReachable (DNS + TCP, no HTTP)', () => {
  it('derives host and port from the base URL', () => {
    expect(endpointOf(undefined)).toEqual({ host: 'api.anthropic.com', port: 443 });
    expect(endpointOf('')).toEqual({ host: 'api.anthropic.com', port: 443 });
    expect(endpointOf('http://gw.example/anthropic')).toEqual({ host: 'gw.example', port: 80 });
    expect(endpointOf('https://gw.example:8443')).toEqual({ host: 'gw.example', port: 8443 });
    expect(endpointOf('http://[::1]:9000')).toEqual({ host: '::1', port: 9000 });
  });

  it('reachable when a TCP handshake succeeds, without sending an HTTP request', async () => {
    model = await startMockModel({});
    const result = await checkReachable(model.url, 2_000);
    expect(result).toMatchObject({ reachable: true, host: '127.0.0.1', port: model.port });
    expect(model.requests).toHaveLength(0);
  });

  it('resolves localhost to whichever address family the endpoint listens on', async () => {
    model = await startMockModel({});
    const result = await checkReachable(`http://localhost:${model.port}`, 2_000);
    expect(result).toMatchObject({ reachable: true, host: 'localhost', port: model.port });
  });

  it('unreachable on a refused port, with the reason', async () => {
    const port = await closedPort();
    const result = await checkReachable(`http://127.0.0.1:${port}`, 2_000);
    expect(result).toMatchObject({ reachable: false, port });
    expect(result.reason).toContain('ECONNREFUSED');
  });

  it('unreachable when the name does not resolve', async () => {
    const result = await checkReachable('https://no-such-host.invalid', 2_000);
    expect(result.reachable).toBe(false);
    expect(result.reason).toMatch(/ENOTFOUND|EAI_AGAIN/);
  });

  it('unreachable for a malformed URL, without throwing', async () => {
    const result = await checkReachable('not a url', 500);
    expect(result.reachable).toBe(false);
    expect(result.reason).toContain('not a valid URL');
  });
});
