/**
 * Spill files: where the trim layer puts the full text of a tool result it replaces with a
 * pointer, so the agent can Read it back when it needs it.
 *
 * Invariants:
 * - The file name is the first 16 hex digits of the text's SHA-256 plus `.txt`: the same text
 *   always lands in the same file, and an existing file is never rewritten.
 * - A file appears complete or not at all (written to a temporary name, then renamed), so a
 *   pointer never leads to half a result.
 * - Failure is not an error: when the directory cannot be created or written, the writer answers
 *   undefined and the caller leaves that result untrimmed. Nothing is lost either way.
 * - The directory lives under the workspace (not the workbench) because the agent's Read must
 *   reach it. Paths handed to the model are absolute: the Read tool accepts nothing else, and a
 *   subagent in a worktree has another working directory than the workspace.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** Store `text` and return its absolute path, or undefined if it cannot be stored. */
export type SpillWriter = (text: string) => string | undefined;

export function spillFileName(text: string): string {
  return `${createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16)}.txt`;
}

export function createSpillWriter(workspace: string, spillDirname: string): SpillWriter {
  const directory = path.resolve(workspace, spillDirname);
  // Names already known to exist: repeated loads of one transcript then cost a hash, not a stat.
  const known = new Set<string>();
  return (text) => {
    const name = spillFileName(text);
    const target = path.join(directory, name);
    if (known.has(name)) return target;
    try {
      if (!existsSync(target)) {
        mkdirSync(directory, { recursive: true });
        const temporary = `${target}.${process.pid}.tmp`;
        writeFileSync(temporary, text, 'utf8');
        renameSync(temporary, target);
      }
    } catch {
      return undefined;
    }
    known.add(name);
    return target;
  };
}
