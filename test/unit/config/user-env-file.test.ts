import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseDotenv } from '../../../src/config/dotenv-parser.js';
import {
  readEnvFileValues,
  saveEnvFile,
  unstorableReason,
  updateEnvFileText,
} from '../../../src/config/user-env-file.js';

describe('updateEnvFileText', () => {
  it('a new file gets a header and the keys in order', () => {
    const text = updateEnvFileText(undefined, { ANTHROPIC_API_KEY: 'sk-ant-1', ANTHROPIC_BASE_URL: null });
    expect(text).toMatch(/^# flower credentials/);
    expect(text.endsWith('\nANTHROPIC_API_KEY=sk-ant-1\n')).toBe(true);
    expect(text).not.toContain('ANTHROPIC_BASE_URL');
  });

  it('replaces in place, removes, appends, and keeps everything else verbatim', () => {
    const existing = [
      '# mine',
      'export WEIRD=1',
      'ANTHROPIC_MODEL = old',
      '',
      'OTHER=keep # with comment',
      'ANTHROPIC_AUTH_TOKEN=old-token',
      'ANTHROPIC_MODEL=duplicate',
    ].join('\n');
    expect(
      updateEnvFileText(existing, {
        ANTHROPIC_MODEL: 'new',
        ANTHROPIC_AUTH_TOKEN: null,
        FLOWER_WINDOW: '200000',
      }),
    ).toBe(
      [
        '# mine',
        'export WEIRD=1',
        'ANTHROPIC_MODEL=new',
        '',
        'OTHER=keep # with comment',
        'FLOWER_WINDOW=200000',
        '',
      ].join('\n'),
    );
  });

  it('what it writes parses back to exactly the values given', () => {
    const values = { A: 'x=y', B: 'a # b', C: '$LITERAL', D: 'claude-opus-5[1m]' };
    const parsed = parseDotenv(updateEnvFileText(undefined, values));
    expect(Object.fromEntries(parsed.entries.map((entry) => [entry.key, entry.value]))).toEqual(values);
  });

  it.each([
    ['"quoted"', 'quote'],
    ["trailing'", 'quote'],
    [' padded', 'blank'],
    ['two\nlines', 'several lines'],
  ])('refuses a value the parser would change: %j', (value, reason) => {
    expect(unstorableReason(value)).toContain(reason);
    expect(() => updateEnvFileText(undefined, { KEY: value })).toThrow(/cannot store KEY/);
  });
});

describe('saveEnvFile / readEnvFileValues', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'flower-user-env-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('creates the directory (0700) and the file (0600)', () => {
    const path = join(root, 'config', 'flower', '.env');
    saveEnvFile(path, { ANTHROPIC_AUTH_TOKEN: 't' });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(root, 'config', 'flower')).mode & 0o777).toBe(0o700);
    expect(readEnvFileValues(path)).toEqual({ ANTHROPIC_AUTH_TOKEN: 't' });
  });

  it('tightens an existing world-readable file to 0600', () => {
    const path = join(root, '.env');
    writeFileSync(path, 'X=1\n', { mode: 0o644 });
    saveEnvFile(path, { Y: '2' });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, 'utf8')).toBe('X=1\nY=2\n');
  });

  it('reading a missing file gives no values; the first occurrence of a key wins', () => {
    expect(readEnvFileValues(join(root, 'nope'))).toEqual({});
    writeFileSync(join(root, '.env'), 'K=first\nK=second\n');
    expect(readEnvFileValues(join(root, '.env'))).toEqual({ K: 'first' });
  });
});

describe('updateEnvFileText properties', () => {
  const key = fc.stringMatching(/^[A-Z][A-Z0-9_]{0,12}$/);
  const value = fc.stringMatching(/^[A-Za-z0-9:/._@[\]-]{1,20}$/);

  function firstValues(text: string): Record<string, string> {
    const values: Record<string, string> = {};
    for (const entry of parseDotenv(text).entries)
      if (!(entry.key in values)) values[entry.key] = entry.value;
    return values;
  }

  it('updated keys read back as given, removed keys are gone, every other key keeps its value', () => {
    fc.assert(
      fc.property(
        fc.dictionary(key, value),
        fc.dictionary(key, fc.option(value, { nil: null })),
        (before, updates) => {
          const existing = Object.entries(before)
            .map(([k, v]) => `${k}=${v}`)
            .join('\n');
          const after = firstValues(updateEnvFileText(existing, updates));
          const expected: Record<string, string> = { ...before };
          for (const [k, v] of Object.entries(updates)) {
            if (v === null) delete expected[k];
            else expected[k] = v;
          }
          expect(after).toEqual(expected);
        },
      ),
    );
  });
});
