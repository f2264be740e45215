/**
 * The "Store:" line of `flower doctor`: where task state goes and whether flower can use it.
 * Unset means SQLite in each workspace's runs/, a path means that SQLite file (as `openSessionStore`
 * reads it), a value `parseStoreTarget` refuses (a malformed or mistyped URL such as
 * `postgres//host/x`, never read as a path) is the store's error and doctor exits 1, and a
 * PostgreSQL URL is checked read-only (connect, server version, schema state,
 * privileges; nothing is created). pg is imported only then, so a doctor run without a PostgreSQL
 * URL loads no database driver.
 */
import path from 'node:path';
import { parseStoreTarget, type StoreTarget, StoreUrlError } from '../../config/store-url.js';
import type { StoreCheck } from '../../store/postgres/check.js';

export async function checkStoreSetting(value: string | undefined): Promise<StoreCheck> {
  if (value === undefined || value.trim() === '') {
    return { ok: true, line: "SQLite in each workspace's runs/ (FLOWER_STORE_URL is not set)" };
  }
  let target: StoreTarget;
  try {
    target = parseStoreTarget(value);
  } catch (error) {
    if (error instanceof StoreUrlError) return { ok: false, line: error.message };
    throw error;
  }
  if (target.kind === 'sqlite') return { ok: true, line: `SQLite file ${path.resolve(target.path)}` };
  const { checkPostgresStore } = await import('../../store/postgres/check.js');
  return checkPostgresStore(target);
}
