/**
 * Rebuilding `lineage.json` when it was damaged (truncated, random bytes, `null`, a directory):
 * which session each step was running in can be found again from what else is on disk.
 *
 * Before, a damaged lineage was set aside without a word and every step quietly started a new
 * session, abandoning its context (observed). The manifest names the session of every step that
 * ended (and of every step a SIGTERM stopped); the session store holds every session of the
 * workspace with its first message and its last activity.
 *
 * Rules (pure; the runtime supplies the rows and the store's answers):
 * - A step's session is the one of its newest manifest row (plain step names; `#retryN` and
 *   `#roundN` are attempts of the same step; judge rounds `:verdict#N` are never a step's session),
 *   provided the store still has it.
 * - A session no manifest row mentions belongs to a process that died before writing its row
 *   (SIGKILL). If its first message is the first message of a step's chosen session, it is a later
 *   start of that same step, and the newer one of the two wins.
 * - Every choice carries its reason in words, so the user can check it.
 */
import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { isLineageStepName } from './lineage.js';

/** The manifest fields the rebuild reads. */
export interface RebuildRow {
  step?: unknown;
  session_id?: unknown;
  retired?: unknown;
  started_at?: unknown;
}

export interface StoredSession {
  sessionId: string;
  /** Last activity, epoch milliseconds. */
  mtime: number;
}

export interface LineageChoice {
  step: string;
  sessionId: string;
  reason: string;
}

const ATTEMPT_SUFFIX = /#(?:retry|round)\d+$/;

/** The step a manifest label belongs to, or undefined for judge rounds and odd labels. */
export function plainStepOf(label: string): string | undefined {
  const step = label.replace(ATTEMPT_SUFFIX, '');
  return isLineageStepName(step) ? step : undefined;
}

function clock(epochMs: number): string {
  return new Date(epochMs).toTimeString().slice(0, 8);
}

export function rebuildLineage(
  rows: readonly RebuildRow[],
  sessions: readonly StoredSession[],
  firstMessageOf: (sessionId: string) => string | undefined,
): LineageChoice[] {
  const stored = new Map(sessions.map((session) => [session.sessionId, session]));
  const mentioned = new Set<string>();
  const newest = new Map<string, { sessionId: string; startedAt: number }>();
  for (const row of rows) {
    if (typeof row.session_id === 'string') mentioned.add(row.session_id);
    if (Array.isArray(row.retired))
      for (const id of row.retired) if (typeof id === 'string') mentioned.add(id);
    const step = typeof row.step === 'string' ? plainStepOf(row.step) : undefined;
    const sessionId = typeof row.session_id === 'string' ? row.session_id : undefined;
    const startedAt = typeof row.started_at === 'number' ? row.started_at : 0;
    if (step === undefined || sessionId === undefined || !stored.has(sessionId)) continue;
    const known = newest.get(step);
    if (known === undefined || startedAt >= known.startedAt) newest.set(step, { sessionId, startedAt });
  }
  const choices = new Map<string, LineageChoice>();
  for (const [step, { sessionId }] of newest) {
    const activity = stored.get(sessionId)?.mtime ?? 0;
    choices.set(step, {
      step,
      sessionId,
      reason: `the session of its newest manifest row, last active ${clock(activity)}`,
    });
  }
  const orphans = sessions
    .filter((session) => !mentioned.has(session.sessionId))
    .sort((a, b) => b.mtime - a.mtime);
  for (const orphan of orphans) {
    const message = firstMessageOf(orphan.sessionId);
    if (message === undefined) continue;
    for (const choice of choices.values()) {
      const chosen = stored.get(choice.sessionId);
      if (chosen === undefined || orphan.mtime <= chosen.mtime) continue;
      if (firstMessageOf(choice.sessionId) !== message) continue;
      choices.set(choice.step, {
        step: choice.step,
        sessionId: orphan.sessionId,
        reason:
          `the newest session that starts like its manifest session, last active ${clock(orphan.mtime)} ` +
          '(it has no manifest row: the process ended before it could write one)',
      });
      break;
    }
  }
  return [...choices.values()];
}

/** The text of a transcript's first prompt (its first user entry that is not harness bookkeeping). */
export function firstPromptText(entries: readonly SessionStoreEntry[]): string | undefined {
  for (const entry of entries) {
    if (entry.type !== 'user' || entry.isMeta === true) continue;
    const content = (entry.message as { content?: unknown } | undefined)?.content;
    if (typeof content === 'string') return content;
    if (!Array.isArray(content)) continue;
    const text = content
      .filter((block) => (block as { type?: unknown }).type === 'text')
      .map((block) => String((block as { text?: unknown }).text ?? ''))
      .join('\n');
    if (text !== '') return text;
  }
  return undefined;
}
