/**
 * Keys: how a transcript is named in the store.
 *
 * - `store_key` = `<projectKey>/<sessionId>` for a main transcript, plus `/<subpath>` for a
 *   subagent's (`subagents/agent-<id>`). A main key therefore has exactly one `/`… unless the
 *   project key itself were to contain one, which the SDK's sanitising rules out.
 * - The project key is the SDK's own: the workspace's real absolute path with every character
 *   outside `[a-zA-Z0-9]` replaced by `-` (`/tmp/x/ws` → `-tmp-x-ws`), cut at 200 characters with
 *   a hash suffix for longer paths. flower needs it to ask "does this session exist" before the
 *   SDK is involved, so it must match what the SDK passes to `append`.
 * - Both backends take only keys a real session has, checked by `checkSessionKey` (pure, one rule
 *   for both): a project key or session id never holds `/`, `\`, `..` or a NUL (project keys are
 *   `[a-zA-Z0-9-]`, session ids uuids), so `<projectKey>/<sessionId>` cannot name another key's
 *   transcript; a subpath is relative segments (`subagents/agent-<hex>`), never an empty, `.` or
 *   `..` segment (no leading or trailing `/`), so it cannot name a file outside the session's
 *   folder when the SDK writes it out. `subpath: ''` is the main transcript on both backends (as
 *   in the SDK's own InMemorySessionStore). Valid keys are stored exactly as before.
 * - `listSubkeys` hands out only subpaths that pass the same rule (a row an older version stored
 *   under another one is left out, never returned for the SDK to write to disk).
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';
import type { SessionKey } from '@anthropic-ai/claude-agent-sdk';

/** What `checkSessionKey` looks at: a listing names only the project, or the project and session. */
export interface SessionKeyParts {
  projectKey: string;
  sessionId?: string;
  subpath?: string;
}

const FORBIDDEN_NAME = /[/\\\0]|\.\./;
const FORBIDDEN_SEGMENT = /[\\\0]/;

/** Why no real project key or session id is `name`, or undefined when one can be. */
function nameProblem(what: string, name: unknown, shape: string): string | undefined {
  if (typeof name !== 'string' || name === '') return `an empty or missing ${what} (${shape})`;
  if (name === '.' || FORBIDDEN_NAME.test(name))
    return `${what} ${JSON.stringify(name)}: ${shape}, so it never holds "/", "\\", ".." or a NUL`;
  return undefined;
}

/** Whether a real key can have this subpath: relative segments, none empty, `.` or `..`. */
export function isStorableSubpath(subpath: string): boolean {
  if (typeof subpath !== 'string' || subpath === '') return false;
  return subpath
    .split('/')
    .every(
      (segment) => segment !== '' && segment !== '.' && segment !== '..' && !FORBIDDEN_SEGMENT.test(segment),
    );
}

/**
 * The key as both backends store it (`subpath: ''` read as the main transcript), or, as a string,
 * why no real session has it: the caller refuses with it. Pure; the input is not modified.
 */
export function checkSessionKey<K extends SessionKeyParts>(key: K): K | string {
  const project = nameProblem(
    'project key',
    key.projectKey,
    'a project key is the workspace path with every character outside [a-zA-Z0-9] replaced by "-"',
  );
  if (project !== undefined) return project;
  if ('sessionId' in key) {
    const session = nameProblem('session id', key.sessionId, 'a session id is a uuid');
    if (session !== undefined) return session;
  }
  if (key.subpath === undefined) return key;
  if (key.subpath === '') {
    const { subpath: _main, ...main } = key;
    return main as K;
  }
  if (!isStorableSubpath(key.subpath))
    return `subpath ${JSON.stringify(key.subpath)}: a subpath is relative segments such as "subagents/agent-<id>", never an empty, "." or ".." segment (so no leading or trailing "/"), a "\\" or a NUL`;
  return key;
}

export function storeKeyOf(key: SessionKey): string {
  const main = `${key.projectKey}/${key.sessionId}`;
  return key.subpath === undefined ? main : `${main}/${key.subpath}`;
}

const PROJECT_KEY_LIMIT = 200;

/** 32-bit string hash in base 36 (`h = h * 31 + code`), the suffix the SDK uses for long paths. */
function pathHash(text: string): string {
  let hash = 0;
  for (let index = 0; index < text.length; index += 1)
    hash = (Math.imul(hash, 31) + text.charCodeAt(index)) | 0;
  return Math.abs(hash).toString(36);
}

/** The project key the SDK derives for a session started in `workspace`. */
export function projectKeyFor(workspace: string): string {
  const absolute = path.resolve(workspace);
  let real = absolute;
  try {
    real = realpathSync(absolute);
  } catch {
    // A workspace that does not exist yet keys by its absolute path, as the SDK does.
  }
  const normalised = real.normalize('NFC');
  const sanitised = normalised.replace(/[^a-zA-Z0-9]/g, '-');
  if (sanitised.length <= PROJECT_KEY_LIMIT) return sanitised;
  return `${sanitised.slice(0, PROJECT_KEY_LIMIT)}-${pathHash(normalised)}`;
}
