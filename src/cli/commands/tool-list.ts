/**
 * `once -t Read,Glob,Grep`: every name must be a tool Claude Code has, or the run starts with a
 * wall around nothing (the binary silently ignores an unknown name in its allowed list, and
 * `-t Reed` would leave the agent unable to read while the person thinks it can).
 *
 * Accepted: the SDK's list of built-in tool names and their legacy aliases (`Task`), a permission
 * rule on one of them (`Bash(npm test:*)`), and any MCP tool (`mcp__server__tool`), which only the
 * running session can know. Names are case-sensitive, as they are for the binary.
 */
import { BUILTIN_TOOL_NAMES, LEGACY_TOOL_NAME_ALIASES } from '@anthropic-ai/claude-agent-sdk';
import { UsageError } from '../command-line/exit-errors.js';
import { closestName, type KnownName } from '../command-line/mistyped-command.js';

/** Claude Code's tool names as the SDK lists them. */
export const KNOWN_TOOLS: readonly string[] = [
  ...BUILTIN_TOOL_NAMES,
  ...Object.keys(LEGACY_TOOL_NAME_ALIASES),
];

const MCP_TOOL = /^mcp__[^_].*__.+$/;

/** The tool a `-t` entry names: `Bash` for `Bash(npm test:*)`. */
function toolOf(entry: string): string {
  const paren = entry.indexOf('(');
  return (paren < 0 ? entry : entry.slice(0, paren)).trim();
}

/** The one-line refusal for the first unknown name in `tools`, or undefined when all are known. */
export function unknownToolMessage(
  tools: readonly string[],
  known: readonly string[] = KNOWN_TOOLS,
): string | undefined {
  const knownSet = new Set(known);
  const names: KnownName[] = known.map((word) => ({ word, suggestion: word }));
  for (const entry of tools) {
    const tool = toolOf(entry);
    if (knownSet.has(tool) || MCP_TOOL.test(tool)) continue;
    const guess = closestName(tool, names);
    return (
      `-t: unknown tool "${tool}"${guess ? ` — did you mean "${guess.suggestion}"?` : '.'} ` +
      'Tool names are case-sensitive, e.g. -t Read,Glob,Grep,Bash,Write,Edit.'
    );
  }
  return undefined;
}

/** Throws a usage error (exit 2) for the first unknown tool name. */
export function requireKnownTools(tools: readonly string[]): void {
  const message = unknownToolMessage(tools);
  if (message !== undefined) throw new UsageError(message);
}
