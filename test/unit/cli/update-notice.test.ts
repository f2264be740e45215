import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  fetchLatestVersion,
  isNewerVersion,
  isPublishedPackage,
  latestVersionUrl,
  startUpdateNotice,
  UPDATE_INTERVAL_MS,
  type UpdateNoticeOptions,
  updateNotice,
} from '../../../src/cli/update-notice.js';

let root: string;
let installedRoot: string;
let registry: Server | undefined;
let registryHits: string[];

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'flower-update-'));
  installedRoot = join(root, 'installed');
  mkdirSync(installedRoot, { recursive: true });
  writePackage({ name: 'flower-agent', version: '0.1.0', flower: { npmPublished: true } });
  registryHits = [];
});

afterEach(async () => {
  await new Promise<void>((resolve) => (registry ? registry.close(() => resolve()) : resolve()));
  registry = undefined;
  rmSync(root, { recursive: true, force: true });
});

/** The installed package's package.json. */
function writePackage(manifest: object): void {
  writeFileSync(join(installedRoot, 'package.json'), JSON.stringify(manifest));
}

/** A local stand-in for the npm registry answering `/flower-agent/latest`. */
async function startRegistry(answer: (path: string) => { status: number; body: string }): Promise<string> {
  registry = createServer((request, response) => {
    registryHits.push(request.url ?? '');
    const { status, body } = answer(request.url ?? '');
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(body);
  });
  await new Promise<void>((resolve) => registry!.listen(0, '127.0.0.1', resolve));
  const address = registry.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return `http://127.0.0.1:${address.port}/`;
}

function statePath(): string {
  return join(root, 'xdg', 'flower', '.update');
}

function options(
  registryUrl: string,
  lines: string[],
  extra: Partial<UpdateNoticeOptions> = {},
): UpdateNoticeOptions {
  return {
    env: { npm_config_registry: registryUrl, XDG_CONFIG_HOME: join(root, 'xdg') },
    interactive: true,
    now: 1_000 * UPDATE_INTERVAL_MS,
    currentVersion: '0.1.0',
    packageRoot: installedRoot,
    home: root,
    write: (line) => lines.push(line),
    ...extra,
  };
}

describe('version comparison', () => {
  it.each([
    ['0.2.0', '0.1.0', true],
    ['0.1.1', '0.1.0', true],
    ['1.0.0', '0.9.9', true],
    ['0.10.0', '0.9.0', true],
    ['0.1.0', '0.1.0', false],
    ['0.0.9', '0.1.0', false],
    ['0.1.0', '0.1.0-beta.1', true],
    ['0.2.0-beta.1', '0.1.0', true],
    ['0.1.0-beta.2', '0.1.0', false],
    ['garbage', '0.1.0', false],
  ])('%s newer than %s: %s', (candidate, current, newer) => {
    expect(isNewerVersion(candidate, current)).toBe(newer);
  });

  it('the notice names the version and the command', () => {
    expect(updateNotice('0.2.0')).toBe('flower-agent 0.2.0 is available: npm i -g flower-agent');
  });

  it('uses the registry npm is configured with', () => {
    expect(latestVersionUrl({})).toBe('https://registry.npmjs.org/flower-agent/latest');
    expect(latestVersionUrl({ npm_config_registry: 'https://mirror.example/npm/' })).toBe(
      'https://mirror.example/npm/flower-agent/latest',
    );
  });
});

