/**
 * Opening `sessions.db` safely: a damaged database is found when it is opened, said once with what
 * to do, and kept aside, so that flower carries on with a fresh one instead of failing every write.
 *
 * Why at open: a database with two overwritten pages opens without complaint, and only the
 * appends that touch those pages fail. The SDK drops such a batch after its own retries, so a
 * whole session went missing from the store while the run printed "finished" (measured). Checked
 * at open, the damage is noticed before any transcript is mirrored into it.
 *
 * Invariants:
 * - The check is SQLite's `PRAGMA quick_check` (page structure, free lists, record formats, without
 *   the index-versus-table cross-checks of `integrity_check`). It reads every page, so its cost
 *   grows with the file (`npm run bench:store-open`: roughly 0.4 ms per MB on a quiet machine and
 *   2.6 ms per MB on a loaded one, 0.65 s for 250 MB). So the whole file is checked only when it
 *   may have changed behind flower's back: a store closed cleanly leaves a stamp
 *   (`<file>.verified`: size, modification time and inode after the close), and a file that still
 *   matches its stamp, with no WAL beside it, gets the check on its small tables only
 *   (microseconds). A crash, a kill, a parallel writer or any outside change (the two overwritten
 *   pages above) breaks the match.
 * - Files larger than `fullCheckMaxBytes` get the small-table check only, so opening stays
 *   bounded however long the history.
 * - A damaged file is never deleted and never written again: it is renamed, together with its
 *   `-wal` and `-shm` companions (the WAL may hold the newest pages), to
 *   `sessions.db.corrupt-<timestamp>` beside the original, like a corrupt manifest, and a fresh
 *   database is opened in its place. Nothing of the kept file is lost; `sqlite3 <kept> .recover`
 *   salvages what it can.
 * - A busy database (another process holds a lock) is not damage: that error goes to the caller.
 * - The database file is created owner-only before SQLite opens it; SQLite gives its `-wal` and
 *   `-shm` files the database's mode.
 */
import { existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { ensurePrivateFile, PRIVATE_FILE_MODE } from '../config/private-files.js';
import { compactTimestamp } from '../config/timestamp.js';

export interface IntegrityPolicy {
  /**
   * Whole-file check up to this size: 0.1 s on a quiet machine, under a second on a loaded one
   * (measured); beyond it only the small tables are checked, because a multi-gigabyte history must
   * not make a start after a crash slow.
   */
  readonly fullCheckMaxBytes: number;
}

export const defaultIntegrityPolicy: IntegrityPolicy = { fullCheckMaxBytes: 256 * 1024 * 1024 };

export interface CheckedOpenOptions {
  /** Told once, in one line, when a damaged database was set aside. */
  onWarning?: (line: string) => void;
  policy?: IntegrityPolicy;
  /** When the file was set aside (for names); injectable for tests. */
  now?: () => Date;
}

/** What `checkDatabase` found: nothing wrong, or SQLite's own words for the damage. */
export type IntegrityVerdict = { ok: true } | { ok: false; problem: string };

const DAMAGE_CODES = /^SQLITE_(?:CORRUPT|NOTADB)/;

function isDamageError(error: unknown): boolean {
  return DAMAGE_CODES.test((error as { code?: unknown }).code?.toString() ?? '');
}

/**
 * Runs the quick check on an open database: the whole file when `full` and within the size limit,
 * otherwise the small tables only.
 */
export function checkDatabase(
  db: Database.Database,
  fileBytes: number,
  policy: IntegrityPolicy = defaultIntegrityPolicy,
  full = true,
): IntegrityVerdict {
  try {
    const whole = full && fileBytes <= policy.fullCheckMaxBytes;
    const targets = whole ? [''] : existingTables(db, ['meta', 'summaries']);
    for (const target of targets) {
      const rows = db.pragma(target ? `quick_check(${target})` : 'quick_check') as Array<{
        quick_check: string;
      }>;
      const problems = rows.map((row) => row.quick_check).filter((line) => line !== 'ok');
      if (problems.length > 0) return { ok: false, problem: problems.slice(0, 3).join('; ') };
    }
    return { ok: true };
  } catch (error) {
    if (isDamageError(error)) return { ok: false, problem: (error as Error).message };
    throw error;
  }
}

function existingTables(db: Database.Database, names: string[]): string[] {
  const present = new Set(
    db.prepare<[], string>("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all(),
  );
  return names.filter((name) => present.has(name));
}

/** Moves the database and its companions aside under one free name; returns the new database path. */
function setAside(file: string, at: Date): string {
  const base = `${file}.corrupt-${compactTimestamp(at)}`;
  let target = base;
  for (let copy = 2; existsSync(target); copy += 1) target = `${base}-${copy}`;
  for (const suffix of ['-wal', '-shm']) {
    if (existsSync(file + suffix)) renameSync(file + suffix, target + suffix);
  }
  renameSync(file, target);
  return target;
}

/** What the file looked like: enough to notice that anyone wrote to it since. */
function fingerprint(file: string): string | undefined {
  try {
    const stat = statSync(file, { bigint: true });
    return `${stat.size}:${stat.mtimeNs}:${stat.ino}`;
  } catch {
    return undefined;
  }
}

function stampPath(file: string): string {
  return `${file}.verified`;
}

/** Whether `file` is exactly as a clean close left it (its stamp matches, no WAL pending). */
function unchangedSinceClose(file: string): boolean {
  if (existsSync(`${file}-wal`)) return false;
  try {
    return readFileSync(stampPath(file), 'utf8').trim() === fingerprint(file);
  } catch {
    return false;
  }
}

/**
 * Call after a store's connection closed cleanly: the next open skips the whole-file check while
 * the file stays exactly as it is now. Never throws (a missing stamp only costs the next open time).
 */
export function stampCleanClose(file: string): void {
  try {
    // A WAL left means another connection is still open: it is not this process's to vouch for.
    if (existsSync(`${file}-wal`)) return;
    const print = fingerprint(file);
    if (print !== undefined) writeFileSync(stampPath(file), `${print}\n`, { mode: PRIVATE_FILE_MODE });
  } catch {
    // The next open checks the whole file instead.
  }
}

/**
 * Opens the SQLite database at `file` (creating it owner-only), checked as described above. A
 * damaged one is set aside, reported through `onWarning`, and a fresh database is returned.
 */
export function openCheckedDatabase(file: string, options: CheckedOpenOptions = {}): Database.Database {
  ensurePrivateFile(file);
  const full = !unchangedSinceClose(file);
  // From here on this process may change the file: the stamp vouches for nothing any more.
  rmSync(stampPath(file), { force: true });
  const db = new Database(file);
  let verdict: IntegrityVerdict;
  try {
    verdict = checkDatabase(db, statSync(file).size, options.policy, full);
  } catch (error) {
    db.close();
    throw error;
  }
  if (verdict.ok) return db;
  db.close();
  const kept = setAside(file, options.now?.() ?? new Date());
  options.onWarning?.(
    `The session database ${file} is damaged (${verdict.problem}). It was kept as ${kept} and a fresh ` +
      "one was started; transcripts still in the agents' own copies are copied back as sessions resume. " +
      `To salvage the rest: sqlite3 ${kept} .recover | sqlite3 recovered.db`,
  );
  ensurePrivateFile(file);
  return new Database(file);
}
