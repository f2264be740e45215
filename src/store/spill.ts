/**
 * Spill files: where the full text of a large tool result is kept once the trim layer replaces it
 * with a pointer, so the agent can Read it back when it needs it.
 *
 * Invariants:
 * - The file name is the first 16 hex digits of the text's SHA-256 plus `.txt`: the same text
 *   always lands in the same file, and an existing file is never rewritten.
 * - A file appears complete or not at all: it is written under a fresh temporary name (created
 *   exclusively, never through a link someone left there) and renamed into place, and a failed
 *   write removes its temporary file. A pointer never leads to half a result.
 * - Failure is not an error: when the directory cannot be created or written (read-only, full),
 *   the writer answers undefined, tells `onFailure`, and the caller leaves that result untrimmed.
 *   Nothing is lost either way.
 * - The directory lives under the workspace (not the workbench) because the agent's Read must
 *   reach it. Paths handed to the model are absolute: the Read tool accepts nothing else, and a
 *   subagent in a worktree has another working directory than the workspace.
 * - The directory is listed once per writer (one `readdir` instead of a `stat` per result: a
 *   ten-hour transcript points at thousands of files) and the writer remembers what it wrote.
 * - Given what the transcript's spill record (spill-record.ts) says about a result, a writer
 *   uses the recorded name without hashing the text — but only when the length matches and the
 *   file is there; anything else is hashed as usual.
 */
import * as crypto from 'node:crypto';
import { mkdirSync, readdirSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Store `text` (the result of tool call `toolUseId`, when known) and return its absolute path,
 * or undefined if it cannot be stored.
 */
export type SpillWriter = (text: string, toolUseId?: string) => string | undefined;

/** Which file holds a spilled result, and how long the result was. */
export interface SpilledName {
  name: string;
  chars: number;
}

export interface SpillWriterOptions {
  /** Told about every failed write (the rewriting store warns about the first one). */
  onFailure?: (error: unknown, directory: string) => void;
  /** Names recorded for this transcript's results, by tool_use id. */
  recorded?: ReadonlyMap<string, SpilledName>;
  /** Told the name of each result stored or found that the record did not have right. */
  onNamed?: (toolUseId: string, spilled: SpilledName) => void;
}

const isFile = (file: string): boolean => statSync(file, { throwIfNoEntry: false })?.isFile() ?? false;

/**
 * SHA-256 in hex. The one-shot `crypto.hash` (Node 20.12+) skips a Hash object per call (measured
 * about a fifth less over the 3,000 results of a ten-hour transcript); older Node 20 gets the object.
 */
export const hash = (text: string): string =>
  typeof crypto.hash === 'function'
    ? crypto.hash('sha256', text, 'hex')
    : crypto.createHash('sha256').update(text, 'utf8').digest('hex');

export function spillFileName(text: string): string {
  return `${hash(text).slice(0, 16)}.txt`;
}

export function spillDirectory(workspace: string, spillDirname: string): string {
  return path.resolve(workspace, spillDirname);
}

export function createSpillWriter(
  workspace: string,
  spillDirname: string,
  options: SpillWriterOptions = {},
): SpillWriter {
  const directory = spillDirectory(workspace, spillDirname);
  let present: Set<string> | undefined;
  let directoryMade = false;
  const names = (): Set<string> => {
    if (present === undefined) {
      try {
        present = new Set(
          readdirSync(directory, { withFileTypes: true })
            .filter((item) => item.isFile())
            .map((item) => item.name),
        );
      } catch {
        present = new Set(); // not there yet: the first write creates it
      }
    }
    return present;
  };
  return (text, toolUseId) => {
    const known = names();
    const recorded = toolUseId === undefined ? undefined : options.recorded?.get(toolUseId);
    if (recorded !== undefined && recorded.chars === text.length && known.has(recorded.name))
      return `${directory}${path.sep}${recorded.name}`;
    const name = spillFileName(text);
    const target = `${directory}${path.sep}${name}`;
    const named = (): string => {
      if (toolUseId !== undefined) options.onNamed?.(toolUseId, { name, chars: text.length });
      return target;
    };
    if (known.has(name)) return named();
    let temporary: string | undefined;
    try {
      if (!directoryMade) {
        mkdirSync(directory, { recursive: true });
        directoryMade = true;
      }
      // Another process may have written it since the directory was listed.
      if (!isFile(target)) {
        temporary = path.join(
          directory,
          `${name}.${process.pid}.${crypto.randomBytes(6).toString('hex')}.tmp`,
        );
        writeFileSync(temporary, text, { encoding: 'utf8', flag: 'wx' });
        renameSync(temporary, target);
      }
    } catch (error) {
      directoryMade = false;
      if (temporary !== undefined) {
        try {
          unlinkSync(temporary);
        } catch {
          // Nothing was created, or it cannot be removed either; the pointer is withheld regardless.
        }
      }
      options.onFailure?.(error, directory);
      return undefined;
    }
    known.add(name);
    return named();
  };
}
