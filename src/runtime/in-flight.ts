/**
 * The books of a step whose process was killed with SIGKILL.
 *
 * SIGTERM and SIGHUP write the step in flight to the manifest (`signals.ts`); SIGKILL runs nothing,
 * so the killed attempt's cost and turns were simply missing from the manifest (observed). While a
 * session runs, a small marker `runs/in-flight/<session>.json` says which process runs it, for
 * which step, and what the session had cost before this attempt. The manifest row replaces the
 * marker when the step ends. A marker whose process is gone therefore means a killed step: the next
 * runtime in the run directory books it from the session's stored transcript (its last
 * `cost-state`, and the turns after the attempt started) and removes the marker.
 *
 * Invariants:
 * - A marker of a live process (same host) is never touched: another flower may be working here.
 * - Booking appends one row under the killed process's run id and keeps every other row; a row
 *   naming the session that ended after the marker's start means nothing was lost, and no second
 *   row is added.
 * - Writing or removing a marker never throws: the books are a record of the work, not a reason
 *   to stop it.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE } from '../config/private-files.js';
import { processIsAlive } from './locked-json-file.js';
import { addManifestRows, type StoredManifestRow } from './manifest.js';
import { epochSeconds, type ManifestRow } from './step-result.js';

export const IN_FLIGHT_DIRECTORY = 'in-flight';

/** Error value of a row booked for a step whose process was killed before it could write one. */
export const KILLED_UNRECORDED = 'killed-unrecorded';

export interface InFlightMarker {
  sessionId: string;
  step: string;
  run: string;
  pid: number;
  host: string;
  /** Epoch seconds, when the attempt started. */
  startedAt: number;
  /** The session's running cost total before this attempt (0 for a new session). */
  baselineUsd: number;
  resumed: boolean;
}

function markerPath(runDir: string, sessionId: string): string {
  return join(runDir, IN_FLIGHT_DIRECTORY, `${sessionId.replace(/[^A-Za-z0-9._-]/g, '_')}.json`);
}

/** Records that this process now runs `sessionId` for `step`. */
export function markInFlight(runDir: string, marker: Omit<InFlightMarker, 'pid' | 'host'>): void {
  try {
    mkdirSync(join(runDir, IN_FLIGHT_DIRECTORY), { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
    const record: InFlightMarker = { ...marker, pid: process.pid, host: hostname() };
    writeFileSync(markerPath(runDir, marker.sessionId), `${JSON.stringify(record)}\n`, {
      mode: PRIVATE_FILE_MODE,
    });
  } catch {
    // Without a marker a SIGKILL loses this attempt's books, as before; the work goes on.
  }
}

/** The step's row was written: its sessions are no longer in flight. */
export function clearInFlight(runDir: string, sessionIds: readonly string[]): void {
  for (const sessionId of sessionIds) rmSync(markerPath(runDir, sessionId), { force: true });
}

function readMarkers(runDir: string): InFlightMarker[] {
  const directory = join(runDir, IN_FLIGHT_DIRECTORY);
  let names: string[];
  try {
    names = readdirSync(directory);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    try {
      const value = JSON.parse(readFileSync(join(directory, name), 'utf8')) as Partial<InFlightMarker>;
      return typeof value.sessionId === 'string' && typeof value.pid === 'number'
        ? [value as InFlightMarker]
        : [];
    } catch {
      return [];
    }
  });
}

/** Epoch seconds of an entry's ISO `timestamp`, if it has a valid one. */
function timeOf(entry: SessionStoreEntry): number | undefined {
  const at = typeof entry.timestamp === 'string' ? Date.parse(entry.timestamp) : Number.NaN;
  return Number.isFinite(at) ? epochSeconds(at) : undefined;
}

/** The running cost total of the last `cost-state` entry. */
export function lastCostState(entries: readonly SessionStoreEntry[]): number | undefined {
  for (let index = entries.length - 1; index >= 0; index--) {
    const entry = entries[index];
    const total = entry?.type === 'cost-state' ? entry.totalCostUSD : undefined;
    if (typeof total === 'number' && Number.isFinite(total)) return total;
  }
  return undefined;
}

/** Model turns since `since`: main-thread API responses (entries of one response share `message.id`). */
function turnsSince(entries: readonly SessionStoreEntry[], since: number): number {
  const responses = new Set<string>();
  for (const entry of entries) {
    if (entry.type !== 'assistant' || entry.isSidechain === true) continue;
    const at = timeOf(entry);
    if (at !== undefined && at < since) continue;
    const message = entry.message as { id?: unknown; model?: unknown } | undefined;
    if (message?.model === '<synthetic>') continue;
    responses.add(typeof message?.id === 'string' ? message.id : String(entry.uuid));
  }
  return responses.size;
}

/** The row for a killed attempt, from its marker and the session's stored transcript. */
export function bookedRow(
  marker: InFlightMarker,
  entries: readonly SessionStoreEntry[],
  context: number,
): ManifestRow {
  const total = lastCostState(entries) ?? marker.baselineUsd;
  const times = entries.map(timeOf).filter((at): at is number => at !== undefined);
  const endedAt = Math.max(marker.startedAt, ...times);
  return {
    step: marker.step,
    session_id: marker.sessionId,
    ok: false,
    cost_usd: Math.round(Math.max(0, total - marker.baselineUsd) * 1e6) / 1e6,
    num_turns: turnsSince(entries, marker.startedAt),
    text: '',
    error: KILLED_UNRECORDED,
    started_at: marker.startedAt,
    ended_at: endedAt,
    attempts: 1,
    errors: [
      'the process was killed before it could write this row (SIGKILL or a crash); cost and turns were taken from the stored transcript by the next start',
    ],
    resumed: marker.resumed,
    retired: [],
    context,
    duration_s: Math.round((endedAt - marker.startedAt) * 100) / 100,
    run: marker.run,
  };
}

export interface BookingSource {
  /** The session's stored entries, as appended. */
  entries(sessionId: string): SessionStoreEntry[];
  /** The session's main-thread context at its last turn. */
  context(sessionId: string): number;
}

/**
 * Books every killed attempt in `runDir` (markers of processes that are gone) and removes the
 * markers. Returns the rows added.
 */
export function bookKilledAttempts(
  runDir: string,
  rows: readonly StoredManifestRow[],
  source: BookingSource,
  options: { onWarning?: (line: string) => void } = {},
): ManifestRow[] {
  const booked: ManifestRow[] = [];
  const done: string[] = [];
  for (const marker of readMarkers(runDir)) {
    if (marker.host === hostname() && processIsAlive(marker.pid)) continue;
    if (marker.host !== hostname()) continue; // a pid means nothing on another host
    done.push(marker.sessionId);
    // A row that ended after the attempt started already holds it (the marker outlived its removal).
    const recorded = rows.some(
      (row) =>
        row.session_id === marker.sessionId &&
        typeof row.ended_at === 'number' &&
        row.ended_at >= marker.startedAt,
    );
    if (recorded) continue;
    booked.push(bookedRow(marker, source.entries(marker.sessionId), source.context(marker.sessionId)));
  }
  if (booked.length > 0 && !addManifestRows(runDir, booked, options)) return [];
  clearInFlight(runDir, done);
  if (booked.length > 0) {
    const cost = booked.reduce((sum, row) => sum + row.cost_usd, 0);
    options.onWarning?.(
      `${booked.length === 1 ? 'A step' : `${booked.length} steps`} of an earlier run ended without a manifest row (the process was killed): booked ${booked.map((row) => row.step).join(', ')} with $${cost.toFixed(4)} from the stored transcript.`,
    );
  }
  return booked;
}
