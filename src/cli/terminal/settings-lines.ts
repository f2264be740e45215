/**
 * The `-v` preamble shared by `go`, `run` and `once`: the effective credential settings, one per
 * line, secrets masked (never printed in full).
 */

import { describe } from '../../config/credentials.js';
import { pc } from './colors.js';

/** Lines for `-v`: the effective credential settings, secrets masked. */
export function settingsLines(env: NodeJS.ProcessEnv = process.env): string[] {
  return describe(env).map((setting) => pc.dim(`${setting.key} = ${setting.display}`));
}
