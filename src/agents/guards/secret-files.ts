/**
 * Secret-files guard: the read-only roles (coordinator, judge, clarifier, …) cannot open a
 * credential file with Read or search one with Grep.
 *
 * Why: the glance rules keep `cat ~/.config/flower/.env` and `printenv` away from the
 * coordinator's Bash, but its Read tool opened the same file, and the key then sat in the stored
 * transcript and went to the model. These roles never need a credential to do their job.
 *
 * Invariants:
 * - The path is judged by the glance predicate's own credential rules (`store/glance/paths.ts`:
 *   `.env*`, Claude Code's and flower's credential files, `environ`, `/proc`, the usual key stores),
 *   both as written (relative paths against the session's working directory) and after following
 *   symbolic links, so a link planted in the workspace does not lead around it.
 * - Grep is refused when its path is such a file or when its `glob` could match one.
 * - It guards the main thread only: a hands-on worker has Bash and is not walled.
 * - A path that does not exist (yet) is judged as written; nothing here fails open on an error.
 */
import { realpathSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { HookCallbackMatcher, HookInput } from '@anthropic-ai/claude-agent-sdk';
import { globMayMatchSecret, isSecretPath } from '../../store/glance/paths.js';
import { toolMatcher } from '../tools.js';
import { deny, onMainThread, PASS, toolUse } from './hook-io.js';

/** The tools this guard looks at, and the input fields that hold a path. */
const PATH_FIELDS: Readonly<Record<string, readonly string[]>> = { Read: ['file_path'], Grep: ['path'] };

export const SECRET_FILE_DENIAL =
  'That file holds credentials; this role does not read them. Work from what the task needs ' +
  'and say in your reply if a setting seems wrong.';

/** True when `path`, opened from `cwd`, is a credential file (as written or where its links lead). */
export function opensSecretFile(path: string, cwd: string): boolean {
  const absolute = isAbsolute(path) ? path : resolve(cwd, path);
  if (isSecretPath(path) || isSecretPath(absolute)) return true;
  try {
    return isSecretPath(realpathSync(absolute));
  } catch {
    return false;
  }
}

function workingDirectory(input: HookInput): string {
  return input.cwd !== '' ? input.cwd : process.cwd();
}

export function secretFilesGuard(): HookCallbackMatcher {
  return {
    matcher: toolMatcher(Object.keys(PATH_FIELDS)),
    hooks: [
      async (input) => {
        const call = toolUse(input);
        const fields = call && PATH_FIELDS[call.toolName];
        if (!call || !fields || !onMainThread(input)) return PASS;
        const cwd = workingDirectory(input);
        for (const field of fields) {
          const value = call.toolInput[field];
          if (typeof value === 'string' && value !== '' && opensSecretFile(value, cwd))
            return deny(SECRET_FILE_DENIAL);
        }
        const glob = call.toolInput.glob;
        if (call.toolName === 'Grep' && typeof glob === 'string' && globMayMatchSecret(glob))
          return deny(SECRET_FILE_DENIAL);
        return PASS;
      },
    ],
  };
}
