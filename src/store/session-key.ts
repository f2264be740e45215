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
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';
import type { SessionKey } from '@anthropic-ai/claude-agent-sdk';

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
