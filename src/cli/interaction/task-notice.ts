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
  return state.lastRuling?.verdict === 'achieved';
}

export const ACHIEVED_PROMPT =
  'The judge ruled this task achieved. Enter = leave it as it is; or say what else to do; /new = start something else.';

export const NOTHING_TO_DO =
  'nothing done: the judge already ruled this task achieved. Say what else to do (flower "…"), or start a new task with --new.';
