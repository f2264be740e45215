/**
 * The goal: what the judge will hold each round of work against, derived from the brief by the
 * set-goal step and frozen to `notes/goal.md`.
 *
 * Invariants:
 * - Complete means a non-empty statement AND at least one check; an incomplete goal does not pass
 *   the set-goal step.
 * - Checks are one per line; list markers are not part of a check.
 * - A check the judge already knows it cannot verify in this environment carries
 *   `[cannot verify here: <reason>]`. Such checks are listed by `unverifiable` so the human is warned
 *   when the goal is set (cheap) rather than after a whole round of work (expensive).
 * - `amend` appends to the statement and never replaces it: the original intent stays visible.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
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
  /\[\s*(?:cannot\s+(?:be\s+)?verif(?:y|ied)(?:\s+here)?|(?:此环境)?无法验证)\s*[:：]?/i;

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

  /** Checks marked `[cannot verify here: …]`: they will fail at judging time unless changed. */
  get unverifiable(): string[] {
    return this.checks.filter((check) => UNVERIFIABLE_MARK.test(check));
  }

  /** Returns a goal whose statement carries `extra` as a marked amendment. */
  amend(extra: string): Goal {
    return new Goal({ statement: `${this.statement}\n\n(amended) ${extra.trim()}`, checks: this.checks });
  }

  toMarkdown(): string {
    const checks = this.checks.length ? this.checks.map((check) => `- ${check}`).join('\n') : EMPTY_CHECKLIST;
    return [
      '> Frozen by the set-goal step; the judge checks every round of work against this file.',
      '> Edit it to change what counts as done.',
      `# Statement\n\n${this.statement}`,
      `# Checklist\n\n${checks}`,
    ]
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
    writeFileSync(absolute, this.toMarkdown());
    return absolute;
  }
}
