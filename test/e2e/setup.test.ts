/**
 * `flower setup` end to end through a real pseudo-terminal (test/support/pty-session.ts plays the
 * person at the keyboard: wait for a question, type an answer).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type MockModel, startMockModel } from '../../src/testing/server.js';
import { type PtyRun, runInPty } from '../support/pty-session.js';
import { isolatedEnv, PtySession } from './cli-harness.js';

const bin = join(import.meta.dirname, '..', '..', 'dist', 'cli', 'bin.js');

let root: string;
let home: string;
let xdg: string;
let envFile: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'flower-setup-'));
  home = join(root, 'home');
  xdg = join(root, 'xdg');
  envFile = join(xdg, 'flower', '.env');
  mkdirSync(home, { recursive: true });
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

function setupInPty(steps: Array<[string, string]>, extraEnv: Record<string, string> = {}): PtyRun {
  return runInPty({
    argv: [process.execPath, bin, 'setup'],
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: home,
      XDG_CONFIG_HOME: xdg,
      TERM: 'xterm',
      FLOWER_NO_UPDATE: '1',
      ...extraEnv,
    },
    steps,
  });
}

function fileMode(path: string): number {
  return statSync(path).mode & 0o777;
}

describe('flower setup on a terminal', () => {
  it('asks four questions and writes the user .env with mode 0600, never echoing the key', () => {
    const run = setupInPty([
      ['1. Your API key', 'sk-ant-api03-topsecretvalue\r'],
      ['2. Gateway URL', 'http://127.0.0.1:8080/v1/\r'],
      ['3. Model name', 'claude-opus-5[1m]\r'],
      ['4. Context window', '200000\r'],
      ['Check them now', 'n\r'],
    ]);
    expect(run.error).toBeNull();
    expect(run.status).toBe(0);
    expect(run.output).toContain('No credentials configured yet.');
    // The file is named before the first question, in the future tense: nothing is saved yet.
    const announced = run.output.indexOf(`Will be saved to ${envFile}`);
    expect(announced).toBeGreaterThan(-1);
    expect(announced).toBeLessThan(run.output.indexOf('1. Your API key'));
    expect(run.output).toContain(`+ Saved: ${envFile}`);
    expect(run.output).toContain('dropped the trailing /v1');
    expect(run.output).not.toContain('topsecretvalue');
    expect(run.output).toContain('sk-a***(27 chars)');
    const text = readFileSync(envFile, 'utf8');
    expect(text).toMatch(/^# flower credentials/);
    expect(text.split('\n').filter((line) => line !== '' && !line.startsWith('#'))).toEqual([
      'ANTHROPIC_API_KEY=sk-ant-api03-topsecretvalue',
      'ANTHROPIC_BASE_URL=http://127.0.0.1:8080',
      'ANTHROPIC_MODEL=claude-opus-5[1m]',
      'ANTHROPIC_DEFAULT_OPUS_MODEL=claude-opus-5[1m]',
      'ANTHROPIC_DEFAULT_SONNET_MODEL=claude-opus-5[1m]',
      'FLOWER_WINDOW=200000',
    ]);
    expect(fileMode(envFile)).toBe(0o600);
  });

  it('keeps unrelated keys and comments, keeps answers left empty, replaces the credential, re-asks bad input', () => {
    mkdirSync(join(xdg, 'flower'), { recursive: true });
    writeFileSync(
      envFile,
      [
        '# my notes',
        'ANTHROPIC_API_KEY=sk-ant-old-key-000',
        'ANTHROPIC_BASE_URL=https://gw.example',
        'MY_OTHER_TOOL=keep-me',
        '',
      ].join('\n'),
      { mode: 0o644 },
    );
    const run = setupInPty([
      ['1. Your API key', 'gateway-token-abc\r'],
      ['2. Gateway URL', '\r'],
      ['3. Model name', '\r'],
      ['4. Context window', 'lots\r'],
      ['give a positive whole number', '300000\r'],
      ['Check them now', 'n\r'],
    ]);
    expect(run.error).toBeNull();
    expect(run.status).toBe(0);
    expect(run.output).toContain('Enter = keep sk-a***(18 chars)');
    expect(run.output).toContain('Enter = keep https://gw.example');
    expect(readFileSync(envFile, 'utf8')).toBe(
      [
        '# my notes',
        'ANTHROPIC_BASE_URL=https://gw.example',
        'MY_OTHER_TOOL=keep-me',
        'ANTHROPIC_AUTH_TOKEN=gateway-token-abc',
        'FLOWER_WINDOW=300000',
        '',
      ].join('\n'),
    );
    expect(fileMode(envFile)).toBe(0o600);
  });

  it('"-" removes a stored value; a bad URL is refused and asked again', () => {
    mkdirSync(join(xdg, 'flower'), { recursive: true });
    writeFileSync(
      envFile,
      'ANTHROPIC_AUTH_TOKEN=tok-123456789\nANTHROPIC_BASE_URL=https://gw.example\nANTHROPIC_MODEL=m\n',
    );
    const run = setupInPty([
      ['1. Your API key', '\r'],
      ['2. Gateway URL', 'gw.example\r'],
      ['not a URL', '-\r'],
      ['3. Model name', '-\r'],
      ['4. Context window', '\r'],
      ['Check them now', 'n\r'],
    ]);
    expect(run.error).toBeNull();
    expect(run.status).toBe(0);
    expect(run.output).toContain('Reconfiguring.');
    expect(readFileSync(envFile, 'utf8')).toBe('ANTHROPIC_AUTH_TOKEN=tok-123456789\n');
  });

  it('says when a value just written is overridden by an earlier source', () => {
    writeFileSync(join(root, '.env'), 'ANTHROPIC_BASE_URL=https://project.example\n');
    const run = setupInPty(
      [
        ['1. Your API key', 'tok-abcdefghij\r'],
        ['2. Gateway URL', 'https://gw.example\r'],
        ['3. Model name', 'claude-x\r'],
        ['4. Context window', '\r'],
        ['Check them now', 'n\r'],
      ],
      { ANTHROPIC_MODEL: 'exported-model' },
    );
    expect(run.error).toBeNull();
    expect(run.status).toBe(0);
    expect(run.output).toContain(
      `ANTHROPIC_BASE_URL is also set in ${join(root, '.env')}:1, which takes precedence over the file just written`,
    );
    expect(run.output).toContain(
      'ANTHROPIC_MODEL is also set in process environment, which takes precedence',
    );
    expect(run.output).not.toContain('ANTHROPIC_AUTH_TOKEN is also set');
    // "Enter = keep" names what is in force now, wherever it comes from, not only the file's values.
    expect(run.output).toContain(`Enter = keep https://project.example from ${join(root, '.env')}:1`);
    expect(run.output).toContain('Enter = keep exported-model from process environment');
  });

  it('with no token and none stored, saves nothing and exits 1', () => {
    const run = setupInPty([['1. Your API key', '\r']]);
    expect(run.error).toBeNull();
    expect(run.status).toBe(1);
    expect(run.output).toContain('No token given; nothing was saved.');
    expect(existsSync(envFile)).toBe(false);
  });

  it('Ctrl-C in the middle leaves the file untouched and exits 130', () => {
    mkdirSync(join(xdg, 'flower'), { recursive: true });
    writeFileSync(envFile, 'ANTHROPIC_AUTH_TOKEN=unchanged-token\n', { mode: 0o600 });
    const run = setupInPty([
      ['1. Your API key', 'new-token-value\r'],
      ['2. Gateway URL', '\u0003'],
    ]);
    expect(run.error).toBeNull();
    expect(run.status).toBe(130);
    expect(run.output).toContain('setup cancelled; nothing was saved');
    expect(readFileSync(envFile, 'utf8')).toBe('ANTHROPIC_AUTH_TOKEN=unchanged-token\n');
  });

  it('end of input (Ctrl-D) cancels too: exit 1, nothing written', () => {
    const run = setupInPty([
      ['1. Your API key', 'new-token-value\r'],
      ['2. Gateway URL', '\u0004'],
    ]);
    expect(run.error).toBeNull();
    expect(run.status).toBe(1);
    expect(run.output).toContain('flower: setup cancelled; nothing was saved');
    expect(existsSync(envFile)).toBe(false);
  });
});

describe('flower setup offers the credential check after saving', () => {
  let model: MockModel | undefined;
  afterEach(async () => {
    await model?.close();
    model = undefined;
  });

  it('Enter sends one small request and says the credentials, endpoint and model work', async () => {
    model = await startMockModel({ main: [] });
    const env = isolatedEnv({ HOME: home, XDG_CONFIG_HOME: xdg, TERM: 'xterm' });
    delete env.FLOWER_NO_PROBE;
    const pty = PtySession.flower(['setup'], env);
    let at = await pty.answerSetup('sk-ant-api03-probe-me', model.url);
    at = await pty.waitFor(`+ Saved: ${envFile}`, at);
    at = await pty.waitFor(
      'Check them now with one small request to the endpoint? (Enter = yes; n = no)',
      at,
    );
    pty.type('\r');
    await pty.waitFor('+ the credentials, endpoint and model work', at);
    expect(await pty.exited()).toBe(0);
    // The probe used what was just saved: the new key, against the new gateway.
    const probe = model.messageRequests().at(-1);
    expect(probe?.headers?.['x-api-key']).toBe('sk-ant-api03-probe-me');
  });
});

describe('flower setup when the shell exports a credential (issue 21)', () => {
  let model: MockModel | undefined;
  afterEach(async () => {
    await model?.close();
    model = undefined;
  });

  it('never calls the saved key in force, says the exported one wins and how to stop it, and checks the new key', async () => {
    model = await startMockModel({ main: [] });
    mkdirSync(join(xdg, 'flower'), { recursive: true });
    writeFileSync(envFile, 'ANTHROPIC_API_KEY=sk-ant-saved-earlier-0000\n', { mode: 0o600 });
    const env = isolatedEnv({
      HOME: home,
      XDG_CONFIG_HOME: xdg,
      TERM: 'xterm',
      ANTHROPIC_API_KEY: 'sk-ant-old-exported-1111',
    });
    delete env.FLOWER_NO_PROBE;
    const pty = PtySession.flower(['setup'], env);
    let at = await pty.waitFor(
      '! ANTHROPIC_API_KEY is exported in your shell (sk-a***(24 chars)), which wins over this file: ' +
        'a key saved here is used only after you run `unset ANTHROPIC_API_KEY` and remove the export from your shell profile.',
    );
    at = await pty.answerSetup('sk-ant-api03-brand-new-key', model.url, at);
    at = await pty.waitFor(`+ Saved: ${envFile}`, at);
    at = await pty.waitFor(
      '! ANTHROPIC_API_KEY is exported in your shell (sk-a***(24 chars)), which is used instead of the key saved here: ' +
        'to use the saved one, run `unset ANTHROPIC_API_KEY` and remove the export from your shell profile.',
      at,
    );
    at = await pty.waitFor('Check them now', at);
    pty.type('\r');
    await pty.waitFor('+ the credentials, endpoint and model work', at);
    expect(await pty.exited()).toBe(0);
    // The check asked with the key just saved, the one the person wants to know about.
    expect(model.messageRequests().map((request) => request.headers['x-api-key'])).toEqual([
      'sk-ant-api03-brand-new-key',
    ]);
    // The saved key was offered as what Enter keeps in the file, not as what is in force.
    expect(pty.screen).toContain(
      '1. Your API key or gateway token (an Anthropic sk-ant-... key, or the token your gateway issued) ' +
        '(Enter = keep sk-a***(25 chars) in the file (not in force: the exported one wins))',
    );
    expect(pty.screen).not.toContain('ANTHROPIC_API_KEY is also set');
    expect(readFileSync(envFile, 'utf8')).toContain('ANTHROPIC_API_KEY=sk-ant-api03-brand-new-key');
  });
});

describe('flower setup without a terminal', () => {
  it('changes nothing, names the file and the keys, and exits 1', () => {
    const result = spawnSync(process.execPath, [bin, 'setup'], {
      cwd: root,
      input: 'sk-ant-whatever\n',
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', HOME: home, XDG_CONFIG_HOME: xdg, FLOWER_NO_UPDATE: '1' },
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(envFile);
    for (const key of [
      'ANTHROPIC_API_KEY',
      'ANTHROPIC_AUTH_TOKEN',
      'ANTHROPIC_BASE_URL',
      'ANTHROPIC_MODEL',
      'ANTHROPIC_DEFAULT_OPUS_MODEL',
      'ANTHROPIC_DEFAULT_SONNET_MODEL',
      'FLOWER_WINDOW',
    ]) {
      expect(result.stderr).toContain(key);
    }
    expect(existsSync(envFile)).toBe(false);
  });
});
