/**
 * The `-v` preamble shared by `go`, `run` and `once`: the effective credential settings, one per
 * line, secrets masked (never printed in full), `.env` contents sanitised like model text.
 */

import { describe } from '../../config/credentials.js';
import { pc } from './colors.js';
import { shownSetting } from './shown-text.js';

/** Lines for `-v`: the effective credential settings, secrets masked, values sanitised and cut. */
export function settingsLines(env: NodeJS.ProcessEnv = process.env): string[] {
  return describe(env).map((setting) => {
    const value = env[setting.key];
    return pc.dim(`${setting.key} = ${value ? shownSetting(setting.key, value) : setting.display}`);
  });
}
