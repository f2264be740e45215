import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkDatabase, openCheckedDatabase } from '../../../src/store/sqlite-integrity.js';
import { SqliteSessionStore } from '../../../src/store/sqlite-session-store.js';

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'flower-integrity-'));
  file = join(dir, 'sessions.db');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A store with some history, closed (its WAL checkpointed into the file). */
function populate(): number {
  const store = new SqliteSessionStore(file);
  for (let i = 0; i < 200; i += 1)
    store.appendNow({ projectKey: '-p', sessionId: `s${i % 5}` }, [
      { type: 'user', uuid: `u${i}`, text: 'x'.repeat(2000) },
    ]);
  store.close();
  return statSync(file).size / 4096;
}

function overwritePages(pages: number[]): void {
  const fd = openSync(file, 'r+');
  for (const page of pages) writeSync(fd, randomBytes(4096), 0, 4096, page * 4096);
  closeSync(fd);
}

describe('openCheckedDatabase', () => {
  it('opens a sound database as it is, owner-only, without a word', () => {
    populate();
    const warnings: string[] = [];
    const db = openCheckedDatabase(file, { onWarning: (line) => warnings.push(line) });
    expect(db.prepare('SELECT count(*) AS n FROM entries').get()).toEqual({ n: 200 });
    db.close();
    expect(warnings).toEqual([]);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it.each([
    ['two overwritten pages', (pages: number) => [3, Math.floor(pages / 2)]],
    ['an overwritten header', () => [0]],
  ])('sets a database with %s aside with its WAL, says so once, and opens a fresh one', (_label, pick) => {
    const pages = populate();
    overwritePages(pick(pages));
    const warnings: string[] = [];
    const db = openCheckedDatabase(file, {
      onWarning: (line) => warnings.push(line),
      now: () => new Date(2026, 0, 2, 3, 4, 5),
    });
    db.exec('CREATE TABLE probe (x)');
    db.close();
    const kept = join(dir, 'sessions.db.corrupt-20260102-030405');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`It was kept as ${kept}`);
    expect(warnings[0]).toContain(`sqlite3 ${kept} .recover`);
    expect(existsSync(kept)).toBe(true);
    expect(statSync(file).size).toBeLessThan(statSync(kept).size);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('damage the check reports in words (not as an error) is set aside too, in those words', () => {
    populate();
    // The header's free-list count (offset 36) says 5 free pages where there are none.
    const fd = openSync(file, 'r+');
    writeSync(fd, Buffer.from([0, 0, 0, 5]), 0, 4, 36);
    closeSync(fd);
    const warnings: string[] = [];
    openCheckedDatabase(file, { onWarning: (line) => warnings.push(line) }).close();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('Freelist: size is 0 but should be 5');
  });

  it('a WAL beside the file means it may have changed: the whole file is checked despite a matching stamp', () => {
    const pages = populate();
    overwritePages([Math.floor(pages / 2)]);
    const stat = statSync(file, { bigint: true });
    writeFileSync(`${file}.verified`, `${stat.size}:${stat.mtimeNs}:${stat.ino}\n`);
    // Another program's connection left a WAL (empty: it never committed).
    writeFileSync(`${file}-wal`, '');
    const warnings: string[] = [];
    openCheckedDatabase(file, { onWarning: (line) => warnings.push(line) }).close();
    expect(warnings).toHaveLength(1);
  });

  it('a busy database is not damage: the error goes to the caller and the file stays', () => {
    const holder = new Database(file);
    holder.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1)');
    holder.exec('BEGIN EXCLUSIVE');
    try {
      expect(() => openCheckedDatabase(file)).toThrow(/locked|busy/i);
      expect(readdirSync(dir).filter((name) => name.includes('corrupt'))).toEqual([]);
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
  });

  it('keeps the WAL beside the kept file, never over an earlier kept file', () => {
    populate();
    const store = new SqliteSessionStore(file);
    store.appendNow({ projectKey: '-p', sessionId: 'wal' }, [{ type: 'user', uuid: 'w1' }]);
    // Still open: the WAL holds the newest pages.
    overwritePages([0]);
    const at = () => new Date(2026, 0, 2, 3, 4, 5);
    openCheckedDatabase(file, { now: at }).close();
    store.close();
    overwritePages([0]);
    openCheckedDatabase(file, { now: at }).close();
    const names = readdirSync(dir).sort();
    expect(names).toContain('sessions.db.corrupt-20260102-030405');
    expect(names).toContain('sessions.db.corrupt-20260102-030405-wal');
    expect(names).toContain('sessions.db.corrupt-20260102-030405-2');
  });

  it('checks the whole file only when it changed since a clean close left its stamp', () => {
    const pages = populate(); // closed cleanly: stamped
    expect(existsSync(`${file}.verified`)).toBe(true);
    overwritePages([Math.floor(pages / 2)]);
    // Forge the stamp for the damaged file: the open now trusts it and checks the small tables only.
    const stat = statSync(file, { bigint: true });
    writeFileSync(`${file}.verified`, `${stat.size}:${stat.mtimeNs}:${stat.ino}\n`);
    const warnings: string[] = [];
    openCheckedDatabase(file, { onWarning: (line) => warnings.push(line) }).close();
    expect(warnings).toEqual([]);
    // Opening removed the stamp (this process could have changed the file), so the next open looks.
    expect(existsSync(`${file}.verified`)).toBe(false);
    openCheckedDatabase(file, { onWarning: (line) => warnings.push(line) }).close();
    expect(warnings).toHaveLength(1);
  });

  it('leaves no stamp while another connection keeps a WAL open', () => {
    populate();
    const writer = new SqliteSessionStore(file);
    writer.appendNow({ projectKey: '-p', sessionId: 'x' }, [{ type: 'user', uuid: 'x1' }]);
    const reader = new SqliteSessionStore(file);
    reader.close();
    expect(existsSync(`${file}.verified`)).toBe(false);
    writer.close();
    expect(existsSync(`${file}.verified`)).toBe(true);
  });

  it('checks only the small tables of a file above the size limit', () => {
    const pages = populate();
    overwritePages([Math.floor(pages / 2)]);
    const db = openCheckedDatabase(file, { policy: { fullCheckMaxBytes: 0 } });
    expect(checkDatabase(db, statSync(file).size, { fullCheckMaxBytes: Number.MAX_SAFE_INTEGER }).ok).toBe(
      false,
    );
    expect(checkDatabase(db, statSync(file).size, { fullCheckMaxBytes: 0 }).ok).toBe(true);
    db.close();
  });
});
