/**
 * Questions to a human and unsolicited human mail, and the events a UI renders for them.
 *
 * A question's life: `asked` → one of `answered` / `timeout` / `declined`; or it never waits at all:
 * `invalid` (empty question), `over_budget` (quota used up) or an immediate `timeout` in unattended
 * mode. Every state change is one `ask` event with the same id, so a UI updates a line in place.
 * Mail goes `queued` (the human sent it) → `delivered` (the agent read its inbox).
 */

export type AskState = 'asked' | 'answered' | 'timeout' | 'declined' | 'over_budget' | 'invalid';

/**
 * Who asked: the agent (its `ask` tool), or the workflow itself (flower's own questions: accept
 * changed checks, go on after a stall, …). What happens when nobody answers differs: the agent
 * decides and records an assumption; the workflow applies its own default and says which.
 */
export type Asker = 'agent' | 'workflow';

export interface Ask {
  /** `q1`, `q2`, … (one counter shared with mail ids). */
  id: string;
  question: string;
  options: string[];
  /** Epoch milliseconds. */
  askedAt: number;
  /** Epoch milliseconds; undefined while waiting. */
  settledAt?: number;
  state: AskState;
  /** The text the model receives as the tool result (the human's answer or a fall-through text). */
  answer: string;
  askedBy: Asker;
}

export interface Mail {
  /** `m1`, `m2`, … */
  id: string;
  text: string;
  /** Epoch milliseconds. */
  sentAt: number;
  /** True once delivered by the inbox tool. */
  taken: boolean;
}

/** An event about a question. `remaining` is the quota left (−1 when unlimited). */
export interface QuestionEvent {
  kind: 'ask';
  text: string;
  payload: {
    kind: 'question';
    id: string;
    options: string[];
    state: AskState;
    answer: string;
    remaining: number;
    askedAt: number;
    askedBy: Asker;
  };
}

/** An event about mail. `amended` is the file the words were appended to ('' when none). */
export interface MailEvent {
  kind: 'ask';
  text: string;
  payload: { kind: 'mail'; id: string; state: 'queued' | 'delivered'; amended: string };
}

/** What the human channel reports to a UI. */
export type AskEvent = QuestionEvent | MailEvent;

/** Seconds a question waited (to now while it is still waiting), one decimal. */
export function waitedSeconds(ask: Ask, now = Date.now()): number {
  return Math.round(((ask.settledAt ?? now) - ask.askedAt) / 100) / 10;
}

/**
 * A reply typed as an option number (`2`) becomes that option's text; anything else is kept as it
 * is. Every UI gets the same rule, so "answer by number" behaves the same everywhere.
 */
export function resolveReply(options: readonly string[], reply: string): string {
  const trimmed = reply.trim();
  if (!/^\d+$/.test(trimmed)) return reply;
  const chosen = options[Number(trimmed) - 1];
  return chosen ?? reply;
}
