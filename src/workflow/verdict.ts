/**
 * The judge's ruling on one round of work: achieved, not yet, or cannot verify here.
 *
 * Invariants:
 * - Only a clear "achieved" passes. Anything the parser cannot place (no conclusion, a vague one,
 *   an empty reply) is `parsed: false` and the goal guard treats it as not yet: a judge that
 *   mumbles costs one more round, never a false pass.
 * - "cannot verify here" is neither a pass nor a not-yet: it goes to a human.
 * - Negative readings are checked before positive ones ("not achieved" contains "achieved"),
 *   and "cannot verify" before both.
 * - `feedback()` tells the worker what is missing, never how to fix it.
 */
import { bulletItems, readSections, type SectionAliases, stripCode } from '../runtime/markdown-sections.js';

export type VerdictState = 'achieved' | 'not yet' | 'cannot verify here';

type VerdictSection = 'conclusion' | 'reason' | 'failed';

const ALIASES: SectionAliases<VerdictSection> = {
  conclusion: ['Conclusion', 'Verdict', 'Ruling', 'Outcome', '结论', '判定'],
  reason: ['Reason', 'Reasons', 'Reasoning', 'Rationale', 'Why', 'Evidence', '理由', '依据'],
  failed: ['Not passed', 'Failed checks', 'Failing checks', 'Unmet checks', 'Failed', 'Gaps', '未通过'],
};

/** Readings tried in this order; the first family with a match decides. */
const READINGS: readonly (readonly [VerdictState, RegExp])[] = [
  [
    'cannot verify here',
    /\b(?:cannot|can ?not|can't|unable to)\s+(?:be\s+)?verif(?:y|ied)\b|\bnot verifiable\b|\bunverifiable\b|\b(?:cannot|can't) be (?:achieved|reached|met)\b|\bunreachable\b|\bimpossible\b|无法验证|没法验证|验证不了|无法判定|无法达成|不可达成|做不到/,
  ],
  [
    'not yet',
    /\bnot[ _-]yet\b|\bnot\b[^.\n]{0,24}?\b(?:achieved|met|done|reached|passed|complete)\b|\bunmet\b|\bincomplete\b|未达成|没达成|尚未达成/,
  ],
  ['achieved', /\bachieved\b|\bmet\b|\bpassed\b|已达成|达成/],
];

/** A conclusion that is nothing but one of these words is read directly. */
const BARE_ANSWERS: ReadonlyMap<string, VerdictState> = new Map([
  ['1', 'achieved'],
  ['true', 'achieved'],
  ['yes', 'achieved'],
  ['achieved', 'achieved'],
  ['0', 'not yet'],
  ['false', 'not yet'],
  ['no', 'not yet'],
]);

/** The reason recorded when the judge gave no clear conclusion. */
export const UNCLEAR_VERDICT_REASON =
  'The judge gave no clear conclusion, so this round counts as not yet achieved.';

const MAX_FALLBACK_REASON = 2000;

export class Verdict {
  /** undefined when no conclusion could be read (counts as not yet). */
  readonly state: VerdictState | undefined;
  readonly reason: string;
  readonly failed: readonly string[];

  constructor(
    fields: { state?: VerdictState | undefined; reason?: string; failed?: readonly string[] } = {},
  ) {
    this.state = fields.state;
    this.reason = (fields.reason ?? '').trim();
    this.failed = fields.failed ?? [];
  }

  static parse(text: string): Verdict {
    const sections = readSections(text, ALIASES);
    const whole = stripCode(text.replace(/\r\n?/g, '\n')).trim();
    const conclusion = sections.conclusion ?? whole;
    const reason = sections.reason ?? (sections.conclusion ? '' : whole.slice(0, MAX_FALLBACK_REASON));
    return new Verdict({
      state: readState(conclusion),
      reason,
      failed: bulletItems(sections.failed ?? ''),
    });
  }

  /** A conclusion was read at all. */
  get parsed(): boolean {
    return this.state !== undefined;
  }

  get achieved(): boolean {
    return this.state === 'achieved';
  }

  get cannotVerify(): boolean {
    return this.state === 'cannot verify here';
  }

  withReason(reason: string): Verdict {
    return new Verdict({ state: this.state, reason, failed: this.failed });
  }

  /** What the worker is told when sent back: the gaps, nothing else. */
  feedback(): string {
    const parts = [
      'The last round did not reach the goal. The judge said:',
      this.reason || '(no reason given)',
    ];
    if (this.failed.length) {
      parts.push(`Checks that did not pass:\n${this.failed.map((item) => `- ${item}`).join('\n')}`);
    }
    parts.push('Carry on: close only these gaps. Do not start over and do not widen the scope.');
    return parts.join('\n\n');
  }
}

function readState(conclusion: string): VerdictState | undefined {
  const lowered = conclusion.toLowerCase();
  const bare = lowered.replace(/[*_`.!\s]+/g, ' ').trim();
  const direct = BARE_ANSWERS.get(bare);
  if (direct) return direct;
  return READINGS.find(([, pattern]) => pattern.test(lowered))?.[0];
}
