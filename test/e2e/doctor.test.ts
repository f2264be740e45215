/**
 * `flower doctor` as a real process (the built CLI), in a temporary world: its own HOME, cwd and
 * config dir, so nothing from the machine running the tests leaks in.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type MockModel, mock, type RecordedRequest, startMockModel } from '../../src/testing/index.js';
import { closedPort } from '../support/closed-port.js';

const bin = join(import.meta.dirname, '..', '..', 'dist', 'cli', 'bin.js');

let root: string;
let home: string;
let project: string;
let listener: Server | undefined;
let model: MockModel | undefined;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'flower-doctor-'));
  home = join(root, 'home');
  project = join(root, 'project');
  mkdirSync(home, { recursive: true });
  mkdirSync(project, { recursive: true });
});

afterEach(async () => {
  await model?.close();
  model = undefined;
  await new Promise<void>((resolve) => (listener ? listener.close(() => resolve()) : resolve()));
  listener = undefined;
  rmSync(root, { recursive: true, force: true });
});

/**
 * An HTTP server on 127.0.0.1 standing in for a reachable endpoint: it answers every request with
 * the API's 401. A port that only accepts and hangs up is a wrong endpoint now (issue 21), and
 * doctor fails for it.
 */
async function reachableUrl(): Promise<string> {
  listener = createHttpServer((_request, response) => {
    response.writeHead(401, { 'content-type': 'application/json' });
    response.end('{"type":"error","error":{"type":"authentication_error","message":"x"}}');
  });
  await new Promise<void>((resolve) => listener!.listen(0, '127.0.0.1', resolve));
  const address = listener.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return `http://127.0.0.1:${address.port}`;
}

async function closedPortUrl(): Promise<string> {
  return `http://127.0.0.1:${await closedPort()}`;
}

function userEnv(text: string): void {
  mkdirSync(join(home, '.config', 'flower'), { recursive: true });
  writeFileSync(join(home, '.config', 'flower', '.env'), text);
}

