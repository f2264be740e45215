/**
 * What the persistent bottom prompt looks like: the hint for the current situation followed by the
 * half-typed input, fitted into one terminal row.
 *
 * Invariants: the row never exceeds `width - 1` columns (writing into the last column makes some
 * terminals wrap); the cursor is always visible, so a long input scrolls sideways around it.
 */
import { displayWidth, truncate } from './terminal-text.js';

/** The three situations the prompt can be in, each with its own hint. */
export type PromptMode = 'idle' | 'question' | 'interrupt';

export const PROMPT_HINTS: Readonly<Record<PromptMode, string>> = {
  idle: '(type = add to the brief · ?question = ask aside) > ',
  question: 'your answer (number = option, Enter = skip) > ',
  interrupt: 'interrupted: what should it hear? (Enter = nothing; Ctrl-C = quit) > ',
};

export interface PromptRow {
  /** The row to print after erasing the line. */
  readonly row: string;
  /** Columns to move the cursor left after printing, so it sits where the editor's cursor is. */
  readonly cursorLeft: number;
}

function fittingSuffix(text: string, columns: number): string {
  const characters = Array.from(text);
  let kept = '';
  for (let index = characters.length - 1; index >= 0; index -= 1) {
    const candidate = characters[index] + kept;
    if (displayWidth(candidate) > columns) break;
    kept = candidate;
  }
  return kept;
}

function fittingPrefix(text: string, columns: number): string {
  let kept = '';
  for (const character of text) {
    if (displayWidth(kept + character) > columns) break;
    kept += character;
  }
  return kept;
}

export function promptRow(hint: string, beforeCursor: string, afterCursor: string, width: number): PromptRow {
  const usable = Math.max(2, width - 1);
  // The hint yields first: never more than half the row when there is input to show.
  const hasInput = beforeCursor !== '' || afterCursor !== '';
  const shownHint = truncate(hint, hasInput ? Math.floor(usable / 2) : usable);
  const room = usable - displayWidth(shownHint);
  // The editor only ever holds printable characters, so the input needs no sanitising here.
  const before = fittingSuffix(beforeCursor, room);
  const after = fittingPrefix(afterCursor, room - displayWidth(before));
  return { row: shownHint + before + after, cursorLeft: displayWidth(after) };
}
