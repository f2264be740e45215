/**
 * What a step's books read at its end: only the entries its sessions gained during the step, not
 * whole transcripts. Reading every transcript of a long session at every step end cost 3.5 s and
 * 1.6 GB at a realistic 80k entries (issue 23); a step's own entries are a few hundred.
 *
 * Invariants:
 * - Where each transcript of the step's sessions stood is taken when the step starts (`StepMarks`):
 *   the next seq of every key the resumed session has. A key the step creates (a new session, a
 *   handoff's successor, a new worker) has no mark and is read whole: all of it is the step's.
 * - Seqs only grow within a key (store/sqlite-session-store.ts), so "from the mark" is exactly
 *   what was appended since, whoever appended it (the agent, or recovery after the step).
 * - A worker transcript that existed before the step is read from its mark plus its first
 *   `HEAD_ENTRIES` entries: its own account of itself (agent type, description, dispatch id) sits
 *   at its start, and the ledger names the worker from it when the dispatch is older than the step.
 * - The ledger's window still applies to what is read (ledger.ts): these reads only skip entries
 *   that cannot be in it.
 */
import type { SessionKey } from '@anthropic-ai/claude-agent-sdk';
import type { Entry } from '../../store/transcript.js';
import { agentIdOf, type TranscriptReader } from '../ledger.js';

/** The part of the session store the step's books read through. */
export interface AppendedEntries {
  /** The next seq of each key of a session, by subpath ('' for the main transcript). */
  nextSeqs(projectKey: string, sessionId: string): Map<string, number>;
  /** The entries of `key` from seq `from` on, oldest first, and its first `head` entries. */
  entriesFrom(key: SessionKey, from: number, head?: number): Entry[] | null;
  listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]>;
}

/**
 * How many of a worker transcript's first entries are read for its account of itself: its
 * metadata entry and its first prompt open it.
 */
export const HEAD_ENTRIES = 3;

/** Where each transcript of the step's sessions stood when the step started. */
export class StepMarks {
  private readonly marks = new Map<string, Map<string, number>>();

  /** Marks every key `sessionId` has now (nothing for a session the store does not hold). */
  static at(store: AppendedEntries, projectKey: string, sessionIds: readonly string[]): StepMarks {
    const marks = new StepMarks();
    for (const sessionId of sessionIds) marks.marks.set(sessionId, store.nextSeqs(projectKey, sessionId));
    return marks;
  }

  /** Where `subpath` of `sessionId` stood; 0 for a key the step created. */
  of(sessionId: string, subpath = ''): number {
    return this.marks.get(sessionId)?.get(subpath) ?? 0;
  }
}

/** A reader for `ledgerForStep` that loads only what the step appended (see the module header). */
export function stepReader(store: AppendedEntries, marks: StepMarks): TranscriptReader {
  return {
    load: async (key) => {
      const from = marks.of(key.sessionId, key.subpath ?? '');
      const isWorker = key.subpath !== undefined && agentIdOf(key.subpath) !== undefined;
      return store.entriesFrom(key, from, isWorker && from > 0 ? HEAD_ENTRIES : 0);
    },
    listSubkeys: (key) => store.listSubkeys(key),
  };
}
