/**
 * Tool names and the groups the roles and guards are built from.
 *
 * `HANDS_ON` are the tools that change the world (files, processes). Every guard that keeps a role's
 * hands off something is about these four; the read-only tools are never walled.
 */

/** What a coordinator needs to decide and dispatch. */
export const COORDINATOR_TOOLS = ['Agent', 'TodoWrite', 'Read'] as const;
/** Read-only web tools: a coordinator pre-approves the ones its workers use (approval is session-wide). */
export const WEB_TOOLS = ['WebFetch', 'WebSearch'] as const;
/** A worker's default kit. */
export const WORKER_TOOLS = [
  'Read',
  'Write',
  'Edit',
  'Bash',
  'Glob',
  'Grep',
  'WebFetch',
  'WebSearch',
] as const;
/** Read-only tools for the roles that look but never touch. */
export const READ_TOOLS = ['Read', 'Glob', 'Grep'] as const;

/** Tools that change files or run programs. */
export const HANDS_ON = ['Bash', 'Write', 'Edit', 'NotebookEdit'] as const;
/** Tools that only write files. */
export const WRITE_ONLY = ['Write', 'Edit', 'NotebookEdit'] as const;
/** Tools whose results can be arbitrarily long (candidates for spilling to disk). */
export const BULKY = ['Bash', 'Read', 'Grep', 'Glob', 'WebFetch', 'WebSearch'] as const;

/** The human channel's tools as the model sees them (`mcp__<server>__<tool>`). */
export const HUMAN_SERVER = 'human';
export const ASK_TOOL = `mcp__${HUMAN_SERVER}__ask`;
export const INBOX_TOOL = `mcp__${HUMAN_SERVER}__inbox`;

/**
 * A hook matcher for exactly these tool names. Claude Code matches a plain `A|B|C` matcher name by
 * name (it only falls back to a regular expression for other characters); the guards re-check the
 * tool name in the callback anyway, so a looser match could never widen what they deny.
 */
export function toolMatcher(tools: readonly string[]): string {
  return tools.join('|');
}
