/**
 * The environment a Claude Code child process needs to talk to the mock model and nothing else.
 *
 * Invariants: the child never sees the host's own Anthropic or Claude Code configuration (every
 * inherited `ANTHROPIC_*` and `CLAUDE_*` variable is dropped before ours are set), its config
 * directory is the caller's fresh one, and it sends no telemetry or other nonessential traffic.
 */

export interface MockModelEnvOptions {
  /** A fresh, empty directory for CLAUDE_CONFIG_DIR (the binary writes transcripts there). */
  configDir: string;
  /**
   * CLAUDE_CODE_MAX_RETRIES. Default 0: a scripted fault reaches the caller at once instead of
   * being retried by the binary with growing waits (see src/testing/README.md for the retry timings).
   */
  maxRetries?: number;
  /** Variables to start from; default `process.env`. Host Anthropic/Claude settings are removed. */
  base?: NodeJS.ProcessEnv;
  /** Extra variables set last (they win). */
  extra?: Record<string, string>;
}

/** Prefixes of variables that would point the child at a real endpoint or a host configuration. */
const HOST_CONFIGURATION_PREFIXES = ['ANTHROPIC_', 'CLAUDE_'];

export function mockModelEnv(mock: { url: string }, options: MockModelEnvOptions): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.base ?? process.env)) {
    if (value === undefined) continue;
    if (HOST_CONFIGURATION_PREFIXES.some((prefix) => name.startsWith(prefix))) continue;
    env[name] = value;
  }
  return {
    ...env,
    ANTHROPIC_BASE_URL: mock.url,
    ANTHROPIC_API_KEY: 'test-key',
    CLAUDE_CONFIG_DIR: options.configDir,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    CLAUDE_CODE_MAX_RETRIES: String(options.maxRetries ?? 0),
    ...options.extra,
  };
}
