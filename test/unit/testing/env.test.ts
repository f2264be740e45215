import { describe, expect, it } from 'vitest';
import { mockModelEnv } from '../../../src/testing/env.js';

describe('mockModelEnv', () => {
  it('points the child at the mock with test credentials, a fresh config dir and no extra traffic', () => {
    const env = mockModelEnv(
      { url: 'http://127.0.0.1:1234' },
      { configDir: '/tmp/cfg', maxRetries: 2, base: {} },
    );
    expect(env).toEqual({
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:1234',
      ANTHROPIC_API_KEY: 'test-key',
      CLAUDE_CONFIG_DIR: '/tmp/cfg',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_TELEMETRY: '1',
      CLAUDE_CODE_MAX_RETRIES: '2',
    });
  });

  it("drops the host's Anthropic and Claude settings but keeps the rest of the environment", () => {
    const env = mockModelEnv(
      { url: 'http://127.0.0.1:1' },
      {
        configDir: '/c',
        base: { PATH: '/bin', ANTHROPIC_AUTH_TOKEN: 'real', CLAUDE_CODE_USE_BEDROCK: '1', HOME: '/root' },
        extra: { CLAUDE_CODE_DISABLE_BACKGROUND_TASKS: '1' },
      },
    );
    expect(env.PATH).toBe('/bin');
    expect(env.HOME).toBe('/root');
    expect(env.ANTHROPIC_AUTH_TOKEN).toBeUndefined();
    expect(env.CLAUDE_CODE_USE_BEDROCK).toBeUndefined();
    expect(env.CLAUDE_CODE_MAX_RETRIES).toBe('0');
    expect(env.CLAUDE_CODE_DISABLE_BACKGROUND_TASKS).toBe('1');
  });
});
