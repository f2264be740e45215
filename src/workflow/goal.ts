/**
 * The goal: what the judge will hold each round of work against, derived from the brief by the
 * set-goal step and frozen to `notes/goal.md`.
 *
 * Invariants:
 * - Complete means a non-empty statement AND at least one check; an incomplete goal does not pass
 *   the set-goal step.
 * - Checks are one per line; list markers are not part of a check.
 * - Every item is one of three kinds (`items`): a *check* (it ends in check: `command`, which
 *   flower runs on the host — see `checks/syntax.ts`), *cannot verify here* (it carries
 *   `[cannot verify here: <reason>]`: it needs a platform, service, device or person this machine
 *   does not have), or *judgement* (the judge looks). A check wins over the mark: what a command
 *   can prove here is verifiable here.
 * - A human who accepts an unverifiable item as it is turns its mark into
 *   `[cannot verify here, accepted: <reason>]`: decided once, written down, never asked again, and
 *   reported as an assumption rather than a result.
 * - `amend` appends to the statement and never replaces it: the original intent stays visible.
 * - The file's header teaches the item syntax, because people edit this file by hand; what a
 *   person adds survives the goal being derived again (`goal-edits.ts`).
 */

import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { CHECK_SYNTAX, CHECK_SYNTAX_WITH_LIMIT, type ItemCheck, readCheck } from '../checks/syntax.js';
import { shown } from '../output/sink.js';
import { bulletItems, readSections, type SectionAliases } from '../runtime/markdown-sections.js';

type GoalSection = 'statement' | 'checks';

const ALIASES: SectionAliases<GoalSection> = {
  statement: ['Statement', 'Goal statement', 'Goal', 'Done when', '目标', '完成标志'],
  checks: [
    'Checklist',
    'Checks',
    'Check items',
    'Verdict checklist',
    'Acceptance checklist',
    '判定清单',
    '判定条件',
    '验收清单',
    '检查项',
    '判定',
  ],
};

