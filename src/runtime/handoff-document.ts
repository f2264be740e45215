/**
 * The handoff document: what a session near the end of its context window leaves for the fresh
 * session that takes over (instead of letting the harness compact the conversation).
 *
 * Five sections, in this order: Doing, Decided, Dead ends, Next, Scene.
 * - Only Doing and Next are required. Requiring dead ends would push the model to invent some,
 *   and an "incomplete" document is replaced by the far poorer degraded one.
 * - Dead ends get the most emphasis in the writing prompt: they are the most expensive thing to
 *   rediscover (one re-explored wrong path cost an hour in a real run) and the first to be left out.
 * - The document is for humans too: it is frozen as `notes/handoff-<step>.md`, can be read and
 *   edited, and the previous generation is archived (moved, never deleted) before a new one is
 *   written.
 * - The frozen file is what a model wrote, so it goes through the output sink's `shown` (secrets
 *   masked, controls and bidi characters visible and inert) and is private (0600): a model quotes
 *   connection strings and command output, and a mask knows only the secrets it can recognise. The
 *   successor's prompt is built from the document in memory, not from the file; a successor that
 *   reads the file sees a masked secret and inert controls, which costs it nothing it needs.
 * - When the session cannot write it (reply incomplete, turn failed, or the context could not fit
 *   one more turn), a degraded document is assembled mechanically from the task itself (its first
 *   1200 characters); a partial handoff beats hitting the window.
 * - Runaway brake: after `HandoffPolicy.maxGenerations` handoffs, or `MAX_DEGRADED_IN_A_ROW`
 *   degraded ones in a row, the step stops with a message that says why and what to change.
 */
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { HandoffPolicy } from '../config/policies.js';
import { writeShownFile } from '../output/sink.js';
import { readSections } from './markdown-sections.js';
import { compactTimestamp } from './run-id.js';

export type HandoffSection = 'doing' | 'decided' | 'deadEnds' | 'next' | 'scene';

const ORDER: readonly HandoffSection[] = ['doing', 'decided', 'deadEnds', 'next', 'scene'];
const REQUIRED: readonly HandoffSection[] = ['doing', 'next'];

/** The heading each section is written under. */
export const HANDOFF_HEADINGS: Readonly<Record<HandoffSection, string>> = {
  doing: 'Doing',
  decided: 'Decided',
  deadEnds: 'Dead ends',
  next: 'Next',
  scene: 'Scene',
};

/** Headings accepted when reading a model's reply (models paraphrase; the canonical one comes first). */
const ALIASES: Readonly<Record<HandoffSection, readonly string[]>> = {
  // Deliberately no everyday words such as "Progress:" or "Files:": a body line starting with one
  // would be read as a new heading and cut the section short.
  doing: ['Doing', 'Doing now', 'Currently doing', 'Current state', 'In progress'],
  decided: ['Decided', 'Decisions', 'Decisions made'],
  deadEnds: ['Dead ends', 'Dead-ends', 'Deadends', 'Tried and failed', 'What did not work', 'Ruled out'],
  next: ['Next', 'Next step', 'Next steps'],
  scene: ['Scene', 'Key files'],
};

/** What an empty section reads like on disk. */
export const HANDOFF_PLACEHOLDER = '(empty)';

/** Opens the Doing section of a degraded document; its presence is what marks a document degraded. */
export const DEGRADED_MARKER = '[degraded: the handoff was not written]';

/** How much of the original task a degraded document carries. */
export const DEGRADED_TASK_CHARS = 1200;

function readHandoffSections(text: string): Partial<Record<HandoffSection, string>> {
  const sections = readSections(text, ALIASES);
  // A section still holding the placeholder was never filled in.
  for (const section of ORDER) if (sections[section] === HANDOFF_PLACEHOLDER) delete sections[section];
  return sections;
}

// --- The document ---------------------------------------------------------------------------

export type HandoffFields = Readonly<Record<HandoffSection, string>>;

export class HandoffDocument {
  readonly doing: string;
  readonly decided: string;
  readonly deadEnds: string;
  readonly next: string;
  readonly scene: string;

  constructor(fields: Partial<HandoffFields> = {}) {
    this.doing = (fields.doing ?? '').trim();
    this.decided = (fields.decided ?? '').trim();
    this.deadEnds = (fields.deadEnds ?? '').trim();
    this.next = (fields.next ?? '').trim();
    this.scene = (fields.scene ?? '').trim();
  }

  /** Reads a handoff out of free model output or a (possibly hand-edited) handoff file. */
  static parse(text: string): HandoffDocument {
    return new HandoffDocument(readHandoffSections(text));
  }

