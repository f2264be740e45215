import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maskSecret } from '../../../src/config/credentials.js';
import { MIN_SECRET_LENGTH, maskSecrets, secretMask, secretValues } from '../../../src/config/secret-mask.js';

const KEY = 'sk-ant-api03-abcdefghijklmnop';

describe('secretMask', () => {
  it('masks every occurrence of a credential value, and nothing else', () => {
    const mask = secretMask({ ANTHROPIC_API_KEY: KEY, HOME: '/home/me' });
    expect(mask(`key=${KEY}; again ${KEY} in /home/me`)).toBe(
      `key=${maskSecret(KEY)}; again ${maskSecret(KEY)} in /home/me`,
    );
  });

  it('knows the credential keys and every variable named like a secret, when long enough', () => {
    expect(
      secretValues({
        ANTHROPIC_AUTH_TOKEN: 'token-1234567890',
        GITHUB_TOKEN: 'ghp_0123456789',
        SOME_KEY: 'short',
        MODEL: 'claude-long-model-name',
      }),
    ).toEqual(['token-1234567890', 'ghp_0123456789']);
  });

  it('masks a value that came with surrounding white space (a pasted key) wherever it is printed', () => {
    const mask = secretMask({ ANTHROPIC_API_KEY: ` ${KEY}\n` });
    expect(mask(`got ${KEY}.`)).toBe(`got ${maskSecret(KEY)}.`);
  });

  it('judges the length without the white space: a short value padded with spaces is no secret', () => {
    expect(secretValues({ MY_TOKEN: '   abc    ' })).toEqual([]);
    expect(maskSecrets('abc and abc', { MY_TOKEN: '   abc    ' })).toBe('abc and abc');
  });

  it('masks a secret that contains another one as a whole', () => {
    const inner = 'abcdefghij';
    const outer = `${inner}-klmnopqrst`;
    expect(maskSecrets(`x ${outer} y ${inner}`, { A_KEY: inner, B_TOKEN: outer })).toBe(
      `x ${maskSecret(outer)} y ${maskSecret(inner)}`,
    );
  });

  it('leaves text without secrets as it is (property)', () => {
    const mask = secretMask({ ANTHROPIC_API_KEY: KEY });
    fc.assert(
      fc.property(fc.string(), (text) => {
        fc.pre(!text.includes(KEY));
        return mask(text) === text;
      }),
    );
  });

  it('never leaves the secret in the output, wherever it is embedded (property)', () => {
    const mask = secretMask({ ANTHROPIC_API_KEY: KEY });
    fc.assert(
      fc.property(
        fc.string(),
        fc.string(),
        (before, after) => !mask(`${before}${KEY}${after}`).includes(KEY),
      ),
    );
  });

  it('is the identity without secrets', () => {
    expect(secretMask({ PATH: '/bin' })('x'.repeat(MIN_SECRET_LENGTH))).toBe('x'.repeat(MIN_SECRET_LENGTH));
  });
});
