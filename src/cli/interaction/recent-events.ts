/**
 * The rolling window of what just happened, given to the oracle so a side question like "where are
 * we" can be answered without touching the running session.
 *
 * Invariants: at most `capacity` entries, oldest dropped first; thinking and prompts are left out
 * (they are long and say what the agent meant, not what it did); each entry is one line of at most
 * `entryChars` characters, tagged with its kind, tool and speaker.
 */
import type { FlowerEvent } from '../../runtime/events.js';
import { oneLine } from '../terminal/terminal-text.js';

export interface RecentEventsPolicy {
  /** Enough to cover the last few minutes of a busy run without bloating the oracle's prompt. */
  readonly capacity: number;
  /** A glimpse of each event; the oracle can Read files for the rest. */
  readonly entryChars: number;
}

export const defaultRecentEventsPolicy: RecentEventsPolicy = { capacity: 60, entryChars: 200 };

const LEFT_OUT = new Set<FlowerEvent['kind']>(['thinking', 'prompt']);

export class RecentEvents {
  private readonly entries: string[] = [];

  constructor(private readonly policy: RecentEventsPolicy = defaultRecentEventsPolicy) {}

  add(event: FlowerEvent): void {
    if (LEFT_OUT.has(event.kind)) return;
    const payload = event.payload as { subagent?: unknown };
    const speaker = payload.subagent === true ? 'subagent' : 'main';
    const tag = event.tool ? `${event.kind}/${event.tool}` : event.kind;
    this.entries.push(`[${tag}·${speaker}] ${oneLine(event.text).slice(0, this.policy.entryChars)}`);
    if (this.entries.length > this.policy.capacity) this.entries.shift();
  }

  /** The entries, oldest first. */
  lines(): string[] {
    return [...this.entries];
  }
}
