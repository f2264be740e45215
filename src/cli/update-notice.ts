/**
 * "flower-agent X is available: npm i -g flower-agent": a notice, never an automatic reinstall.
 *
 * Invariants:
 * - Off unless this project really publishes the package: the installed package.json must be named
 *   `flower-agent` and say `"flower": { "npmPublished": true }`. Until a release sets that, nothing
 *   is looked up and nothing is shown (a stored answer from an older version included): the npm
 *   name is not this project's yet, and a notice would recommend whatever someone else published
 *   under it. Whoever publishes the first release sets the flag in the same commit.
 * - Shown only on an interactive terminal, never from a git checkout (developers update with git),
 *   never when `FLOWER_NO_UPDATE` is set to anything non-empty; at most once a day.
 * - Never blocks and never throws: the notice comes from what an earlier check stored, and the
 *   registry lookup runs in the background on an unreferenced socket, so it cannot keep the process
 *   alive or delay a command. Offline, a failed lookup is silent and retried on the next start.
 * - The registry is npm's, or the one the user configured for npm (`npm_config_registry`).
 * State lives in `${XDG_CONFIG_HOME:-~/.config}/flower/.update`.
 */

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../config/atomic-file.js';
import { type EnvMap, isSourceCheckout, userConfigDir } from '../config/paths.js';
import { writeErr } from '../output/sink.js';
import { packageRoot, packageVersion } from '../version.js';
import { colorsFor } from './terminal/colors.js';

export const PACKAGE_NAME = 'flower-agent';
/** Both the check and the notice happen at most this often. */
export const UPDATE_INTERVAL_MS = 24 * 60 * 60 * 1000;
/** A registry slower than this is treated as offline; the next start tries again. */
export const REGISTRY_TIMEOUT_MS = 3_000;
const DEFAULT_REGISTRY = 'https://registry.npmjs.org/';

interface UpdateState {
  /** When the registry last answered (epoch ms). */
  checkedAt?: number;
  /** The newest version it reported. */
  latest?: string;
  /** When the notice was last shown (epoch ms). */
  notifiedAt?: number;
}

export interface UpdateNoticeOptions {
  env?: EnvMap;
  /** Whether a person is watching (stdin and stderr are terminals). */
  interactive?: boolean;
  now?: number;
  currentVersion?: string;
  packageRoot?: string;
  home?: string;
  /** Receives the notice line. */
  write?: (line: string) => void;
}

export function updateNotice(latest: string): string {
  return `${PACKAGE_NAME} ${latest} is available: npm i -g ${PACKAGE_NAME}`;
}

/**
 * Whether the package.json in `root` says it is the `flower-agent` this project publishes on npm
 * (`"flower": { "npmPublished": true }`). Anything else, an unreadable file included, is no.
 */
export function isPublishedPackage(root: string): boolean {
  try {
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      name?: unknown;
      flower?: { npmPublished?: unknown };
    };
    return manifest.name === PACKAGE_NAME && manifest.flower?.npmPublished === true;
  } catch {
    return false;
  }
}

/** `<registry>/flower-agent/latest`, honouring the registry npm itself is configured with. */
export function latestVersionUrl(env: EnvMap): string {
  const registry = env.npm_config_registry || env.NPM_CONFIG_REGISTRY || DEFAULT_REGISTRY;
  return `${registry.replace(/\/+$/, '')}/${PACKAGE_NAME}/latest`;
}

