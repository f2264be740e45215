/**
 * Spill guard: a long tool result is written to the workbench's `spill/` directory and the model
 * gets a pointer plus the first 400 characters instead — on the main thread and in subagents.
 *
 * Invariants:
 * - Lengths are counted in code points (what a reader calls characters), compared with `>=`.
 * - File name = first 16 hex digits of sha256(UTF-8 text) + `.txt`; an existing file is never
 *   rewritten, so the same text spilled twice costs one file.
 * - The result keeps its structure: a string is replaced whole; in an object only string fields at
 *   or over the threshold are replaced (recursively); arrays are never touched, because they may
 *   hold image or document blocks. The harness rejects a reshaped output.
 * - Reading a spill file is never spilled again: the pointer tells the model to Read the file, and
 *   re-spilling that read sent the model in circles (measured: five workarounds, then reading
 *   forty lines at a time).
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HookCallbackMatcher } from '@anthropic-ai/claude-agent-sdk';
import { spillFileName } from '../../store/spill.js';
import { BULKY, toolMatcher } from '../tools.js';
import type { Workbench } from '../workbench.js';
import { PASS, replaceOutput, toolUse } from './hook-io.js';

export interface SpillPolicy {
  /** Results at least this many characters long are spilled. */
  threshold: number;
  /** How much of the start stays in context, so the model can often decide without reading more. */
  headChars: number;
  /** Which tools' results are considered. */
  tools: readonly string[];
}

export const DEFAULT_SPILL_POLICY: SpillPolicy = { threshold: 4000, headChars: 400, tools: BULKY };

/** The spill file's name: the same content-addressed name the store's trim layer uses. */
export const spillName: (text: string) => string = spillFileName;

/** The text that stands in for a spilled result. */
export function spillPointer(text: string, path: string, headChars: number): string {
  const characters = Array.from(text);
  const head = characters.slice(0, headChars).join('').replace(/\r?\n/g, ' ');
  return (
    `[tool result archived: ${characters.length} chars. Full text at ${path}; Read it when needed, Grep it to search]\n` +
    `First ${headChars} characters: ${head}`
  );
}

/** Writes spilled text to disk and returns the pointer; the seam the guard and tests share. */
export type Stash = (text: string) => string;

/**
 * A stash into `directory`. The pointer names the file by absolute path: the Read tool takes only
 * absolute paths, and a subagent in a worktree has another working directory than the workspace.
 */
export function stashInto(directory: string, headChars: number): Stash {
  return (text) => {
    const file = join(directory, spillName(text));
    if (!existsSync(file)) {
      mkdirSync(directory, { recursive: true });
      writeFileSync(file, text, 'utf8');
    }
    return spillPointer(text, file, headChars);
  };
}

/**
 * The tool output with every long string replaced by its pointer, or `undefined` when nothing was
 * long enough (or the output is an array or a scalar other than a string).
 */
export function shrinkOutput(output: unknown, threshold: number, stash: Stash): unknown {
  if (typeof output === 'string') return codePointLength(output) >= threshold ? stash(output) : undefined;
  if (!output || typeof output !== 'object' || Array.isArray(output)) return undefined;
  let changed = false;
  const copy: Record<string, unknown> = { ...(output as Record<string, unknown>) };
  for (const [key, value] of Object.entries(copy)) {
    const shrunk = shrinkOutput(value, threshold, stash);
    if (shrunk !== undefined) {
      copy[key] = shrunk;
      changed = true;
    }
  }
  return changed ? copy : undefined;
}

/** True when any string in the tool input names the spill directory (a read of a spill file). */
export function readsSpill(toolInput: Record<string, unknown>, spillPaths: readonly string[]): boolean {
  return Object.values(toolInput).some(
    (value) => typeof value === 'string' && spillPaths.some((path) => value.includes(path)),
  );
}

/** A PostToolUse matcher spilling long results of the bulky tools into `workbench.spill`. */
export function spillGuard(workbench: Workbench, policy: Partial<SpillPolicy> = {}): HookCallbackMatcher {
  const { threshold, headChars, tools } = { ...DEFAULT_SPILL_POLICY, ...policy };
  const stash = stashInto(workbench.spill, headChars);
  // The store's trim layer spills into `<workspace>/.flower/spill/` even when the workbench lives
  // elsewhere (`--isolate`); reading those files back must not be spilled again either.
  const trimSpill = join(workbench.workspace, '.flower', 'spill');
  const spillPaths = [...new Set([workbench.spill, workbench.show(workbench.spill), trimSpill])];
  return {
    matcher: toolMatcher(tools),
    hooks: [
      async (input) => {
        const call = toolUse(input);
        if (!call || input.hook_event_name !== 'PostToolUse' || !tools.includes(call.toolName)) return PASS;
        if (readsSpill(call.toolInput, spillPaths)) return PASS;
        const shrunk = shrinkOutput(input.tool_response, threshold, stash);
        return shrunk === undefined ? PASS : replaceOutput(shrunk);
      },
    ],
  };
}

function codePointLength(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}