  /** Loads a handoff file; undefined when it does not exist or cannot be read. */
  static load(path: string): HandoffDocument | undefined {
    try {
      return HandoffDocument.parse(readFileSync(path, 'utf8'));
    } catch {
      return undefined;
    }
  }

  /** Headings of the required sections that are empty. */
  missing(): string[] {
    return REQUIRED.filter((section) => !this[section]).map((section) => HANDOFF_HEADINGS[section]);
  }

  get complete(): boolean {
    return this.missing().length === 0;
  }

  /** Whether this is a mechanically assembled stand-in rather than one the session wrote. */
  get degraded(): boolean {
    return this.doing.startsWith(DEGRADED_MARKER);
  }

  /** The four sections a terminal shows when a handoff happens (the scene is only paths). */
  summary(): Pick<HandoffFields, 'doing' | 'decided' | 'deadEnds' | 'next'> {
    return { doing: this.doing, decided: this.decided, deadEnds: this.deadEnds, next: this.next };
  }

  /** The human-facing file: title, a note on what it is, then all five sections. */
  toMarkdown(step: string): string {
    const sections = ORDER.map(
      (section) => `## ${HANDOFF_HEADINGS[section]}\n\n${this[section] || HANDOFF_PLACEHOLDER}`,
    );
    return [
      `# Handoff (${step})`,
      '> Written when the context window of this step was nearly full; a fresh session took over from it.\n' +
        '> Plain markdown: read it, correct it, add dead ends the session forgot.',
      ...sections,
    ]
      .join('\n\n')
      .concat('\n');
  }

  /** The first prompt of the successor session. */
  successorPrompt(): string {
    const sections = ORDER.filter((section) => this[section]).map(
      (section) => `## ${HANDOFF_HEADINGS[section]}\n${this[section]}`,
    );
    return [
      'You are taking over unfinished work. The session before you ran out of context and left the ' +
        'handoff below. **You have none of its memory: only this document and what is on disk.** ' +
        'The requirement and the goal are frozen in the workbench notes/ folder; read them yourself.',
      ...sections,
      '---',
      'Continue from "Next". Do not start over, and do not ask a human for background.',
    ].join('\n\n');
  }
}

/** Tokens as the prompts and the terminal show them: 123456 → "123.5K". */
export function formatUsedTokens(tokens: number): string {
  return `${(tokens / 1000).toFixed(1)}K`;
}

/** A window size as shown: 200000 → "200K". */
export function formatWindowTokens(tokens: number): string {
  return `${Math.round(tokens / 1000)}K`;
}

/** The turn in which the current session writes its own handoff. */
export function handoffWritingPrompt(usedTokens: number, windowTokens: number): string {
  return `Your context window is nearly full (${formatUsedTokens(usedTokens)} of ${formatWindowTokens(windowTokens)} used). \
Stop the current work here. A new session with an empty context will carry on, and it will know \
nothing except what you write now and what is already on disk.

Write a handoff document with exactly these five sections as markdown headings:

## Doing
One or two sentences: what you are in the middle of right now.

## Decided
Each decision already taken, with its reason, so that your successor does not reopen it.

## Dead ends
Every approach you tried that did not work, and why. This is the most expensive knowledge to \
rediscover and the first to be forgotten: one wrong path explored a second time can cost an hour. \
If there are none yet, write "(none yet)". Never invent any.

## Next
The concrete next action, specific enough to start on immediately.

## Scene
Paths of the key files, scripts, logs and artifacts your successor should look at.

Rules:
- Self-contained: your successor cannot ask you anything.
- Pointers, not content: name file paths instead of pasting what is in them.
- Do not restate the requirement or the goal; they are frozen in the workbench notes/ folder.

Reply with the document only.`;
}

/**
 * The stand-in used when the session could not write its handoff: it says so, tells the successor
 * to inspect the current state before acting, and carries the start of the original task.
 */
export function degradedHandoff(step: string, taskPrompt: string, why = ''): HandoffDocument {
  const reason = why ? ` (${why})` : '';
  return new HandoffDocument({
    doing: `${DEGRADED_MARKER} The previous session ran out of context in step "${step}" but could not write its handoff${reason}.`,
    next:
      'Before anything else, inspect the current state: the notes/ folder, the artifacts, and ' +
      '`git status` / `git log`. Do not assume that nothing has been done yet; continue from what you find.',
    scene: `The task this step was originally given:\n\n${taskPrompt.trim().slice(0, DEGRADED_TASK_CHARS)}`,
  });
}

/** The note added to the step's `errors` when a degraded handoff was used. */
export function degradedHandoffNote(why: string): string {
  return `handoff degraded (${why})`;
}

/** The reason recorded when the context could not fit even the handoff turn. */
export const OVERFLOW_REASON = 'the context could not fit even one more turn to write the handoff';

