/**
 * Triage when the goal is set: every checklist item is a *check* (a command flower runs), a
 * *judgement* (the judge looks) or *cannot verify here*; the last kind goes to a human before any
 * work is paid for.
 *
 * Why before: in the reference's own case study an item that could not be verified on that machine
 * was found out after $35.90 of work and $1.40 of judging; asked when the goal is set, the same
 * answer costs nothing.
 *
 * Invariants:
 * - Only undecided cannot-verify items are asked about, and a decision is written into goal.md
 *   (accepted items carry `[cannot verify here, accepted: …]`), so no wake asks again.
 * - The human's choices: accept them as they are (they become assumptions, reported at the end and
 *   never held against a round), change them (the answer's lines replace them, and are triaged
 *   again), or drop them (offered only while other items remain: an empty checklist is no goal).
 * - Nobody answers (unattended, a timeout): they are accepted as assumptions and said to be.
 * - An item whose check cannot be read is reported now, as a warning; it will fail every round.
 */
import type { HumanChannel } from '../agents/human/channel.js';
import { CHECK_SYNTAX } from '../checks/syntax.js';
import { bulletItems } from '../runtime/markdown-sections.js';
import { pickChoice } from './choices.js';
import type { WorkflowContext } from './context.js';
import type { Goal } from './goal.js';

/** Subtype of the `system` events triage emits. */
export const GOAL_TRIAGE_EVENT = 'goal-triage';

export const TRIAGE_CHOICES = [
  'Accept them as they are (they are recorded as assumptions, not verified)',
  'Change them',
  'Drop them from the checklist',
] as const;

/** A person who keeps changing items into more unverifiable ones is asked this many times, then they are accepted. */
const MAX_TRIAGE_QUESTIONS = 3;

function say(
  ctx: WorkflowContext,
  text: string,
  data: Record<string, unknown>,
  tone: 'info' | 'warning',
): void {
  ctx.onEvent?.({
    kind: 'system',
    text,
    payload: {
      subtype: GOAL_TRIAGE_EVENT,
      data,
      ...(tone === 'warning' ? { warning: true } : { notice: 'info' as const }),
    },
  });
}

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;

/** One line on how the goal will be proven: `goal: 4 items — 2 checked by flower, 1 for the judge, 1 cannot be verified here`. */
export function triageSummary(goal: Goal): string {
  const items = goal.items();
  const count = (kind: string) => items.filter((item) => item.kind === kind).length;
  const parts = [
    [count('check'), 'checked by flower'],
    [count('judgement'), 'for the judge'],
    [count('cannot verify here'), 'cannot be verified here'],
  ]
    .filter(([n]) => Number(n) > 0)
    .map(([n, what]) => `${n} ${what}`);
  return `goal: ${plural(items.length, 'item')} — ${parts.join(', ')}`;
}

/**
 * Classifies the goal's items, tells the human, and settles its cannot-verify items. Returns the
 * goal as decided (written to `path` when anything changed) and puts it in `ctx.goal`.
 */
export async function triageGoal(
  ctx: WorkflowContext,
  start: Goal,
  path: string,
  channel: HumanChannel,
): Promise<Goal> {
  let goal = start;
  const items = goal.items();
  say(ctx, triageSummary(goal), { items: items.map(({ text, kind }) => ({ text, kind })), path }, 'info');
  for (const item of items) {
    if (item.check.kind !== 'malformed') continue;
    say(
      ctx,
      `this item's check cannot be read, so it fails every round until ${path} is fixed (${item.check.problem}; write ${CHECK_SYNTAX}): ${item.text}`,
      { item: item.text, problem: item.check.problem, path },
      'warning',
    );
  }

  for (let asked = 0; goal.undecided.length > 0; asked++) {
    const undecided = goal.undecided;
    const question = await channel.ask(
      [
        `${plural(undecided.length, 'item')} of the goal cannot be verified on this machine:`,
        ...undecided.map((item) => `  - ${item}`),
        'Decide now, before any work is paid for (you can also edit the goal file later):',
      ].join('\n'),
      undecided.length < goal.checks.length ? [...TRIAGE_CHOICES] : TRIAGE_CHOICES.slice(0, 2),
    );
    const answer = question.state === 'answered' ? question.answer.trim() : '';
    const [accept, change, drop] = TRIAGE_CHOICES;
    const choice = pickChoice(answer, TRIAGE_CHOICES);
    if (answer === '' || choice === accept || asked + 1 >= MAX_TRIAGE_QUESTIONS) {
      goal = goal.accept(undecided);
      if (answer === '')
        say(
          ctx,
          `nobody answered: ${plural(undecided.length, 'item')} recorded as assumed, not verified`,
          { assumptions: undecided, path },
          'warning',
        );
    } else if (choice === drop && undecided.length < goal.checks.length) {
      goal = goal.replace(undecided, []);
    } else {
      const replacements =
        choice === change
          ? await channel.ask(
              `Write what should replace them, one item per line (end an item with ${CHECK_SYNTAX} to have flower run it). Nothing keeps them as they are.`,
            )
          : undefined;
      const text =
        replacements === undefined ? answer : replacements.state === 'answered' ? replacements.answer : '';
      const lines = bulletItems(text);
      if (lines.length > 0) goal = goal.replace(undecided, lines);
    }
    goal.write(path);
  }
  ctx.goal = goal;
  ctx.assumptions = goal.assumptions;
  return goal;
}
