/**
 * The bequest: what a finished (or stopped) task leaves for the next tool that opens the workspace —
 * Claude Code reads `CLAUDE.md`, Codex and others read `AGENTS.md` — so that agent does not start
 * blind, and does not "fix" a generated file instead of its source.
 *
 * Invariants:
 * - Five sections: what this is; acceptance met / not met; which files are generated and by what;
 *   dead ends; where the workbench is and how to read it. "What this is" and "the workbench" are
 *   required: without them the next agent cannot even start reading.
 * - The acceptance section begins with flower's own facts (how the task ended, the host checks'
 *   results, the assumptions), never with the model's claim about them.
 * - A degraded bequest (the closing turn failed, said too little, or the budget was spent) is
 *   assembled mechanically from what flower knows and carries `DEGRADED_MARK`, so nobody mistakes
 *   it for a considered one.
 * - The body holds nothing that changes between two identical endings (no times, no costs, no
 *   durations), so writing it again gives identical bytes.
 * - The body is untrusted text (the model's reply, a judge's reason, check commands) and is not made
 *   safe here: the one writer of the block (`writeManagedFile`) passes all of it through the output
 *   sink, so no caller can forget to.
 */
import { cleanBody, readSections, type SectionAliases } from '../runtime/markdown-sections.js';

export type BequestSection = 'what' | 'acceptance' | 'generated' | 'deadends' | 'workbench';

/** The headings as written, in order. */
export const BEQUEST_HEADINGS: Readonly<Record<BequestSection, string>> = {
  what: 'What this is',
  acceptance: 'Acceptance: met and not met',
  generated: 'Generated files and what makes them',
  deadends: 'Dead ends',
  workbench: 'The workbench and how to read it',
};

const ALIASES: SectionAliases<BequestSection> = {
  what: [BEQUEST_HEADINGS.what, 'What this is about', 'What it is', 'Task', '这是什么', '任务'],
  acceptance: [
    BEQUEST_HEADINGS.acceptance,
    'Acceptance',
    'Met and not met',
    'What is missing',
    '验收:达成与未达成',
    '达成与未达成',
    '验收',
    '还差什么',
  ],
  generated: [
    BEQUEST_HEADINGS.generated,
    'Generated files',
    'Generated',
    'Outputs and sources',
    '哪些文件是生成的、由什么生成',
    '哪些文件是生成的',
    '生成物与来源',
    '哪些是生成的',
    '生成物',
  ],
  deadends: [BEQUEST_HEADINGS.deadends, 'Dead end', 'What did not work', '走不通的路', '试过不行的'],
  workbench: [
    BEQUEST_HEADINGS.workbench,
    'The workbench',
    'Workbench',
    'How to read it',
    '工作台在哪、怎么读',
    '工作台在哪',
    '工作台',
    '怎么读',
  ],
};

const ORDER = Object.keys(BEQUEST_HEADINGS) as BequestSection[];
const REQUIRED: readonly BequestSection[] = ['what', 'workbench'];

/** Marks a bequest flower had to assemble itself. */
export const DEGRADED_MARK = '[degraded: the closing handoff could not be written]';

export const BEQUEST_TITLE = '## Left by flower for the next tool';
const BEQUEST_PREFACE = [
  '> You were not part of the run that produced this workspace and remember nothing of it: read this first.',
  '> Files listed as generated are outputs: change their sources, not them.',
].join('\n');

export class Bequest {
  readonly sections: Readonly<Partial<Record<BequestSection, string>>>;
  readonly degraded: boolean;

  constructor(sections: Partial<Record<BequestSection, string>>, degraded = false) {
    const kept: Partial<Record<BequestSection, string>> = {};
    for (const key of ORDER) {
      const body = cleanBody(sections[key] ?? '');
      if (body) kept[key] = body;
    }
    this.sections = kept;
    this.degraded = degraded;
  }

  static parse(text: string): Bequest {
    return new Bequest(readSections(text, ALIASES));
  }

  /** Required sections that are empty. */
  missing(): BequestSection[] {
    return REQUIRED.filter((key) => !this.sections[key]);
  }

  get complete(): boolean {
    return this.missing().length === 0;
  }

  /** The block's body; `facts` (flower's own account of the ending) opens the acceptance section. */
  body(facts: string): string {
    const parts = [BEQUEST_TITLE, BEQUEST_PREFACE];
    for (const key of ORDER) {
      const text = [key === 'acceptance' ? facts.trim() : '', this.sections[key] ?? '']
        .filter(Boolean)
        .join('\n\n');
      if (text) parts.push(`### ${BEQUEST_HEADINGS[key]}\n\n${text}`);
    }
    return parts.join('\n\n');
  }
}

/** What flower says about the workbench when nobody wrote it up. */
export function defaultWorkbenchText(workbench: string): string {
  return [
    `flower's workbench is ${workbench}: notes/ holds the brief (brief.md), the goal and its checklist (goal.md),`,
    'the questions and answers (qa-log.md) and any handoff documents; artifacts/ holds long outputs, including',
    'the host checks of every round (artifacts/checks/<round>/); scripts/ holds helper scripts, each with a',
    '`# desc:` first line. runs/manifest.json has every step with its cost and verdict; runs/sessions.db has every',
    'transcript (`flower status`, `flower report` and `flower log` read them).',
  ].join(' ');
}

/** A bequest flower assembles itself, marked degraded, saying why. */
export function mechanicalBequest(fields: { what?: string; workbench: string; why: string }): Bequest {
  return new Bequest(
    {
      what: `${DEGRADED_MARK} The closing turn could not write the handoff (${fields.why}). ${
        fields.what?.trim() || 'The requirement is in the workbench: notes/brief.md.'
      }`,
      workbench: defaultWorkbenchText(fields.workbench),
    },
    true,
  );
}

/** The prompt of the closing read-only turn. */
export function bequestPrompt(situation: string): string {
  return [
    'The task in this workspace has ended. Write the handoff that the next tool (Claude Code, Codex or any other',
    'agent, with no memory of this run) reads first. Look at the workspace and the workbench before you write,',
    'and keep it to a few dozen lines in all.',
    '',
    situation.trim(),
    '',
    'Reply with exactly these five sections:',
    `## ${BEQUEST_HEADINGS.what} — what was built or changed, in a few sentences.`,
    `## ${BEQUEST_HEADINGS.acceptance} — each item of the goal: met or not, and what shows it.`,
    `## ${BEQUEST_HEADINGS.generated} — files that are outputs (of a build, a script, a generator) and the command or source that makes each, so the next agent edits sources, not outputs.`,
    `## ${BEQUEST_HEADINGS.deadends} — approaches that were tried and did not work, and why.`,
    `## ${BEQUEST_HEADINGS.workbench} — where flower's notes, artifacts and scripts are, and what to read first.`,
    'Do not create or edit CLAUDE.md or AGENTS.md yourself: flower writes them from your reply.',
  ].join('\n');
}
