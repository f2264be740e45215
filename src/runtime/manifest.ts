/**
 * `runs/manifest.json`: the books of every step any flower process ran in this run directory.
 *
 * A JSON array of manifest rows (see `step-result.ts`), one per step-attempt label per process.
 * Invariants:
 * - A process owns exactly the rows carrying its run id. Each save re-reads the file under the
 *   lock, keeps every row of other runs as it is, and replaces its own rows with its current
 *   results, so repeated saves never duplicate rows and parallel processes never lose each
 *   other's rows.
 * - Rows written by other versions are kept verbatim, unknown keys included: the merge only looks
 *   at `run`.
 * - Saving never throws: the manifest is a record of the work, and failing to write it must not
 *   fail the work. Problems go to the warning callback instead.
 */
import { join } from 'node:path';
import {
  type JsonDocumentCodec,
  type JsonFileOptions,
  type PeekedDocument,
  peekJsonDocument,
  readJsonDocument,
  updateJsonDocument,
} from './locked-json-file.js';
import { type ManifestRow, type StepResult, toManifestRow } from './step-result.js';
import { emitTaskChange } from './task-changes.js';

/** A row as found on disk: flower's own shape, or anything another version wrote. */
export type StoredManifestRow = Partial<ManifestRow> & Record<string, unknown>;

export const MANIFEST_FILE = 'manifest.json';

export function manifestPath(runDir: string): string {
  return join(runDir, MANIFEST_FILE);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An array of objects; anything else is treated as corrupt and set aside, never silently dropped. */
const manifestCodec: JsonDocumentCodec<StoredManifestRow[]> = {
  empty: () => [],
  decode: (value) =>
    Array.isArray(value) && value.every(isPlainObject) ? (value as StoredManifestRow[]) : undefined,
};

/** All rows in the manifest of `runDir` (empty when there is none yet). */
export function readManifest(runDir: string, options: JsonFileOptions = {}): StoredManifestRow[] {
  return readJsonDocument(manifestPath(runDir), manifestCodec, options);
}

/**
 * The rows of the manifest of `runDir` read without the lock and without setting a corrupt file
 * aside (see `peekJsonDocument`): for read-only views of a run directory a flower may be writing.
 */
export function peekManifest(runDir: string): PeekedDocument<StoredManifestRow[]> {
  return peekJsonDocument(manifestPath(runDir), manifestCodec);
}

/**
 * Saves this process's results: rows of other runs are kept, rows of `run` are replaced by
 * `results`. Returns false (after telling `onWarning`) when the file could not be written.
 */
export function saveManifestRows(
  runDir: string,
  run: string,
  results: readonly StepResult[],
  options: JsonFileOptions = {},
): boolean {
  const own = results.map((result) => ({ ...toManifestRow(result), run }));
  try {
    updateJsonDocument(
      manifestPath(runDir),
      manifestCodec,
      (rows) => [...rows.filter((row) => row.run !== run), ...own],
      options,
    );
    emitTaskChange(runDir, { kind: 'manifest-run', run, rows: own });
    return true;
  } catch (error) {
    options.onWarning?.(
      `Could not write ${manifestPath(runDir)}: ${(error as Error).message}. The step results of this ` +
        'run are only in memory.',
    );
    return false;
  }
}

/**
 * Appends `rows` as they are, keeping every row already there: for rows of a process that can no
 * longer write its own (see `in-flight.ts`). Returns false (after telling `onWarning`) on failure.
 */
export function addManifestRows(
  runDir: string,
  rows: readonly ManifestRow[],
  options: JsonFileOptions = {},
): boolean {
  try {
    const added = rows.map((row): StoredManifestRow => ({ ...row }));
    updateJsonDocument(manifestPath(runDir), manifestCodec, (current) => [...current, ...added], options);
    emitTaskChange(runDir, { kind: 'manifest-added', rows: added });
    return true;
  } catch (error) {
    options.onWarning?.(`Could not write ${manifestPath(runDir)}: ${(error as Error).message}.`);
    return false;
  }
}

/**
 * Replaces the manifest of `runDir` by what `change` makes of it, under the lock, emitting
 * nothing: for the shared store's pull (runtime/shared/pull.ts), which brings in other
 * processes' rows and must not send them back as this process's.
 */
export function replaceManifestRows(
  runDir: string,
  change: (rows: StoredManifestRow[]) => StoredManifestRow[],
  options: JsonFileOptions = {},
): StoredManifestRow[] {
  return updateJsonDocument(manifestPath(runDir), manifestCodec, change, options);
}
