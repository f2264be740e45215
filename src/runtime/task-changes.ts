/**
 * The changes this process makes to a task's files, as they happen: a manifest save, a booked
 * row, a lineage step or wake, an in-flight marker set or cleared, an endpoint's first answer.
 * A shared task (runtime/shared/shared-task.ts) listens here and sends them to
 * PostgreSQL; without a listener nothing happens.
 *
 * Why a registry and not an object handed around: the writers are synchronous functions called
 * from many places (signal handlers, the workflow's own Lineage, the starter's wake), and each
 * writes by run directory. Listening per run directory catches every one of them without
 * changing who calls what.
 *
 * Invariants:
 * - Only changes this process made are emitted (the pull writes files without emitting), so the
 *   sync never sends back what it pulled, which could overwrite a newer value.
 * - Emitting is synchronous and never throws: a listener's failure is its own.
 */
import { resolve } from 'node:path';
import type { InFlightMarker } from './in-flight.js';
import type { StoredManifestRow } from './manifest.js';

export type TaskFileChange =
  /** This run's rows as just saved (they replace the run's rows). */
  | { kind: 'manifest-run'; run: string; rows: StoredManifestRow[] }
  /** Rows added for processes that can no longer write their own (booked killed attempts). */
  | { kind: 'manifest-added'; rows: StoredManifestRow[] }
  | { kind: 'lineage-step'; step: string; sessionId: string }
  /** One wake counted; `woke` is the count the file has now. */
  | { kind: 'wake'; woke: number }
  | { kind: 'in-flight'; marker: InFlightMarker }
  | { kind: 'in-flight-cleared'; sessionIds: string[] }
  | { kind: 'endpoint'; key: string; firstAnswer: string }
  /** `--new` moved lineage.json into the archive: its steps and wake count are gone. */
  | { kind: 'lineage-archived' };

type Listener = (change: TaskFileChange) => void;

const listeners = new Map<string, Set<Listener>>();

/** Calls `listener` with every change this process makes in `runDir`; returns the unsubscribe. */
export function subscribeTaskChanges(runDir: string, listener: Listener): () => void {
  const key = resolve(runDir);
  const set = listeners.get(key) ?? new Set<Listener>();
  set.add(listener);
  listeners.set(key, set);
  return () => {
    set.delete(listener);
    if (set.size === 0) listeners.delete(key);
  };
}

export function emitTaskChange(runDir: string, change: TaskFileChange): void {
  if (listeners.size === 0) return;
  for (const listener of listeners.get(resolve(runDir)) ?? []) {
    try {
      listener(change);
    } catch {
      // The listener's business.
    }
  }
}
