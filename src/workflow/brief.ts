/**
 * The brief: the requirement, pinned down by the clarify step into exactly four sections.
 *
 * - Goal: what is being built (blocks building a different thing).
 * - Acceptance: how anyone decides "done", one decidable item per line.
 * - Boundaries: what is explicitly not done; it constrains every worker.
 * - Unknowns & assumptions: the fuse of a long run; what nobody could answer and what was assumed.
 *
 * Invariants:
 * - A brief is complete only when all four sections have content; an incomplete brief never
 *   unblocks the work.
 * - The file written to disk is for humans (title, a note on how to change it, placeholders for
 *   empty sections); `promptBlock()` is for models (non-empty sections only, no metadata).
 * - A placeholder copied back by hand still counts as empty when the file is loaded.
 * - Remarks appended while running (`## Added during run (HH:MM:SS)`) are not section names, so they
 *   stay part of the section above them (in practice the last one) and survive a reload.
 */

import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { shown } from '../output/sink.js';
import { readSections, type SectionAliases } from '../runtime/markdown-sections.js';

export type BriefSection = 'goal' | 'acceptance' | 'boundaries' | 'unknowns';

/** The canonical heading of each section, in document order. */
export const BRIEF_HEADINGS: Readonly<Record<BriefSection, string>> = {
  goal: 'Goal',
  acceptance: 'Acceptance',
  boundaries: 'Boundaries',
  unknowns: 'Unknowns & assumptions',
};

const ORDER: readonly BriefSection[] = ['goal', 'acceptance', 'boundaries', 'unknowns'];

const ALIASES: SectionAliases<BriefSection> = {
  goal: ['Goal', 'Goals', 'Objective', '目标'],
  acceptance: [
    'Acceptance',
    'Acceptance criteria',
    'Acceptance conditions',
    'Acceptance tests',
    '验收标准',
    '验收条件',
    '验收',
  ],
  boundaries: [
    'Boundaries',
    'Boundary',
    'Scope',
    'Out of scope',
    'Non-goals',
    'Not doing',
    '边界',
    '范围边界',
    '不做什么',
  ],
  unknowns: [
    'Unknowns & assumptions',
    'Unknowns and assumptions',
    'Unknowns',
    'Assumptions',
    'Open questions',
    '未知与假设',
    '未知项与假设',
    '未知项',
    '假设',
    '未知',
  ],
};

/** What an empty section reads like on disk. */
export const BRIEF_PLACEHOLDER = '(not filled in)';

export type BriefFields = Readonly<Record<BriefSection, string>>;

export class Brief {
  readonly goal: string;
  readonly acceptance: string;
  readonly boundaries: string;
  readonly unknowns: string;

  constructor(fields: Partial<BriefFields> = {}) {
    this.goal = (fields.goal ?? '').trim();
    this.acceptance = (fields.acceptance ?? '').trim();
    this.boundaries = (fields.boundaries ?? '').trim();
    this.unknowns = (fields.unknowns ?? '').trim();
  }

  /**
   * Reads a brief out of free model output (runtime/markdown-sections.ts says what counts as a
   * heading).
   */
  static parse(text: string): Brief {
    return new Brief(readSections(text, ALIASES));
  }

  /** Loads a brief file; undefined when it does not exist or cannot be read. */
  static load(path: string): Brief | undefined {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      return undefined;
    }
    const parsed = Brief.parse(text);
    const fields: Partial<Record<BriefSection, string>> = {};
    for (const section of ORDER) {
      fields[section] = parsed[section] === BRIEF_PLACEHOLDER ? '' : parsed[section];
    }
    return new Brief(fields);
  }

  /** Headings of the sections that are still empty, in document order. */
  missing(): string[] {
    return ORDER.filter((section) => !this[section]).map((section) => BRIEF_HEADINGS[section]);
  }

  get complete(): boolean {
    return this.missing().length === 0;
  }

  /** The human-facing file: a title, how to change it, then all four sections. */
  toMarkdown(): string {
    const sections = ORDER.map(
      (section) => `## ${BRIEF_HEADINGS[section]}\n\n${this[section] || BRIEF_PLACEHOLDER}`,
    );
    return [
      '# Requirements brief',
      '> Frozen by the clarify step. To change the requirement, edit this file;',
      '> delete it to be asked again.',
      ...sections,
    ]
      .join('\n\n')
      .concat('\n');
  }

  /** The model-facing text: non-empty sections only, no metadata. */
  promptBlock(): string {
    return ORDER.filter((section) => this[section])
      .map((section) => `## ${BRIEF_HEADINGS[section]}\n${this[section]}`)
      .join('\n\n');
  }

  /** Writes the human-facing file (creating its folder) and returns the absolute path. */
  write(path: string): string {
    const absolute = resolve(path);
    mkdirSync(dirname(absolute), { recursive: true });
    // A file people read and may commit: through the output sink (the model's text can carry a key
    // it saw, or escape sequences). Frozen checks keep their real commands in the run directory.
    writeFileSync(absolute, shown(this.toMarkdown()));
    return absolute;
  }
}
