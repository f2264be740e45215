/**
 * What `flower` says about the task already in a directory before it spends anything: which task it
 * is, what happened to it last time, and what a new request will do to it.
 *
 * Observed without these: a new request in a directory with a task was silently appended to the old
 * brief, and waking a task the judge had already ruled achieved paid for another work round and
 * another judge round. Pure text: the caller decides what to ask and when.
 */
import type { WakeState } from '../../workflow/starter.js';

/** The first line of the task's goal (or a stand-in), short enough for one screen line. */
export function taskLine(state: WakeState, max = 80): string {
  const line =
    state.goalStatement
      .split('\n')
      .find((text) => text.trim() !== '')
      ?.trim() ?? '';
  if (line === '') return 'its brief is in .flower/notes/brief.md';
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** Said when a new request went into an existing task's brief. */
export function addedToBriefLine(state: WakeState): string {
  return `this directory has a task (${taskLine(state)}); your words were added to its brief — use --new for a separate task`;
}

/** Asked on a terminal before a new request goes into an existing task's brief. */
export function addOrNewQuestion(state: WakeState): string {
  return `this directory has a task (${taskLine(state)}). Enter = add your words to its brief; /new = a separate task (the old one is archived).`;
}

/** `2025-01-02 14:05` in local time. */
export function localTime(epochSeconds: number): string {
  const at = new Date(epochSeconds * 1000);
  const pad = (value: number) => String(value).padStart(2, '0');
  return `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())} ${pad(at.getHours())}:${pad(at.getMinutes())}`;
}

/** What happened last time, when the judge has ruled: goal, verdict, when, spend. */
export function lastTimeLines(state: WakeState): string[] {
  const ruling = state.lastRuling;
  if (ruling === undefined) return [];
  const round = ruling.rounds ? `round ${ruling.round}/${ruling.rounds}` : `round ${ruling.round}`;
  const runs = `${state.spend.runs} run${state.spend.runs === 1 ? '' : 's'}`;
  return [
    `last time: the judge ruled ${ruling.verdict ?? 'nothing readable (counted as not yet)'} (${round}) at ${localTime(ruling.at)} · spent $${state.spend.totalUsd.toFixed(2)} in ${runs}`,
    `  goal: ${taskLine(state)}`,
  ];
}

/** The judge already ruled this task achieved: waking it again would only pay for the same answer. */
export function isAchieved(state: WakeState): boolean {
  // Words added with --clarify-only since are work no round has seen: the ruling is not the last word.
  return state.lastRuling?.verdict === 'achieved' && state.pendingRemark === '';
}

/** How many characters of the user's own words a line quotes back. */
const QUOTED_CHARS = 80;

function quoted(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return `"${flat.length > QUOTED_CHARS ? `${flat.slice(0, QUOTED_CHARS - 1)}…` : flat}"`;
}

/** Said when a run picks up the words an earlier --clarify-only added to the task's brief. */
export function pendingRemarkLine(state: WakeState): string {
  return `the words added with --clarify-only go to work now: ${quoted(state.pendingRemark)} (the goal is set again with them)`;
}

/**
 * How a --clarify-only run ends: where the brief is and what to run next. `added`: the words went
 * into an existing task's brief, so the next run sets its goal again with them.
 */
export function clarifiedLines(briefPath: string, workspace: string, added: boolean): string[] {
  return added
    ? [
        `brief: ${briefPath} (your words are at its end)`,
        `next: run flower in ${workspace}: it sets the goal again with your words, then works on them`,
      ]
    : [
        `brief: ${briefPath}`,
        `next: read it (edit it where it is wrong), then run flower in ${workspace} to set the goal and start the work`,
      ];
}

export const ACHIEVED_PROMPT =
  'The judge ruled this task achieved. Enter = leave it as it is; or say what else to do; /new = start something else.';

export const NOTHING_TO_DO =
  'nothing done: the judge already ruled this task achieved. Say what else to do (flower "…"), or start a new task with --new.';