describe('startUpdateNotice', () => {
  it('first start: checks the registry and stores the result; the next start shows the notice once', async () => {
    const url = await startRegistry(() => ({ status: 200, body: JSON.stringify({ version: '0.3.0' }) }));
    const lines: string[] = [];
    await startUpdateNotice(options(url, lines));
    expect(registryHits).toEqual(['/flower-agent/latest']);
    expect(lines).toEqual([]);
    expect(JSON.parse(readFileSync(statePath(), 'utf8'))).toMatchObject({ latest: '0.3.0' });

    const now = 1_000 * UPDATE_INTERVAL_MS + 60_000;
    await startUpdateNotice(options(url, lines, { now }));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('flower-agent 0.3.0 is available: npm i -g flower-agent');
    // Checked less than a day ago: no second lookup.
    expect(registryHits).toHaveLength(1);

    // At most once a day.
    await startUpdateNotice(options(url, lines, { now: now + 60_000 }));
    expect(lines).toHaveLength(1);
    await startUpdateNotice(options(url, lines, { now: now + UPDATE_INTERVAL_MS }));
    expect(lines).toHaveLength(2);
  });

  it('says nothing when the installed version is current', async () => {
    const url = await startRegistry(() => ({ status: 200, body: JSON.stringify({ version: '0.1.0' }) }));
    const lines: string[] = [];
    await startUpdateNotice(options(url, lines));
    await startUpdateNotice(options(url, lines, { now: 1_001 * UPDATE_INTERVAL_MS }));
    expect(lines).toEqual([]);
  });

  it.each([
    ['FLOWER_NO_UPDATE is set', { env: { FLOWER_NO_UPDATE: '1' } }],
    ['not on a terminal', { interactive: false }],
  ])('does nothing at all when %s', async (_name, extra) => {
    const url = await startRegistry(() => ({ status: 200, body: JSON.stringify({ version: '9.0.0' }) }));
    const lines: string[] = [];
    const base = options(url, lines);
    await startUpdateNotice({
      ...base,
      ...extra,
      env: { ...base.env, ...(extra as UpdateNoticeOptions).env },
    });
    expect(registryHits).toEqual([]);
    expect(lines).toEqual([]);
  });

  it('does nothing when running from a git checkout', async () => {
    const url = await startRegistry(() => ({ status: 200, body: JSON.stringify({ version: '9.0.0' }) }));
    mkdirSync(join(installedRoot, '.git'));
    const lines: string[] = [];
    await startUpdateNotice(options(url, lines));
    expect(registryHits).toEqual([]);
  });

  it.each([
    ['package.json does not say it is published', { name: 'flower-agent', version: '0.1.0' }],
    ['it says so as a string', { name: 'flower-agent', flower: { npmPublished: 'true' } }],
    ['another package says it', { name: 'someone-else', flower: { npmPublished: true } }],
  ])('looks nothing up and shows nothing, a stored answer included, when %s', async (_name, manifest) => {
    writePackage(manifest);
    expect(isPublishedPackage(installedRoot)).toBe(false);
    const url = await startRegistry(() => ({ status: 200, body: JSON.stringify({ version: '9.0.0' }) }));
    mkdirSync(join(root, 'xdg', 'flower'), { recursive: true });
    writeFileSync(statePath(), JSON.stringify({ checkedAt: 0, latest: '9.0.0' }));
    const lines: string[] = [];
    await startUpdateNotice(options(url, lines));
    expect(registryHits).toEqual([]);
    expect(lines).toEqual([]);
  });

  it('this checkout does not claim the npm name, and an unreadable package.json is not a claim', () => {
    expect(isPublishedPackage(join(import.meta.dirname, '..', '..', '..'))).toBe(false);
    expect(isPublishedPackage(join(root, 'nowhere'))).toBe(false);
  });

  it('offline or a bad answer: silent, nothing recorded, retried on the next start', async () => {
    const url = await startRegistry(() => ({ status: 500, body: 'oops' }));
    const lines: string[] = [];
    await expect(startUpdateNotice(options(url, lines))).resolves.toBeUndefined();
    expect(lines).toEqual([]);
    await startUpdateNotice(options(url, lines));
    expect(registryHits).toHaveLength(2);

    const refused = 'http://127.0.0.1:1/';
    await expect(startUpdateNotice(options(refused, lines))).resolves.toBeUndefined();
    expect(lines).toEqual([]);
  });

  it('a corrupt state file is treated as empty', async () => {
    const url = await startRegistry(() => ({ status: 200, body: JSON.stringify({ version: '0.2.0' }) }));
    mkdirSync(join(root, 'xdg', 'flower'), { recursive: true });
    writeFileSync(statePath(), '{not json');
    await startUpdateNotice(options(url, []));
    expect(JSON.parse(readFileSync(statePath(), 'utf8'))).toMatchObject({ latest: '0.2.0' });
  });

  it('fetchLatestVersion gives up after its timeout', async () => {
    registry = createServer(() => {
      // never answers
    });
    await new Promise<void>((resolve) => registry!.listen(0, '127.0.0.1', resolve));
    const address = registry.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const started = Date.now();
    expect(
      await fetchLatestVersion(`http://127.0.0.1:${address.port}/flower-agent/latest`, 200),
    ).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(2_000);
    registry.closeAllConnections();
  });
});
