/**
 * The books of a step whose process was killed with SIGKILL.
 *
 * SIGTERM and SIGHUP write the step in flight to the manifest (`signals.ts`); SIGKILL runs nothing,
 * so the killed attempt's cost and turns were simply missing from the manifest (observed). While a
 * session runs, a small marker `runs/in-flight/<session>.json` says which process runs it, for
 * which step, and what the session had cost before this attempt. The manifest row replaces the
 * marker when the step ends. A marker whose process is gone therefore means a killed step: the next
 * runtime in the run directory books it from the session's stored transcript and removes the
 * marker. The cost is the ledger's figure: the tokens of every response since the attempt
 * started (main thread and workers, each response once), priced by `config/prices.ts`, so the
 * row's cost and its ledger (what `flower report` shows) are one figure and the books agree with
 * the report by construction. The SDK's own total (the growth of the last `cost-state` over the
 * baseline) only stands in when a model is missing from the price table: the binary writes a
 * cost-state only when a query ends, so it never covers the replies of the query a kill cut
 * short. The row says which figure it is. The replies come from the store after the start-up
 * recovery, which takes what the SDK had not handed over from the binary's own transcript (for a
 * resumed session: the SDK's resume copy, `store/transcript-recovery.ts`).
 *
 * Later attempts of the same step in the same session (a retry, an interrupt's continuation) keep
 * the marker's first start and baseline (`nextMarker`): their earlier replies have no row either.
 *
 * Invariants:
 * - A marker of a live process (same host) is never touched: another flower may be working here.
 * - A marker of another host is never judged, except when this process holds the task with the
 *   PostgreSQL lock (`holdAcrossMachines`): then no flower anywhere runs it, and the marker is a
 *   killed attempt of another machine, booked here like a local one.
 * - Booking appends one row under the killed process's run id and keeps every other row; a row
 *   of the marker's own run and session that ended after the marker's start means nothing was
 *   lost, and no second row is added. Rows of other sessions say nothing about it: the judge's
 *   row, written after the killed attempt started, once hid it and its cost was never booked. Nor
 *   do rows of other runs of the same session: two machines continue one session, and the row of
 *   a holder that was cut off, stopped and ended after the next holder started hid that next
 *   holder's killed attempt (partition chaos test: 47 replies unbooked).
 * - Writing or removing a marker never throws: the books are a record of the work, not a reason
 *   to stop it.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE } from '../config/private-files.js';
import { lastCostStateIn, totalCostOf } from '../store/cost-state.js';
import { entryTime, ledgerCost, roundUsd, type SessionTranscripts, stepLedger } from './ledger.js';
import { processIsAlive } from './locked-json-file.js';
import { addManifestRows, type StoredManifestRow } from './manifest.js';
import type { ManifestRow } from './step-result.js';
import { emitTaskChange } from './task-changes.js';

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

/**
 * The marker to write for an attempt, given the one already there. Pure. A later attempt of the
 * same step in the same session and run (a retry, the continuation after an interrupt) keeps the
 * first one's start and baseline: the earlier attempts' replies have no row yet either, and
 * overwriting them made a kill lose their cost.
 */
export function nextMarker(previous: InFlightMarker | undefined, next: InFlightMarker): InFlightMarker {
  const sameStep =
    previous !== undefined &&
    previous.sessionId === next.sessionId &&
    previous.run === next.run &&
    previous.step === next.step &&
    previous.pid === next.pid &&
    previous.host === next.host;
  return sameStep
    ? { ...next, startedAt: previous.startedAt, baselineUsd: previous.baselineUsd, resumed: previous.resumed }
    : next;
}

function readMarker(runDir: string, sessionId: string): InFlightMarker | undefined {
  let value: Partial<InFlightMarker> | null | undefined;
  try {
    value = JSON.parse(readFileSync(markerPath(runDir, sessionId), 'utf8')) as Partial<InFlightMarker> | null;
  } catch {
    // no marker yet, or a torn one
  }
  return value && isMarker(value) ? value : undefined;
}

