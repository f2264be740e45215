/**
 * The part of a transcript the report's views walk (`threads.ts` counts it, `transcript-markdown.ts`
 * prints it): the user and assistant turns inside a step's time window, with the harness's
 * synthetic "API Error" turns told apart, since neither view treats them as the model's words.
 *
 * Pure; the one definition of "a turn of the step" for both views, so the log a person reads and
 * the figures beside it never disagree about which entries belong to the step.
 */
import { inWindow, isSyntheticTurn, type TimeWindow } from '../runtime/ledger.js';
import { blocksOf, type Entry, messageOf } from '../store/transcript.js';

export interface Turn {
  entry: Entry;
  /** The harness's stand-in for a failed request (model `<synthetic>`): no model said it. */
  synthetic: boolean;
}

/** The user and assistant entries of `entries` inside `window`, in order. */
export function* turnsIn(entries: readonly Entry[], window: TimeWindow): Generator<Turn> {
  for (const entry of entries) {
    if (entry.type !== 'user' && entry.type !== 'assistant') continue;
    if (!inWindow(entry, window)) continue;
    yield { entry, synthetic: isSyntheticTurn(entry) };
  }
}

/** The texts an entry says: its string content, else its text blocks, in order. */
export function textsOf(entry: Entry): string[] {
  const content = messageOf(entry)?.content;
  if (typeof content === 'string') return [content];
  const texts: string[] = [];
  for (const block of blocksOf(entry)) {
    const fields = block as { type?: unknown; text?: unknown };
    if (fields.type === 'text' && typeof fields.text === 'string') texts.push(fields.text);
  }
  return texts;
}
