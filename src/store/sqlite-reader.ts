/**
 * A read-only view of `runs/sessions.db` for the commands that only look (`flower status`,
 * `report`, `log`), safe while a flower writes the same file.
 *
 * Why not `SqliteSessionStore`: it opens the file for writing, checks it and prepares every
 * statement it has; it also used to load the SDK, which cost a viewer a third of a second before
 * it read a byte (measured with `npm run bench:report`). This reader depends only on the
 * on-disk schema, which is kept compatible with the reference's on purpose (see
 * `sqlite-session-store.ts`).
 *
 * Invariants:
 * - Opens an existing file read-only (never creates, migrates or writes it). SQLite keeps its
 *   `-wal`/`-shm` companions next to a WAL database, as for any reader.
 * - Entries come back exactly as stored, in append order; a row that is not a JSON object fails
 *   the whole transcript with a message naming the file, as the store does.
 * - Every failure is a `SessionReadError` with one line saying what to do.
 */
import type { SessionKey } from '@anthropic-ai/claude-agent-sdk';
import Database from 'better-sqlite3';
import { storeKeyOf } from './session-key.js';
import type { Entry } from './transcript.js';

/** The database could not be read; the message names the file and says what to do. */
export class SessionReadError extends Error {
  override name = 'SessionReadError';
}

/** Keys sharing `prefix` form one contiguous range: [prefix, prefix with its last char + 1). */
function prefixRange(prefix: string): [string, string] {
  const last = prefix.charCodeAt(prefix.length - 1);
  return [prefix, prefix.slice(0, -1) + String.fromCharCode(last + 1)];
}

export class SqliteSessionReader {
  readonly path: string;
  private readonly db: Database.Database;
  private readonly statements: ReturnType<SqliteSessionReader['prepare']>;

  constructor(file: string, options: { busyTimeoutMs?: number } = {}) {
    this.path = file;
    this.db = this.guard('open', () => new Database(file, { readonly: true, fileMustExist: true }));
    try {
      this.statements = this.guard('read', () => {
        this.db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
        return this.prepare();
      });
    } catch (error) {
      this.db.close();
      throw error;
    }
  }

  private prepare() {
    const db = this.db;
    return {
      payloads: db
        .prepare<[string], string>('SELECT payload FROM entries WHERE store_key = ? ORDER BY seq')
        .pluck(),
      keysInRange: db.prepare<[string, string], { store_key: string; mtime: number }>(
        'SELECT store_key, mtime FROM meta WHERE store_key >= ? AND store_key < ?',
      ),
      projects: db
        .prepare<[], string>(
          "SELECT DISTINCT substr(store_key, 1, instr(store_key, '/') - 1) AS project FROM meta ORDER BY project",
        )
        .pluck(),
    };
  }

  /** Project keys with at least one transcript, sorted. */
  projects(): string[] {
    return this.guard('list projects', () => this.statements.projects.all());
  }

  /** The main sessions of a project, with the epoch-ms time of their last write. */
  listSessions(projectKey: string): Array<{ sessionId: string; mtime: number }> {
    const prefix = `${projectKey}/`;
    return this.guard('list sessions', () => this.statements.keysInRange.all(...prefixRange(prefix)))
      .map((row) => ({ sessionId: row.store_key.slice(prefix.length), mtime: row.mtime }))
      .filter((row) => !row.sessionId.includes('/'));
  }

  /** The subpaths stored under a session (its subagents' transcripts). */
  listSubkeys(key: { projectKey: string; sessionId: string }): string[] {
    const prefix = `${key.projectKey}/${key.sessionId}/`;
    return this.guard('list subkeys', () => this.statements.keysInRange.all(...prefixRange(prefix))).map(
      (row) => row.store_key.slice(prefix.length),
    );
  }

  /** The entries exactly as appended, or null when the key was never written. */
  load(key: SessionKey): Entry[] | null {
    const storeKey = storeKeyOf(key);
    const payloads = this.guard(`load ${storeKey}`, () => this.statements.payloads.all(storeKey));
    if (payloads.length === 0) return null;
    return payloads.map((payload, index) => {
      let value: unknown;
      try {
        value = JSON.parse(payload);
      } catch {
        value = undefined;
      }
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        throw new SessionReadError(
          `The session database ${this.path} holds an unreadable entry for ${storeKey} (row ${index + 1} is not a JSON object); that transcript cannot be shown.`,
        );
      }
      return value as Entry;
    });
  }

  close(): void {
    if (this.db?.open) this.db.close();
  }

  private guard<T>(action: string, operation: () => T): T {
    try {
      return operation();
    } catch (error) {
      if (error instanceof SessionReadError) throw error;
      const code = (error as { code?: string }).code ?? '';
      const detail = error instanceof Error ? error.message : String(error);
      const advice =
        code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT')
          ? 'It is not a readable SQLite database.'
          : code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')
            ? 'Another process holds it locked; try again in a moment.'
            : 'Nothing was changed.';
      throw new SessionReadError(
        `Session database ${this.path}: could not ${action} (${detail}). ${advice}`,
        {
          cause: error,
        },
      );
    }
  }
}