function projectEnv(text: string): void {
  writeFileSync(join(project, '.env'), text);
}

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `flower doctor` with only the variables given (plus PATH, HOME and the update switch). */
function doctor(env: Record<string, string> = {}, ...args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, 'doctor', ...args], {
      cwd: project,
      env: { PATH: process.env.PATH ?? '', HOME: home, FLOWER_NO_UPDATE: '1', ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

function warningLines(output: string): string[] {
  return output.split('\n').filter((line) => line.startsWith('  ! '));
}

describe('flower doctor', () => {
  it('shows each known key with its masked value and source, and exits 0 with usable credentials', async () => {
    const url = await reachableUrl();
    userEnv('ANTHROPIC_API_KEY=sk-ant-api03-secretsecret\nANTHROPIC_MODEL=claude-haiku-test\n');
    projectEnv(`ANTHROPIC_BASE_URL=${url}\n`);
    const run = await doctor();
    expect(run.status).toBe(0);
    const userFile = join(home, '.config', 'flower', '.env');
    expect(run.stdout).toMatch(
      new RegExp(`ANTHROPIC_API_KEY +sk-a\\*\\*\\*\\(25 chars\\) +from ${userFile}:1`),
    );
    expect(run.stdout).not.toContain('secretsecret');
    expect(run.stdout).toMatch(new RegExp(`ANTHROPIC_BASE_URL +${url} +from ${join(project, '.env')}:1`));
    expect(run.stdout).toMatch(/ANTHROPIC_MODEL +claude-haiku-test/);
    expect(run.stdout).toMatch(/ANTHROPIC_AUTH_TOKEN +\(not set\)/);
    expect(run.stdout).toMatch(/context window +200000 +guessed from the model name/);
    expect(run.stdout).toContain('Warnings: none');
    expect(run.stdout).toMatch(/Endpoint: 127\.0\.0\.1:\d+ reachable/);
    expect(run.stdout).toContain(`Credentials: usable (ANTHROPIC_API_KEY from ${userFile}:1)`);
    expect(run.stdout).toContain('Probe: not run');
  });

  it('names the process environment as the source of an exported value, and the default base URL', async () => {
    const run = await doctor({ ANTHROPIC_AUTH_TOKEN: 'exported-token-value' });
    expect(run.stdout).toMatch(/ANTHROPIC_AUTH_TOKEN +expo\*\*\*\(20 chars\) +from process environment/);
    expect(run.stdout).toMatch(/ANTHROPIC_BASE_URL +https:\/\/api\.anthropic\.com \(default\)/);
  });

  it('warns when a credential exported in the shell hides the one flower setup saved', async () => {
    const userFile = join(home, '.config', 'flower', '.env');
    userEnv('ANTHROPIC_API_KEY=sk-ant-saved-by-setup-0000\n');
    const run = await doctor({ ANTHROPIC_API_KEY: 'sk-ant-old-shell-key-1111' });
    expect(warningLines(run.stdout)).toContain(
      `  ! ANTHROPIC_API_KEY exported in your shell (sk-a***(25 chars)) is used instead of the ` +
        `ANTHROPIC_API_KEY that flower setup saved in ${userFile} (sk-a***(26 chars)); run ` +
        '`unset ANTHROPIC_API_KEY` to use the saved one',
    );
    // The other credential kind hides it just the same (the API key wins over a saved token).
    userEnv('ANTHROPIC_AUTH_TOKEN=gateway-token-saved\n');
    const other = await doctor({ ANTHROPIC_API_KEY: 'sk-ant-old-shell-key-1111' });
    expect(other.stdout).toContain('is used instead of the ANTHROPIC_AUTH_TOKEN that flower setup saved');
    // The same value in both places hides nothing.
    userEnv('ANTHROPIC_API_KEY=sk-ant-same-key-2222\n');
    const same = await doctor({ ANTHROPIC_API_KEY: 'sk-ant-same-key-2222' });
    expect(same.stdout).not.toContain('flower setup saved');
  });

  it('warns about every pitfall, with file and line', async () => {
    projectEnv(
      [
        'export ANTHROPIC_API_KEY=sk-ant-123456789',
        'ANTHROPIC_MODEL=claude-opus-5 # the big one',
        'CLAUDE_CODE_SUBAGENT_MODEL=$ANTHROPIC_MODEL',
        'CLAUDE_CODE_EFFORT_LEVEL="high',
        'extra"',
        "ANTHROPIC_DEFAULT_HAIKU_MODEL=haiku'",
        'ANTHROPIC_AUTH_TOKEN=',
      ].join('\n'),
    );
    userEnv('ANTHROPIC_AUTH_TOKEN=user-token-1234\n');
    const projectFile = join(project, '.env');
    const run = await doctor({ ANTHROPIC_BASE_URL: await reachableUrl() });
    const warnings = warningLines(run.stdout);
    expect(run.stdout).toContain('Warnings: 6');
    expect(warnings[0]).toContain(
      `${projectFile}:1: sets a variable literally named "export ANTHROPIC_API_KEY"`,
    );
    expect(warnings[1]).toContain(
      `${projectFile}:2: the value of ANTHROPIC_MODEL includes the trailing comment`,
    );
    expect(warnings[2]).toContain(
      `${projectFile}:3: the value of CLAUDE_CODE_SUBAGENT_MODEL is taken literally`,
    );
    expect(warnings[3]).toContain(
      `${projectFile}:4: the quoted value of CLAUDE_CODE_EFFORT_LEVEL continues on lines 5-5`,
    );
    expect(warnings[4]).toContain(
      `${projectFile}:6: the quotes around the value of ANTHROPIC_DEFAULT_HAIKU_MODEL do not pair up`,
    );
    expect(warnings[5]).toContain(
      `ANTHROPIC_AUTH_TOKEN is empty in ${projectFile}:7, which hides its value in`,
    );
    // The empty token wins, so there are no credentials: exit 1, and the message says why.
    expect(run.status).toBe(1);
    expect(run.stdout).toMatch(/ANTHROPIC_AUTH_TOKEN +\(empty\)/);
    expect(run.stdout).toContain('Credentials: missing');
    expect(run.stderr).toContain('flower: no usable credentials');
  });

  it('reports a broken Claude Code settings.json and still uses settings.local.json', async () => {
    mkdirSync(join(home, '.claude'), { recursive: true });
    writeFileSync(join(home, '.claude', 'settings.json'), '{"env": {');
    writeFileSync(
      join(home, '.claude', 'settings.local.json'),
      JSON.stringify({ env: { ANTHROPIC_AUTH_TOKEN: 'borrowed-token' } }),
    );
    const run = await doctor({ ANTHROPIC_BASE_URL: await reachableUrl() });
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('not valid JSON, ignored');
    expect(warningLines(run.stdout).join('\n')).toContain(
      `${join(home, '.claude', 'settings.json')}: not valid JSON, ignored`,
    );
    expect(run.stdout).toMatch(
      new RegExp(
        `ANTHROPIC_AUTH_TOKEN +borr\\*\\*\\*\\(14 chars\\) +from ${join(home, '.claude', 'settings.local.json')}`,
      ),
    );
  });

  it('without credentials: lists the lookup chain including the Claude Code fallback, and exits 1', async () => {
    const run = await doctor({
      XDG_CONFIG_HOME: join(root, 'xdg'),
      ANTHROPIC_BASE_URL: await reachableUrl(),
    });
    expect(run.status).toBe(1);
    expect(run.stdout).toContain('Easiest: run `flower setup` once');
    expect(run.stdout).toContain(join(root, 'xdg', 'flower', '.env'));
    expect(run.stdout).toContain(`the "env" block of ${join(home, '.claude', 'settings.json')}`);
  });

  it('fails (exit 1) for an unreachable endpoint, and says so on its last line', async () => {
    const url = await closedPortUrl();
    const run = await doctor({ ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: url });
    expect(run.stdout).toMatch(/Endpoint: 127\.0\.0\.1:\d+ unreachable: .*ECONNREFUSED/);
    expect(run.stdout).toContain('Credentials: usable');
    expect(run.status).toBe(1);
    expect(run.stderr.trim()).toBe('flower: the endpoint does not answer (see above)');
  });

  it('fails (exit 1) for an endpoint that accepts and hangs up, and for a setting that stops runs', async () => {
    listener = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => listener!.listen(0, '127.0.0.1', resolve));
    const address = listener.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const run = await doctor({
      ANTHROPIC_API_KEY: 'test-key',
      ANTHROPIC_BASE_URL: `http://127.0.0.1:${address.port}`,
      FLOWER_NETWORK: 'bogus!',
    });
    expect(run.stdout).toContain('Credentials: usable');
    expect(run.status).toBe(1);
    expect(run.stderr.trim()).toBe(
      'flower: the endpoint does not speak the API at that URL; the sandbox settings stop unattended runs (see above)',
    );
  });

  it('warns about a FLOWER_WINDOW that is ignored and says what to write, without failing', async () => {
    const userFile = join(home, '.config', 'flower', '.env');
    userEnv('ANTHROPIC_API_KEY=sk-ant-api03-secretsecret\nFLOWER_WINDOW=200k\n');
    const run = await doctor({ ANTHROPIC_BASE_URL: await reachableUrl() });
    expect(warningLines(run.stdout)).toEqual([
      `  ! ${userFile}:2: FLOWER_WINDOW=200k is not a whole number of tokens and is ignored; ` +
        'write the number itself, here 200000 (digits only, _ allowed)',
    ]);
    expect(run.stdout).toMatch(/context window +1000000 +guessed from the model name/);
    expect(run.status).toBe(0);
  });

  it('warns about a key name in lower case: it is another variable, so the credential is missing', async () => {
    projectEnv('anthropic_api_key=sk-ant-api03-secretsecret\n');
    const run = await doctor({ ANTHROPIC_BASE_URL: await reachableUrl() });
    expect(warningLines(run.stdout)).toEqual([
      `  ! ${join(project, '.env')}:1: sets "anthropic_api_key", which is not ANTHROPIC_API_KEY ` +
        '(names are case-sensitive); write the name in capitals',
    ]);
    expect(run.stdout).toContain('Credentials: missing');
    expect(run.status).toBe(1);
  });

  it('does not call a literal $VARIABLE a usable credential', async () => {
    projectEnv('ANTHROPIC_AUTH_TOKEN=$MY_TOKEN\n');
    const run = await doctor({ ANTHROPIC_BASE_URL: await reachableUrl(), MY_TOKEN: 'the-real-token' });
    expect(run.stdout).not.toContain('Credentials: usable');
    expect(run.stdout).toContain(
      `Credentials: not usable (ANTHROPIC_AUTH_TOKEN from ${join(project, '.env')}:1)`,
    );
    expect(run.stdout).toContain(
      'ANTHROPIC_AUTH_TOKEN is a variable reference, not a key: .env files do not expand variables',
    );
    expect(warningLines(run.stdout).join('\n')).toContain(
      'the value of ANTHROPIC_AUTH_TOKEN is taken literally',
    );
    expect(run.status).toBe(1);
    expect(run.stderr.trim()).toBe('flower: no usable credentials (see above)');
  });

  describe('--probe', () => {
    it('passes against a working endpoint (exit 0) with one small request', async () => {
      model = await startMockModel({ side: [mock.text('hi')] });
      const run = await doctor({ ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: model.url }, '--probe');
      expect(run.stdout).toContain('Probe: ok');
      expect(run.status).toBe(0);
      expect(model.requests).toHaveLength(1);
      expect(model.requests[0]?.body?.max_tokens).toBe(16);
    });

    it('fails on rejected credentials (exit 1) and says to run flower setup', async () => {
      model = await startMockModel({ side: [mock.error(401)] });
      const run = await doctor({ ANTHROPIC_API_KEY: 'bad-key', ANTHROPIC_BASE_URL: model.url }, '--probe');
      expect(run.stdout).toContain('Probe: auth: credentials rejected; run `flower setup`');
      expect(run.stdout).toContain('HTTP 401');
      expect(run.status).toBe(1);
      expect(run.stderr).toContain('the credential probe did not pass');
    });

    /** A gateway that serves only `served`: any other model gets the API's 404, naming it. */
    function gatewayServing(served: string) {
      return startMockModel({
        side: Array.from({ length: 4 }, () => (request: RecordedRequest) => {
          const asked = String(request.body?.model);
          return asked === served
            ? mock.text('hi')
            : mock.error(404, { errorType: 'not_found_error', message: `model: ${asked}` });
        }),
      });
    }

    it("asks with the run's model, not a cheaper mapping, so a gateway serving only that one passes", async () => {
      model = await gatewayServing('gw-main');
      const run = await doctor(
        {
          ANTHROPIC_API_KEY: 'k',
          ANTHROPIC_BASE_URL: model.url,
          ANTHROPIC_MODEL: 'gw-main[1m]',
          ANTHROPIC_DEFAULT_HAIKU_MODEL: 'claude-3-5-haiku-20241022',
        },
        '--probe',
      );
      expect(run.stdout).toContain('Probe: ok');
      expect(run.status).toBe(0);
      expect(model.requests.map((request) => request.body?.model)).toEqual(['gw-main']);
    });

    it('fails when the run’s model is not served, even if the haiku mapping is', async () => {
      model = await gatewayServing('gw-haiku');
      const run = await doctor(
        {
          ANTHROPIC_API_KEY: 'k',
          ANTHROPIC_BASE_URL: model.url,
          ANTHROPIC_MODEL: 'claude-nope',
          ANTHROPIC_DEFAULT_HAIKU_MODEL: 'gw-haiku',
        },
        '--probe',
      );
      expect(run.stdout).toContain('Probe: config');
      expect(run.stdout).toContain('(model claude-nope)');
      expect(run.status).toBe(1);
    });

    it('with no model configured, a default the endpoint lacks does not fail the check', async () => {
      model = await gatewayServing('gw-only');
      const run = await doctor({ ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: model.url }, '--probe');
      expect(run.stdout).toContain('Probe: ok');
      expect(run.stdout).toContain('the key was accepted');
      expect(run.status).toBe(0);
    });

    it('is skipped when FLOWER_NO_PROBE is set', async () => {
      model = await startMockModel({ side: [mock.error(401)] });
      const run = await doctor(
        { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: model.url, FLOWER_NO_PROBE: '1' },
        '--probe',
      );
      expect(run.stdout).toContain('Probe: skipped: FLOWER_NO_PROBE is set');
      expect(run.status).toBe(0);
      expect(model.requests).toHaveLength(0);
    });
  });
});