function versionParts(version: string): { numbers: number[]; prerelease: boolean } | undefined {
  const match = /^v?(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?(\+.*)?$/.exec(version.trim());
  if (!match) return undefined;
  return {
    numbers: [Number(match[1]), Number(match[2]), Number(match[3])],
    prerelease: match[4] !== undefined,
  };
}

/** True when `candidate` is a later release than `current` (a prerelease precedes its release). */
export function isNewerVersion(candidate: string, current: string): boolean {
  const next = versionParts(candidate);
  const now = versionParts(current);
  if (!next || !now) return false;
  for (let index = 0; index < 3; index++) {
    const difference = next.numbers[index]! - now.numbers[index]!;
    if (difference !== 0) return difference > 0;
  }
  return now.prerelease && !next.prerelease;
}

function readState(path: string): UpdateState {
  try {
    const data: unknown = JSON.parse(readFileSync(path, 'utf8'));
    return typeof data === 'object' && data !== null ? (data as UpdateState) : {};
  } catch {
    return {};
  }
}

function saveState(path: string, state: UpdateState): void {
  try {
    writeFileAtomic(path, `${JSON.stringify(state)}\n`, { mode: 0o600, directoryMode: 0o700 });
  } catch {
    // A read-only config directory only means the check runs again next time.
  }
}

/** The `version` the registry reports as latest, or undefined on any failure. */
export function fetchLatestVersion(
  url: string,
  timeoutMs = REGISTRY_TIMEOUT_MS,
): Promise<string | undefined> {
  // Imported here, not at the top: every command loads this module, and node:https (with TLS)
  // costs every start about 6 ms of CPU for a request made at most once a day (issue 23).
  const client = url.startsWith('http:') ? import('node:http') : import('node:https');
  return client.then(
    ({ get }) => requestLatestVersion(get, url, timeoutMs),
    () => undefined,
  );
}

function requestLatestVersion(
  get: typeof import('node:http').get,
  url: string,
  timeoutMs: number,
): Promise<string | undefined> {
  return new Promise((resolve) => {
    try {
      const request = get(
        url,
        { headers: { accept: 'application/json' }, timeout: timeoutMs },
        (response) => {
          if (response.statusCode !== 200) {
            response.resume();
            resolve(undefined);
            return;
          }
          let body = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            body += chunk;
          });
          response.on('end', () => {
            try {
              const version = (JSON.parse(body) as { version?: unknown }).version;
              resolve(typeof version === 'string' ? version : undefined);
            } catch {
              resolve(undefined);
            }
          });
          response.on('error', () => resolve(undefined));
        },
      );
      // The lookup must never keep a finished command alive.
      request.on('socket', (socket) => socket.unref());
      request.on('timeout', () => request.destroy());
      request.on('error', () => resolve(undefined));
    } catch {
      resolve(undefined);
    }
  });
}

/**
 * Shows a stored notice if one is due, then refreshes the stored latest version in the background
 * if the last check is a day old. The returned promise settles when the background work is done;
 * callers do not wait for it.
 */
export async function startUpdateNotice(options: UpdateNoticeOptions = {}): Promise<void> {
  try {
    const env = options.env ?? process.env;
    const interactive = options.interactive ?? Boolean(process.stdin.isTTY && process.stderr.isTTY);
    const root = options.packageRoot ?? packageRoot;
    if (env.FLOWER_NO_UPDATE || !interactive || isSourceCheckout(root) || !isPublishedPackage(root)) return;
    const now = options.now ?? Date.now();
    const current = options.currentVersion ?? packageVersion;
    const statePath = join(userConfigDir(env, options.home), '.update');
    const state = readState(statePath);

    if (
      typeof state.latest === 'string' &&
      isNewerVersion(state.latest, current) &&
      now - (state.notifiedAt ?? 0) >= UPDATE_INTERVAL_MS
    ) {
      const write = options.write ?? ((line: string) => writeErr(`${line}\n`));
      write(colorsFor(process.stderr, env).yellow(updateNotice(state.latest)));
      saveState(statePath, { ...state, notifiedAt: now });
    }

    if (now - (state.checkedAt ?? 0) < UPDATE_INTERVAL_MS) return;
    const latest = await fetchLatestVersion(latestVersionUrl(env));
    if (latest === undefined) return;
    // Re-read: the notice above (or another flower process) may have written meanwhile.
    saveState(statePath, { ...readState(statePath), checkedAt: now, latest });
  } catch {
    // An update notice is never worth a failed command.
  }
}
