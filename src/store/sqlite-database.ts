/**
 * The SQLite file behind `SqliteSessionStore`: opening it with flower's pragmas, its schema, and
 * the columns newer than the reference's.
 *
 * Schema (the reference's `sessions.db`, so its tooling and queries keep working, plus two
 * columns in `meta`): `entries(store_key, seq, uid, payload)`,
 * `meta(store_key, mtime, next_seq, cost_seq, indexed_to)`,
 * `summaries(project_key, session_id, mtime, data)`.
 * - `entries` is the record; `meta` and `summaries` are derived from it (see the store's header
 *   for when they are brought up to date).
 * - `meta.next_seq` is one past the last row folded into `meta` and `summaries`; rows at or
 *   beyond it are new to them (appended, not yet folded, or written before a crash).
 * - `meta.cost_seq` is the seq of the newest `cost-state` row folded; `meta.indexed_to` says
 *   below which seq every row's type was looked at (rows another writer added are not).
 *
 * Also here: the entry counts per key (`keyCounts`), and counting them without opening a store
 * (`countEntries`, for the pull at a level start).
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { EntryCount } from './backend.js';
import { checkSessionKey } from './session-key.js';
import { openCheckedDatabase } from './sqlite-integrity.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS entries (
    store_key TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    uid       TEXT,
    payload   TEXT NOT NULL,
    PRIMARY KEY (store_key, seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS entries_uid
    ON entries(store_key, uid) WHERE uid IS NOT NULL;
CREATE TABLE IF NOT EXISTS meta (
    store_key  TEXT PRIMARY KEY,
    mtime      INTEGER NOT NULL,
    next_seq   INTEGER NOT NULL,
    cost_seq   INTEGER,
    indexed_to INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS summaries (
    project_key TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    mtime       INTEGER NOT NULL,
    data        TEXT NOT NULL,
    PRIMARY KEY (project_key, session_id)
);
`;

/** Columns a database written by the reference (or an older flower) lacks in `meta`. */
const META_COLUMNS: Record<string, string> = {
  cost_seq: 'ALTER TABLE meta ADD COLUMN cost_seq INTEGER',
  indexed_to: 'ALTER TABLE meta ADD COLUMN indexed_to INTEGER NOT NULL DEFAULT 0',
};

/** Open (creating if needed) the database file with flower's pragmas and schema. */
export function openDatabase(
  file: string,
  options: { busyTimeoutMs?: number; onWarning?: (line: string) => void },
): Database.Database {
  mkdirSync(path.dirname(file), { recursive: true });
  // Checked before anything is written to it; a damaged file is set aside (sqlite-integrity.ts).
  const db = openCheckedDatabase(file, options.onWarning ? { onWarning: options.onWarning } : {});
  try {
    db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    db.pragma('journal_mode = WAL');
    // The local JSONL is the primary copy (the store is a mirror), so WAL's NORMAL sync —
    // durable against process crashes, not power loss — is the right trade for speed.
    db.pragma('synchronous = NORMAL');
    db.exec(SCHEMA);
    addMissingColumns(db);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/** Bring a reference-era `meta` table up to date; safe when two processes open the file at once. */
function addMissingColumns(db: Database.Database): void {
  const missing = (): string[] => {
    const present = new Set(
      db
        .prepare<[], { name: string }>('PRAGMA table_info(meta)')
        .all()
        .map((column) => column.name),
    );
    return Object.keys(META_COLUMNS).filter((column) => !present.has(column));
  };
  if (missing().length === 0) return;
  db.transaction(() => {
    for (const column of missing()) db.exec(META_COLUMNS[column] as string);
  }).immediate();
}

/** Keys sharing `prefix` form one contiguous range: [prefix, prefix with its last char + 1). */
export function prefixRange(prefix: string): [string, string] {
  const last = prefix.charCodeAt(prefix.length - 1);
  return [prefix, prefix.slice(0, -1) + String.fromCharCode(last + 1)];
}

export const COUNTS_IN_RANGE =
  'SELECT store_key, count(*) AS entries FROM entries WHERE store_key >= ? AND store_key < ? GROUP BY store_key';

/** Rows of `COUNTS_IN_RANGE` over `projectKey`'s range as counts per key, keys outside the rules left out. */
export function keyCounts(
  projectKey: string,
  rows: ReadonlyArray<{ store_key: string; entries: number }>,
): EntryCount[] {
  const prefix = `${projectKey}/`;
  return rows.flatMap((row) => {
    // `split` gives at least one part.
    const [sessionId, ...rest] = row.store_key.slice(prefix.length).split('/') as [string, ...string[]];
    const subpath = rest.join('/');
    // A key outside the rules (an older version's: a bad subpath, an empty session id) is no
    // transcript a reader could ask for.
    return typeof checkSessionKey({ projectKey, sessionId, subpath }) === 'string'
      ? []
      : [{ sessionId, subpath, entries: row.entries }];
  });
}

/**
 * `projectKey`'s entry counts in `file` through one plain connection: no integrity check, schema
 * or statements beyond this one (opening the store costs about 6 ms of CPU, this about 2; the
 * pull at a level start reads nothing else). A connection that may write, on purpose: closing it
 * removes the WAL, where a read-only one leaves `-wal` and `-shm` behind, and a WAL beside the
 * file costs the next open its whole-file check (sqlite-integrity.ts). Empty when there is no
 * file; throws SQLite's error when it cannot be read (the store's open says what to do).
 */
export function countEntries(file: string, projectKey: string): EntryCount[] {
  if (!existsSync(file)) return [];
  const db = new Database(file, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    const rows = db
      .prepare<[string, string], { store_key: string; entries: number }>(COUNTS_IN_RANGE)
      .all(...prefixRange(`${projectKey}/`));
    return keyCounts(projectKey, rows);
  } finally {
    db.close();
  }
}