function isMarker(value: Partial<InFlightMarker>): value is InFlightMarker {
  return (
    // Stryker disable next-line ConditionalExpression,LogicalOperator: nextMarker compares the session with the new marker's, so a marker without one never lends its fields
    typeof value.sessionId === 'string' &&
    // Stryker disable next-line ConditionalExpression: nextMarker compares the pid with this process's, so a marker without one never lends its fields
    typeof value.pid === 'number' &&
    typeof value.startedAt === 'number' &&
    typeof value.baselineUsd === 'number'
  );
}

/** Records that this process now runs `sessionId` for `step`. */
export function markInFlight(runDir: string, marker: Omit<InFlightMarker, 'pid' | 'host'>): void {
  try {
    mkdirSync(join(runDir, IN_FLIGHT_DIRECTORY), { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
    const record = nextMarker(readMarker(runDir, marker.sessionId), {
      ...marker,
      pid: process.pid,
      host: hostname(),
    });
    writeFileSync(markerPath(runDir, marker.sessionId), `${JSON.stringify(record)}\n`, {
      mode: PRIVATE_FILE_MODE,
    });
    emitTaskChange(runDir, { kind: 'in-flight', marker: record });
  } catch {
    // Without a marker a SIGKILL loses this attempt's books, as before; the work goes on.
  }
}

/** The step's row was written: its sessions are no longer in flight. */
export function clearInFlight(runDir: string, sessionIds: readonly string[]): void {
  for (const sessionId of sessionIds) {
    try {
      // Stryker disable next-line ObjectLiteral,BooleanLiteral: without force a missing marker throws, and the catch below takes it just the same
      rmSync(markerPath(runDir, sessionId), { force: true });
    } catch {
      // A marker left behind only costs the next start a look: its row is written, so it books nothing.
    }
  }
  if (sessionIds.length > 0)
    emitTaskChange(runDir, { kind: 'in-flight-cleared', sessionIds: [...sessionIds] });
}

/**
 * Writes a marker as another process recorded it (pid and host kept), emitting nothing: for the
 * shared store's pull. Never throws.
 */
export function restoreInFlight(runDir: string, marker: InFlightMarker): void {
  try {
    mkdirSync(join(runDir, IN_FLIGHT_DIRECTORY), { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
    writeFileSync(markerPath(runDir, marker.sessionId), `${JSON.stringify(marker)}\n`, {
      mode: PRIVATE_FILE_MODE,
    });
  } catch {
    // As with markInFlight: without it a killed attempt's books are lost, nothing else.
  }
}

/** The markers in `runDir` as written (for the shared store's sync). */
export function inFlightMarkers(runDir: string): InFlightMarker[] {
  return readMarkers(runDir);
}

/** Run directories whose task this process holds across machines (the PostgreSQL task lock). */
const heldAcrossMachines = new Set<string>();

/**
 * Says that this process holds `runDir`'s task with a lock every machine respects (shared-task.ts):
 * then no other flower anywhere runs it, so a marker of another host is a killed attempt too.
 * Returns the undo.
 */
export function holdAcrossMachines(runDir: string): () => void {
  const key = resolve(runDir);
  heldAcrossMachines.add(key);
  return () => heldAcrossMachines.delete(key);
}

/**
 * Whether the process a marker names is gone. A pid means nothing on another host, so such a
 * marker is not judged — unless this process holds the task across machines.
 */
function orphaned(marker: InFlightMarker, runDir: string): boolean {
  if (marker.host !== hostname()) return heldAcrossMachines.has(resolve(runDir));
  // Stryker disable next-line ConditionalExpression: this process is alive, so processIsAlive below says the same
  if (marker.pid === process.pid) return false;
  return !processIsAlive(marker.pid);
}

/** The sessions whose processes were killed while running them (their markers are still there). */
export function killedSessions(runDir: string): string[] {
  return killedAttempts(runDir).map((marker) => marker.sessionId);
}

/** The markers of attempts whose processes were killed while running them. */
export function killedAttempts(runDir: string): InFlightMarker[] {
  return readMarkers(runDir).filter((marker) => orphaned(marker, runDir));
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
    if (!name.endsWith('.json')) return [];
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

/**
 * The SDK's total if the binary wrote a `cost-state` after the attempt started (after the first
 * entry stamped at or after `since`; cost-state entries carry no time of their own).
 */
function costStateSince(entries: readonly SessionStoreEntry[], since: number): number | undefined {
  const first = entries.findIndex((entry) => (entryTime(entry) ?? Number.NEGATIVE_INFINITY) >= since);
  return first < 0 ? undefined : totalCostOf(lastCostStateIn(entries.slice(first)));
}

const KILLED_NOTE =
  'the process was killed before it could write this row (SIGKILL or a crash); the next start booked it from the stored transcript';

/** The row for a killed attempt, from its marker and the session's stored transcripts. */
export function bookedRow(
  marker: InFlightMarker,
  session: SessionTranscripts | undefined,
  context: number,
): ManifestRow {
  // Stryker disable next-line ArrayDeclaration: without a session the ledger is empty and priced at 0 (main is never read for a cost-state), and an entry without a time adds no time
  const main = session?.main ?? [];
  const times = [main, ...(session?.subagents ?? []).map((subagent) => subagent.entries)]
    .flat()
    .map(entryTime)
    .filter((at): at is number => at !== undefined);
  const endedAt = Math.max(marker.startedAt, ...times);
  const window = { from: marker.startedAt, to: endedAt };
  const ledger = stepLedger(session ? [session] : [], window);
  const priced = ledgerCost(ledger);
  // Stryker disable next-line ConditionalExpression: a priced cost is used whenever there is one, so the cost-state figure is then never read
  const reported = priced === null ? costStateSince(main, marker.startedAt) : undefined;
  const cost = priced ?? (reported !== undefined ? Math.max(0, reported - marker.baselineUsd) : 0);
  const source =
    priced !== null
      ? 'cost from the tokens of its responses, as the ledger prices them'
      : reported !== undefined
        ? "cost from the SDK's last cost-state (a model the price table lacks)"
        : 'cost unknown (a model the price table lacks)';
  return {
    step: marker.step,
    session_id: marker.sessionId,
    ok: false,
    cost_usd: roundUsd(cost),
    num_turns: ledger.main.turns,
    text: '',
    error: KILLED_UNRECORDED,
    started_at: marker.startedAt,
    ended_at: endedAt,
    attempts: 1,
    errors: [`${KILLED_NOTE}; ${source}`],
    resumed: marker.resumed,
    retired: [],
    context,
    duration_s: Math.round((endedAt - marker.startedAt) * 100) / 100,
    run: marker.run,
    main: { ...ledger.main },
    workers: ledger.workers.map((worker) => ({ ...worker })),
  };
}

export interface BookingSource {
  /** The session's stored transcripts (main and subagents, as appended); undefined when gone. */
  transcripts(sessionId: string): Promise<SessionTranscripts | undefined>;

  /** The session's main-thread context at its last turn. */
  context(sessionId: string): number;
}

/**
 * Books every killed attempt in `runDir` (markers of processes that are gone) and removes the
 * markers. Returns the rows added.
 */
export async function bookKilledAttempts(
  runDir: string,
  rows: readonly StoredManifestRow[],
  source: BookingSource,
  options: { onWarning?: (line: string) => void; onVerbose?: (line: string) => void } = {},
): Promise<ManifestRow[]> {
  const booked: ManifestRow[] = [];
  const done: string[] = [];
  for (const marker of readMarkers(runDir)) {
    // A live process here is another flower at work.
    if (!orphaned(marker, runDir)) continue;
    done.push(marker.sessionId);
    // A row of this attempt's own process and session that ended after the attempt started
    // already holds it (the marker outlived its removal); no other row does (see the header).
    const recorded = rows.some(
      (row) =>
        row.session_id === marker.sessionId &&
        row.run === marker.run &&
        typeof row.ended_at === 'number' &&
        row.ended_at >= marker.startedAt,
    );
    if (recorded) continue;
    const session = await source.transcripts(marker.sessionId);
    booked.push(bookedRow(marker, session, source.context(marker.sessionId)));
  }
  if (booked.length > 0 && !addManifestRows(runDir, booked, options)) return [];
  clearInFlight(runDir, done);

  if (booked.length > 0) {
    const cost = booked.reduce((sum, row) => sum + row.cost_usd, 0);
    options.onVerbose?.(
      `${booked.length === 1 ? 'A step' : `${booked.length} steps`} of an earlier run ended without a manifest row (the process was killed): booked ${booked.map((row) => row.step).join(', ')} with $${cost.toFixed(4)} from the stored transcript.`,
    );
  }
  return booked;
}
