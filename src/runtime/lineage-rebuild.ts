/**
 * Rebuilding `lineage.json` when it was damaged (truncated, random bytes, `null`, a directory):
 * which session each step was running in can be found again from what else is on disk.
 *
 * Before, a damaged lineage was set aside without a word and every step quietly started a new
 * session, abandoning its context (observed). The manifest names the session of every step that
 * ended (and of every step a SIGTERM stopped); the in-flight markers (`in-flight.ts`) name the
 * session of every step whose process was killed before it could write its row (SIGKILL: that row
 * is booked only after the rebuild, so without the markers the killed step was forgotten and
 * started over, observed 4 of 4); the session store holds every session of the workspace with its
 * first message and its last activity.
 *
 * Rules (pure; the runtime supplies the rows, the markers and the store's answers):
 * - A step's session is the one of its newest manifest row or in-flight marker, by start time
 *   (plain step names; `#retryN` and `#roundN` are attempts of the same step; judge rounds
 *   `:verdict#N` are never a step's session), provided the store still has it.
 * - A session no manifest row or marker mentions belongs to a process that died before writing
 *   its row and whose marker is gone too (a crash before markers existed, a lost marker). If its
 *   first message is the first message of a step's chosen session, it is a later start of that
 *   same step, and the newer one of the two wins.
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

/** The marker fields the rebuild reads: the step a process was running when it ended. */
export interface InFlightStep {
  step: string;
  sessionId: string;
  /** Epoch seconds, when the attempt started (comparable with the rows' `started_at`). */
  startedAt: number;
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
  inFlight: readonly InFlightStep[] = [],
): LineageChoice[] {
  const stored = new Map(sessions.map((session) => [session.sessionId, session]));
  const mentioned = new Set<string>();
  const newest = new Map<string, { sessionId: string; startedAt: number; inFlight: boolean }>();
  const consider = (label: unknown, sessionId: unknown, startedAt: unknown, marker: boolean) => {
    const step = typeof label === 'string' ? plainStepOf(label) : undefined;
    if (step === undefined || typeof sessionId !== 'string' || !stored.has(sessionId)) return;
    const at = typeof startedAt === 'number' ? startedAt : 0;
    const known = newest.get(step);
    if (known === undefined || at >= known.startedAt)
      newest.set(step, { sessionId, startedAt: at, inFlight: marker });
  };
  for (const row of rows) {
    if (typeof row.session_id === 'string') mentioned.add(row.session_id);
    if (Array.isArray(row.retired))
      for (const id of row.retired) if (typeof id === 'string') mentioned.add(id);
    consider(row.step, row.session_id, row.started_at, false);
  }
  // After the rows, so a tie (the row and the marker of one attempt) goes to the marker; both
  // name the same session then, and only the reason differs.
  for (const marker of inFlight) {
    mentioned.add(marker.sessionId);
    consider(marker.step, marker.sessionId, marker.startedAt, true);
  }
  const choices = new Map<string, LineageChoice>();
  for (const [step, { sessionId, inFlight: marker }] of newest) {
    const activity = clock(stored.get(sessionId)?.mtime ?? 0);
    choices.set(step, {
      step,
      sessionId,
      reason: marker
        ? `the session it was running when its process ended, last active ${activity}`
        : `the session of its newest manifest row, last active ${activity}`,
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
