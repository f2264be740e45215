/**
 * Where a line the user typed during a run goes. Pure: the interaction layer asks, then acts.
 *
 * Order of precedence (first match wins):
 * 1. An armed interrupt (Ctrl-C was pressed) takes the line as what to tell the agent, even empty.
 * 2. A line starting with `?` or the full-width `？` is a side question for the oracle; the run is
 *    not disturbed. (The reference's full-width check was broken and sent `？…` to the inbox.)
 * 3. With a question pending: empty skips it, anything else answers it (an option number, full-width
 *    digits included, is turned into the option's text by the channel). A number that is no option
 *    of a question with options (`7` for three options, `0`) is not sent: the question is asked again,
 *    because the model would otherwise receive "7" as if it were the answer.
 * 4. With no question pending: empty does nothing; anything else is mail for the inbox and the brief.
 *    A bare number is mail too: there is no option for it to pick.
 */

export type RoutedLine =
  | { readonly kind: 'interrupt'; readonly message: string }
  | { readonly kind: 'aside'; readonly question: string }
  | { readonly kind: 'answer'; readonly askId: string; readonly text: string }
  | { readonly kind: 'skip'; readonly askId: string }
  | { readonly kind: 'reask'; readonly askId: string; readonly options: number; readonly typed: string }
  | { readonly kind: 'mail'; readonly text: string }
  | { readonly kind: 'nothing' };

export interface RoutingState {
  /** Ctrl-C was pressed and the next line is what the agent should hear. */
  readonly interruptArmed: boolean;
  /** The question the next line answers (the oldest one still waiting), if any. */
  readonly pendingAskId: string | undefined;
  /** How many options that question offers (0 or absent: it takes free text only). */
  readonly pendingOptions?: number;
}

const ASIDE_MARKERS = ['?', '？'];

/** The side question in `line`, or undefined when the line is not one. An empty `?` asks nothing. */
export function asideQuestion(line: string): string | undefined {
  const trimmed = line.trim();
  const marker = ASIDE_MARKERS.find((candidate) => trimmed.startsWith(candidate));
  return marker === undefined ? undefined : trimmed.slice(marker.length).trim();
}

export function routeLine(line: string, state: RoutingState): RoutedLine {
  const text = line.trim();
  if (state.interruptArmed) return { kind: 'interrupt', message: text };
  const aside = asideQuestion(text);
  if (aside !== undefined) return aside === '' ? { kind: 'nothing' } : { kind: 'aside', question: aside };
  if (state.pendingAskId !== undefined) {
    if (text === '') return { kind: 'skip', askId: state.pendingAskId };
    // A CJK input method types full-width digits (２); they pick an option just like 2.
    const folded = text.normalize('NFKC');
    if (!/^\d+$/.test(folded)) return { kind: 'answer', askId: state.pendingAskId, text };
    const options = state.pendingOptions ?? 0;
    const chosen = Number(folded);
    if (options > 0 && (chosen < 1 || chosen > options))
      return { kind: 'reask', askId: state.pendingAskId, options, typed: folded };
    return { kind: 'answer', askId: state.pendingAskId, text: folded };
  }
  return text === '' ? { kind: 'nothing' } : { kind: 'mail', text };
}