/** Marks a check as not verifiable here (English form, plus the original Chinese marker). */
const UNVERIFIABLE_MARK =
  /\[\s*(?:cannot\s+(?:be\s+)?verif(?:y|ied)(?:\s+here)?|(?:此环境)?无法验证)\s*(?:,\s*accepted\s*)?[:：]?\s*/i;
/** The same mark once a human accepted the item as it is. */
const ACCEPTED_MARK = /\[\s*cannot\s+verify\s+here\s*,\s*accepted\s*[:：]?/i;
/** What an accepted item's mark reads like (the reason follows). */
const ACCEPTED_PREFIX = '[cannot verify here, accepted: ';

export type ItemKind = 'check' | 'judgement' | 'cannot verify here';

/** One checklist item, classified. */
export interface ChecklistItem {
  readonly text: string;
  readonly kind: ItemKind;
  /** The item's check annotation (`none` for items without one). */
  readonly check: ItemCheck;
  /** A cannot-verify item a human accepted as it is (an assumption, not a result). */
  readonly accepted: boolean;
}

/** Kind and acceptance of one item. */
export function classifyItem(text: string): ChecklistItem {
  const check = readCheck(text);
  const unverifiable = UNVERIFIABLE_MARK.test(text);
  const kind: ItemKind = check.kind !== 'none' ? 'check' : unverifiable ? 'cannot verify here' : 'judgement';
  return { text, kind, check, accepted: kind === 'cannot verify here' && ACCEPTED_MARK.test(text) };
}

/**
 * What makes two items the same item when comparing versions of a goal: the text with its
 * cannot-verify mark in one form (accepted or not, English or Chinese) and its spacing collapsed.
 * A human accepting an item at triage rewrites its mark; that is no edit of the item.
 */
export function itemKey(text: string): string {
  return text.replace(UNVERIFIABLE_MARK, '[cannot verify here: ').replace(/\s+/g, ' ').trim();
}

/** The header of the goal file: what it is and how its items are written. */
export const GOAL_FILE_HEADER = [
  '> Frozen by the set-goal step; the judge checks every round of work against this file.',
  '> Edit it to change what counts as done. One item per line; an item may end in',
  `> ${CHECK_SYNTAX} (or ${CHECK_SYNTAX_WITH_LIMIT}): flower itself runs that command in the workspace`,
  '> after every round (exit code 0 = passed, 10 minutes unless a limit is given) and a failing check',
  '> means not yet, whatever the judge says. An item flower cannot verify on this machine ends in',
  '> [cannot verify here: <reason>].',
].join('\n');

/** What an empty checklist reads like on disk. */
export const EMPTY_CHECKLIST = '(empty)';

export class Goal {
  readonly statement: string;
  readonly checks: readonly string[];

  constructor(fields: { statement?: string; checks?: readonly string[] } = {}) {
    this.statement = (fields.statement ?? '').trim();
    this.checks = (fields.checks ?? []).map((check) => check.trim()).filter(Boolean);
  }

  static parse(text: string): Goal {
    const sections = readSections(text, ALIASES);
    const checks = bulletItems(sections.checks ?? '').filter((item) => item !== EMPTY_CHECKLIST);
    return new Goal({ statement: sections.statement ?? '', checks });
  }

  /** Loads a goal file; undefined when it does not exist or cannot be read. */
  static load(path: string): Goal | undefined {
    try {
      return Goal.parse(readFileSync(path, 'utf8'));
    } catch {
      return undefined;
    }
  }

  /** Names of what is still missing ("Statement", "Checklist"). */
  missing(): string[] {
    const missing: string[] = [];
    if (!this.statement) missing.push('Statement');
    if (this.checks.length === 0) missing.push('Checklist');
    return missing;
  }

  get complete(): boolean {
    return this.missing().length === 0;
  }

  /** Every checklist item, classified (check / judgement / cannot verify here). */
  items(): ChecklistItem[] {
    return this.checks.map(classifyItem);
  }

  /** Items marked `[cannot verify here: …]`, accepted or not. */
  get unverifiable(): string[] {
    return this.items()
      .filter((item) => item.kind === 'cannot verify here')
      .map((item) => item.text);
  }

  /** Cannot-verify items nobody has decided about yet. */
  get undecided(): string[] {
    return this.items()
      .filter((item) => item.kind === 'cannot verify here' && !item.accepted)
      .map((item) => item.text);
  }

  /** Cannot-verify items a human accepted as they are: assumptions, not results. */
  get assumptions(): string[] {
    return this.items()
      .filter((item) => item.accepted)
      .map((item) => item.text);
  }

  /** A goal whose listed items are marked accepted (the reason after the mark is kept). */
  accept(items: readonly string[]): Goal {
    const chosen = new Set(items);
    return this.withChecks(
      this.checks.map((check) =>
        chosen.has(check) && !ACCEPTED_MARK.test(check)
          ? check.replace(UNVERIFIABLE_MARK, ACCEPTED_PREFIX)
          : check,
      ),
    );
  }

  /** A goal with `items` replaced by `replacements` (in the place of the first of them). */
  replace(items: readonly string[], replacements: readonly string[]): Goal {
    const chosen = new Set(items);
    const checks: string[] = [];
    let placed = false;
    for (const check of this.checks) {
      if (!chosen.has(check)) {
        checks.push(check);
        continue;
      }
      if (!placed) checks.push(...replacements);
      placed = true;
    }
    return this.withChecks(checks);
  }

  private withChecks(checks: readonly string[]): Goal {
    return new Goal({ statement: this.statement, checks });
  }

  /** Returns a goal whose statement carries `extra` as a marked amendment. */
  amend(extra: string): Goal {
    return new Goal({ statement: `${this.statement}\n\n(amended) ${extra.trim()}`, checks: this.checks });
  }

  toMarkdown(): string {
    const checks = this.checks.length ? this.checks.map((check) => `- ${check}`).join('\n') : EMPTY_CHECKLIST;
    return [GOAL_FILE_HEADER, `# Statement\n\n${this.statement}`, `# Checklist\n\n${checks}`]
      .join('\n\n')
      .concat('\n');
  }

  promptBlock(): string {
    if (!this.statement && this.checks.length === 0) return '';
    const checklist = this.checks.length
      ? `\n\n## Checklist\n${this.checks.map((check) => `- ${check}`).join('\n')}`
      : '';
    return `## Statement\n${this.statement}${checklist}`;
  }

  write(path: string): string {
    const absolute = resolve(path);
    mkdirSync(dirname(absolute), { recursive: true });
    // A file people read and may commit: through the output sink (the model's text can carry a key
    // it saw, or escape sequences). Frozen checks keep their real commands in the run directory.
    writeFileSync(absolute, shown(this.toMarkdown()));
    return absolute;
  }
}
