import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  calibratedWindow,
  calibrationFilePath,
  calibrationKey,
  defaultWindow,
  parsePositiveInteger,
  rememberOverflow,
  resolveWindow,
  windowFromModelName,
} from '../../../src/config/window.js';

let home: string;
beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'flower-window-'));
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

describe('window from the model name', () => {
  it.each([
    ['', 1_000_000],
    ['claude-opus-5', 1_000_000],
    ['claude-sonnet-4-5', 1_000_000],
    ['claude-3-5-haiku-20241022', 200_000],
    ['Claude-HAIKU-4', 200_000],
    ['claude-opus-5[1m]', 1_000_000],
    ['haiku-1m', 1_000_000],
    ['haiku 1M', 1_000_000],
    ['haiku-11m', 200_000],
    ['haiku-1mb', 200_000],
  ])('%j → %d', (model, window) => {
    expect(windowFromModelName(model)).toBe(window);
  });

  it('uses ANTHROPIC_MODEL, else the opus mapping', () => {
    expect(defaultWindow({ env: { ANTHROPIC_DEFAULT_OPUS_MODEL: 'x-haiku' }, home })).toBe(200_000);
    expect(
      defaultWindow({ env: { ANTHROPIC_MODEL: 'opus', ANTHROPIC_DEFAULT_OPUS_MODEL: 'x-haiku' }, home }),
    ).toBe(1_000_000);
  });
});

describe('FLOWER_WINDOW', () => {
  it.each([
    ['200000', 200_000],
    [' 150000 ', 150_000],
    ['+5', 5],
    ['1_000_000', 1_000_000],
  ])('%j is used', (text, window) => {
    expect(resolveWindow({ env: { FLOWER_WINDOW: text, ANTHROPIC_MODEL: 'haiku' }, home })).toEqual({
      window,
      source: 'FLOWER_WINDOW',
    });
  });

  it.each(['abc', '0', '-5', '', '1.5', '2e5', '12abc'])('%j is ignored', (text) => {
    expect(parsePositiveInteger(text)).toBeUndefined();
    expect(resolveWindow({ env: { FLOWER_WINDOW: text, ANTHROPIC_MODEL: 'haiku' }, home })).toEqual({
      window: 200_000,
      source: 'model-name',
    });
  });
});

describe('calibration file', () => {
  const env = { ANTHROPIC_BASE_URL: 'https://gw.example', ANTHROPIC_MODEL: 'claude-opus-5' };

  it('lives in the user config dir (XDG aware), keyed by endpoint and model', () => {
    expect(calibrationFilePath({ env, home })).toBe(join(home, '.config', 'flower', '.windows'));
    expect(calibrationFilePath({ env: { XDG_CONFIG_HOME: '/x' }, home })).toBe('/x/flower/.windows');
    expect(calibrationKey(env)).toBe('https://gw.example|claude-opus-5');
    expect(calibrationKey({})).toBe('default|');
    expect(calibrationKey({ ANTHROPIC_DEFAULT_OPUS_MODEL: 'opus-map' })).toBe('default|opus-map');
  });

  it('remembers the smallest overflow seen, and it beats the model-name guess', () => {
    rememberOverflow(300_000, { env, home });
    rememberOverflow(250_000.7, { env, home });
    rememberOverflow(400_000, { env, home });
    rememberOverflow(0, { env, home });
    rememberOverflow(-1, { env, home });
    expect(calibratedWindow({ env, home })).toBe(250_000);
    expect(resolveWindow({ env, home })).toEqual({ window: 250_000, source: 'calibration' });
    expect(JSON.parse(readFileSync(calibrationFilePath({ env, home }), 'utf8'))).toEqual({
      'https://gw.example|claude-opus-5': 250_000,
    });
    expect(statSync(calibrationFilePath({ env, home })).mode & 0o777).toBe(0o600);
  });

  it('FLOWER_WINDOW beats the calibration', () => {
    rememberOverflow(250_000, { env, home });
    expect(resolveWindow({ env: { ...env, FLOWER_WINDOW: '123456' }, home }).window).toBe(123_456);
  });

  it('a record for another endpoint or model does not apply', () => {
    rememberOverflow(250_000, { env, home });
    expect(calibratedWindow({ env: { ...env, ANTHROPIC_MODEL: 'claude-haiku' }, home })).toBeUndefined();
    expect(calibratedWindow({ env: { ANTHROPIC_MODEL: 'claude-opus-5' }, home })).toBeUndefined();
  });

  it('keeps the other records when adding one', () => {
    rememberOverflow(250_000, { env, home });
    rememberOverflow(180_000, { env: { ANTHROPIC_MODEL: 'm' }, home });
    expect(Object.keys(JSON.parse(readFileSync(calibrationFilePath({ env, home }), 'utf8')))).toHaveLength(2);
  });

  it.each([
    ['not JSON', '{oops'],
    ['a non-positive record', JSON.stringify({ 'https://gw.example|claude-opus-5': 0 })],
    ['a string record', JSON.stringify({ 'https://gw.example|claude-opus-5': '1000' })],
  ])('%s counts as no record, and the next overflow repairs the file', (_name, text) => {
    mkdirSync(join(home, '.config', 'flower'), { recursive: true });
    writeFileSync(calibrationFilePath({ env, home }), text);
    expect(calibratedWindow({ env, home })).toBeUndefined();
    rememberOverflow(210_000, { env, home });
    expect(calibratedWindow({ env, home })).toBe(210_000);
  });

  it('an unwritable location is swallowed', () => {
    writeFileSync(join(home, 'blocker'), '');
    expect(() =>
      rememberOverflow(1000, { env: { XDG_CONFIG_HOME: join(home, 'blocker') }, home }),
    ).not.toThrow();
  });
});