/** The reason recorded when the session's reply lacked required sections. */
export function incompleteReason(document: HandoffDocument): string {
  return `missing ${document.missing().join('/')}`;
}

const OVERFLOW = new RegExp(
  [
    'prompt is too long',
    'context[ _-]?length[ _-]?exceeded',
    'maximum context length',
    'exceeds? (?:the )?context (?:window|limit)',
    'too many total text bytes',
    'input length and `?max_tokens`? exceed',
  ].join('|'),
  'i',
);

/** Whether any of `texts` says the request no longer fits the model's context window. */
export function isContextOverflow(...texts: ReadonlyArray<string | null | undefined>): boolean {
  return texts.some((text) => typeof text === 'string' && OVERFLOW.test(text));
}

// --- Files ----------------------------------------------------------------------------------

/** The step label without characters that are unsafe in file names; "step" if nothing is left. */
export function safeStepName(step: string): string {
  return step.replace(/[/\\:*?"<>|]/g, '').trim() || 'step';
}

/** Where the handoff of `step` lives: `<notes>/handoff-<step>.md`. */
export function handoffPath(notesDir: string, step: string): string {
  return join(notesDir, `handoff-${safeStepName(step)}.md`);
}

/**
 * Writes the handoff of `step` into `notesDir` (shown, 0600) and returns its absolute path. An
 * existing previous generation is first moved to `<notes>/archive/handoff/<step>-<YYYYmmdd-HHMMSS>.md`.
 */
export function saveHandoff(
  notesDir: string,
  step: string,
  document: HandoffDocument,
  at: Date = new Date(),
): string {
  const path = resolve(handoffPath(notesDir, step));
  if (existsSync(path)) {
    const archiveDir = join(notesDir, 'archive', 'handoff');
    mkdirSync(archiveDir, { recursive: true });
    const base = join(archiveDir, `${safeStepName(step)}-${compactTimestamp(at)}`);
    let target = `${base}.md`;
    // Two generations within one second must not overwrite each other's archive copy.
    for (let copy = 2; existsSync(target); copy += 1) target = `${base}-${copy}.md`;
    renameSync(path, target);
  }
  // The notes directory keeps the user's umask (it is the workbench's); only the file is private.
  mkdirSync(notesDir, { recursive: true });
  // The path is free (its previous generation was just moved away), so the file is created 0600.
  writeShownFile(path, document.toMarkdown(step));
  return path;
}

// --- Limits ---------------------------------------------------------------------------------

/**
 * Degraded handoffs allowed in a row before the step stops: each successor of a degraded
 * handoff starts with less than the one before, so a third one would help nobody.
 */
export const MAX_DEGRADED_IN_A_ROW = 2;

/** Where a step stands before its next handoff. */
export interface HandoffHistory {
  step: string;
  /** Handoffs this step has made so far (the length of `retired`). */
  generations: number;
  /** How many of the most recent handoffs were degraded, counted back to the last good one. */
  degradedInARow: number;
}

/**
 * Checked before each handoff: undefined when another generation may start, otherwise the step's
 * error, saying what went wrong and what to change.
 */
export function generationLimitReason(
  history: HandoffHistory,
  policy: Pick<HandoffPolicy, 'maxGenerations' | 'at' | 'window'>,
): string | undefined {
  if (history.generations < policy.maxGenerations) return undefined;
  return (
    `Step "${history.step}" handed off to a fresh session ${history.generations} times without finishing, ` +
    `so it was stopped. The handoff threshold (${formatWindowTokens(policy.at)} of a ` +
    `${formatWindowTokens(policy.window)} window) is probably below what this role needs just to start ` +
    '(system prompt, tools, workbench index), so every new session crosses it at once. Give flower a ' +
    'larger window (--window or FLOWER_WINDOW), or turn handoff off with --no-handoff.'
  );
}

/**
 * Checked right after each handoff is written: once two in a row are degraded, no successor is
 * started — a session built from a fallback document only repeats the failure at full price.
 */
export function degradedLimitReason(
  history: HandoffHistory,
  policy: Pick<HandoffPolicy, 'window'>,
): string | undefined {
  if (history.degradedInARow < MAX_DEGRADED_IN_A_ROW) return undefined;
  return (
    `Step "${history.step}" was stopped after ${history.degradedInARow} handoffs in a row that could not ` +
    'be written properly: each new session would start with less to go on than the one before. The reasons ' +
    'are in the "errors" of this step in runs/manifest.json. If the context overflowed, the window ' +
    `(${formatWindowTokens(policy.window)}) is probably larger than the model really has: set --window or ` +
    'FLOWER_WINDOW to the real size.'
  );
}
