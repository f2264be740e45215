/**
 * `flower doctor`'s look at a PostgreSQL store: can flower connect, and is the schema usable?
 *
 * Invariants:
 * - Read-only: it connects, reads the server version, the schema's version row and the user's
 *   privileges, and creates or changes nothing (a doctor run must not set up a database).
 * - Bounded: one connection, each wait on it (connecting, every query, the goodbye) bounded by
 *   `connectTimeoutMs` or connection.ts's policy, closed before returning.
 * - Never throws: the answer is one line, either what was found or what to fix.
 */
import type { PostgresTarget } from '../../config/store-url.js';
import { clientConfig, endClient, guardClient } from './connection.js';
import { adviceFor, errorCode, errorText } from './errors.js';
import { pg } from './pg-driver.js';
import { FAMILIES } from './schema.js';

export interface StoreCheck {
  ok: boolean;
  line: string;
}

export async function checkPostgresStore(
  target: PostgresTarget,
  connectTimeoutMs = 5000,
): Promise<StoreCheck> {
  const where = `${target.host}:${target.port}/${target.database}`;
  const client = guardClient(
    new pg.Client(
      clientConfig(
        target,
        { connectTimeoutMs, queryTimeoutMs: connectTimeoutMs, statementTimeoutMs: connectTimeoutMs },
        'flower doctor',
      ),
    ),
  );
  try {
    await client.connect();
    const version = (await client.query<{ server_version: string }>('SHOW server_version')).rows[0]
      ?.server_version;
    const server = `PostgreSQL ${version ?? '(unknown version)'} at ${where}`;
    const { rows } = await client.query<{ schema_exists: boolean; may_create: boolean; may_use: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS schema_exists,
              has_database_privilege(current_database(), 'CREATE') AS may_create,
              COALESCE((SELECT has_schema_privilege(oid, 'CREATE') FROM pg_namespace WHERE nspname = $1), false) AS may_use`,
      [target.schema],
    );
    const privileges = rows[0];
    if (!privileges?.schema_exists) {
      return privileges?.may_create
        ? { ok: true, line: `${server}; schema "${target.schema}" will be created on first use` }
        : {
            ok: false,
            line: `${server}: the schema "${target.schema}" does not exist and ${target.user || 'this user'} may not create it: create it for the user (CREATE SCHEMA ${target.schema} AUTHORIZATION ${target.user || 'the user'}) or name an existing one with ?schema=`,
          };
    }
    const versions = await client
      .query<{ family: string; version: number }>(
        `SELECT family, version FROM "${target.schema}".schema_versions`,
      )
      .then(({ rows: found }) => new Map(found.map((row) => [row.family, row.version])))
      .catch((error) => {
        if (errorCode(error) === '42P01') return new Map<string, number>();
        throw error;
      });
    const states = FAMILIES.map((family) => {
      const found = versions.get(family.name);
      const known = family.migrations.length;
      if (found === undefined) return { ok: true, text: `${family.name}: created on first use` };
      if (found > known)
        return { ok: false, text: `${family.name} v${found} is newer than this flower (v${known})` };
      return {
        ok: true,
        text: found < known ? `${family.name} v${found}, upgraded on first use` : `${family.name} v${found}`,
      };
    });
    if (states.some((state) => !state.ok)) {
      return {
        ok: false,
        line: `${server}, schema "${target.schema}": ${states.map((state) => state.text).join(', ')}: upgrade flower on this machine (a newer checkout or tarball, installed as the README's Set up says)`,
      };
    }
    const needsTables = FAMILIES.some(
      (family) => (versions.get(family.name) ?? 0) < family.migrations.length,
    );
    if (needsTables && !privileges.may_use) {
      return {
        ok: false,
        line: `${server}: ${target.user || 'this user'} may not create tables in the schema "${target.schema}": grant it (GRANT CREATE ON SCHEMA ${target.schema} TO ${target.user || 'the user'}) or name another schema with ?schema=`,
      };
    }
    return {
      ok: true,
      line: `${server}, schema "${target.schema}" (${states.map((state) => state.text).join(', ')})`,
    };
  } catch (error) {
    const advice = adviceFor(error, target) ?? errorText(error).replace(/\s+/g, ' ');
    return { ok: false, line: `${target.display}: ${advice}` };
  } finally {
    await endClient(client);
  }
}
