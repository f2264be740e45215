/**
 * What a task's records say about its sessions, for `flower gc` (store/retention/reachability.ts
 * decides from it): which sessions something live still reaches, and which are retired handoff
 * generations, side questions, or sessions of tasks that `--new` archived.
 *
 * Red lines:
 * - Read-only: files are peeked (never locked, repaired or set aside); the caller holds the task.
 * - "Live" is the union of every source, never a choice between them: every session id in the
 *   task's lineage (whichever workspace it was written for), in the asides' lineage, and in an
 *   in-flight marker (the next start books a killed attempt from that transcript). Records from
 *   elsewhere (the shared record in PostgreSQL) are merged in by the caller the same way.
 * - A lineage that cannot be read means the live sessions are unknown: that refuses collection
 *   (`RetentionRefused`) instead of guessing. A manifest that cannot be read only means fewer
 *   sessions are known to be collectable, which is safe; it is reported as a note.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TaskReferences } from '../../store/retention/reachability.js';
import { IN_FLIGHT_DIRECTORY } from '../in-flight.js';
import { LINEAGE_FILE, peekLineage } from '../lineage.js';
import { peekManifest, type StoredManifestRow } from '../manifest.js';
import { ASIDE_RUN_DIR } from '../task-spend.js';

/** Collection cannot be judged safely; the message says why and what to do. */
export class RetentionRefused extends Error {
  override readonly name = 'RetentionRefused';
}

/** Mutable sets while the references are gathered. */
export interface ReferenceSets {
  live: Set<string>;
  retired: Set<string>;
  asides: Set<string>;
  archived: Set<string>;
  named: Set<string>;
}

export function emptyReferences(): ReferenceSets {
  return { live: new Set(), retired: new Set(), asides: new Set(), archived: new Set(), named: new Set() };
}

/** Adds every set of `more` into `into`. */
export function mergeReferences(into: ReferenceSets, more: TaskReferences): ReferenceSets {
  for (const name of ['live', 'retired', 'asides', 'archived', 'named'] as const)
    for (const id of more[name] ?? []) into[name].add(id);
  return into;
}

export interface GatheredReferences {
  references: ReferenceSets;
  /** Things the user may want to know (an unreadable manifest); one line each. */
  notes: string[];
}

function ids(value: unknown): string[] {
  if (typeof value === 'string' && value !== '') return [value];
  if (Array.isArray(value)) return value.filter((id): id is string => typeof id === 'string' && id !== '');
  return [];
}

/** Adds the sessions named by manifest rows: the retired ones to `retired`, all of them to `all`. */
export function addRowSessions(
  rows: readonly StoredManifestRow[],
  retired: Set<string>,
  all?: Set<string>,
): void {
  for (const row of rows) {
    for (const id of ids(row.retired)) {
      retired.add(id);
      all?.add(id);
    }
    for (const id of ids(row.session_id)) all?.add(id);
  }
}

/** Adds every session id a lineage file in `dir` names; refuses when the file cannot be read. */
function addLineage(dir: string, into: Set<string>): void {
  const peeked = peekLineage(dir);
  if (peeked.state === 'corrupt') {
    throw new RetentionRefused(
      `${join(dir, LINEAGE_FILE)} cannot be read (${peeked.reason}), so which sessions the task still resumes is unknown and nothing was collected. Run flower in this workspace once (it sets the file aside and rebuilds the lineage), then run gc again.`,
    );
  }
  for (const id of Object.values(peeked.document.steps)) into.add(id);
}

/** Session ids of the in-flight markers in `runDir` (unreadable markers are skipped: the name says enough). */
function addInFlight(runDir: string, into: Set<string>): void {
  const directory = join(runDir, IN_FLIGHT_DIRECTORY);
  let names: string[];
  try {
    names = readdirSync(directory);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.endsWith('.json')) continue;
    try {
      const marker = JSON.parse(readFileSync(join(directory, name), 'utf8')) as { sessionId?: unknown };
      for (const id of ids(marker.sessionId)) into.add(id);
    } catch {
      // A marker being written or damaged: its session is kept only if something else names it.
      // The marker's file name is the session id with unsafe characters replaced; keep that too.
      into.add(name.slice(0, -'.json'.length));
    }
  }
}

/** Archived lineages: `<archive>/<stamp>/lineage.json` for each archive directory given. */
function addArchived(archiveDirs: readonly string[], into: Set<string>, notes: string[]): void {
  for (const archive of archiveDirs) {
    let stamps: string[];
    try {
      stamps = readdirSync(archive, { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .map((entry) => entry.name);
    } catch {
      continue;
    }
    for (const stamp of stamps) {
      const peeked = peekLineage(join(archive, stamp));
      if (peeked.state === 'corrupt') {
        notes.push(
          `${join(archive, stamp, LINEAGE_FILE)} cannot be read (${peeked.reason}); that archived task's sessions were kept.`,
        );
        continue;
      }
      for (const id of Object.values(peeked.document.steps)) into.add(id);
    }
  }
}

/**
 * Gathers the references of the task whose run directory is `runDir`. `archiveDirs`: where `--new`
 * archived earlier tasks of this workspace (the starter flow's `notes/archive/`, for each
 * workbench location). Throws `RetentionRefused` when the live lineage cannot be read.
 */
export function gatherTaskReferences(runDir: string, archiveDirs: readonly string[]): GatheredReferences {
  const references = emptyReferences();
  const notes: string[] = [];
  const asideDir = join(runDir, ASIDE_RUN_DIR);
  addLineage(runDir, references.live);
  for (const id of references.live) references.named.add(id);
  addLineage(asideDir, references.live);
  addInFlight(runDir, references.live);
  addInFlight(asideDir, references.live);

  const manifest = peekManifest(runDir);
  if (manifest.state === 'corrupt')
    notes.push(
      `${runDir}/manifest.json cannot be read (${manifest.reason}); no retired generation was collected.`,
    );
  addRowSessions(manifest.document, references.retired, references.named);
  const asides = peekManifest(asideDir);
  if (asides.state === 'corrupt')
    notes.push(
      `${asideDir}/manifest.json cannot be read (${asides.reason}); only sessions in the aside store itself count as asides.`,
    );
  addRowSessions(asides.document, new Set(), references.asides);
  addArchived(archiveDirs, references.archived, notes);
  for (const id of references.archived) references.named.add(id);
  return { references, notes };
}
