import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  defaultEnvironmentLimits,
  environmentSizeMessage,
  environmentSizeProblem,
} from '../../../src/config/environment-size.js';

const PATH = process.env.PATH ?? '/usr/bin:/bin';

describe('environmentSizeProblem', () => {
  it('accepts an ordinary environment', () => {
    expect(environmentSizeProblem({ PATH, HOME: '/home/me', EMPTY: undefined })).toBeUndefined();
  });

  it('names a variable whose KEY=value string is over the per-variable limit', () => {
    const limit = defaultEnvironmentLimits.maxVariableBytes;
    // "K=" + value + NUL: the largest value that fits is limit - 3 bytes.
    expect(environmentSizeProblem({ K: 'x'.repeat(limit - 3) })).toBeUndefined();
    expect(environmentSizeProblem({ PATH, K: 'x'.repeat(limit - 2) })).toMatchObject({
      key: 'K',
      bytes: limit + 1,
      kind: 'variable',
    });
  });

  it('names the largest variable when only the total is too large', () => {
    const env = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`V${i}`, 'x'.repeat(100_000 + i)]));
    expect(environmentSizeProblem(env)).toMatchObject({ key: 'V11', kind: 'total' });
  });

  it.runIf(process.platform === 'linux')('agrees with the kernel at the per-variable limit', () => {
    const limit = defaultEnvironmentLimits.maxVariableBytes;
    const fits = { PATH, K: 'x'.repeat(limit - 3) };
    const tooBig = { PATH, K: 'x'.repeat(limit - 2) };
    expect(spawnSync('/bin/true', [], { env: fits }).error).toBeUndefined();
    expect(
      (spawnSync('/bin/true', [], { env: tooBig }).error as NodeJS.ErrnoException | undefined)?.code,
    ).toBe('E2BIG');
    expect(environmentSizeProblem(fits)).toBeUndefined();
    expect(environmentSizeProblem(tooBig)).toBeDefined();
  });
});

describe('environmentSizeMessage', () => {
  it('names the key, the .env line it came from and what to do', () => {
    const message = environmentSizeMessage(
      { ANTHROPIC_CUSTOM_HEADERS: 'x'.repeat(2 * 1024 * 1024) },
      undefined,
      () => '/p/.env:3',
    );
    expect(message).toBe(
      'ANTHROPIC_CUSTOM_HEADERS (set in /p/.env:3) is 2.0 MB; the agent process cannot start with one environment variable over 128 KB (the system refuses it: E2BIG). Shorten that line or remove it.',
    );
  });

  it('says so without a place when the value did not come from a .env file', () => {
    expect(environmentSizeMessage({ BIG: 'x'.repeat(200_000) }, undefined, () => undefined)).toMatch(
      /^BIG is 196 KB; .* Shorten it or unset it\.$/,
    );
    expect(environmentSizeMessage({ PATH }, undefined, () => '/x')).toBeUndefined();
  });
});
