/**
 * Where the task state lives: `FLOWER_STORE_URL` (or a library caller's argument) read as either a
 * PostgreSQL URL or a SQLite file path. Pure: nothing here connects, touches a file or throws
 * anything but a `StoreUrlError` whose message is one line saying what to fix.
 *
 * Invariants:
 * - `postgres://` and `postgresql://` (any case) select PostgreSQL; any other `scheme://` is refused
 *   (a typo such as `postgress://` must not quietly become a SQLite file named after the URL).
 * - A value shaped like a URL that lost part of its `://` is refused too, never read as a path
 *   (issue 21: `postgres//127.0.0.1/x` ran a whole paid task on a SQLite file
 *   `postgres/127.0.0.1/x`). With WORD a URL scheme word (a letter, then letters, digits, `+.-`),
 *   a value is such a *mistyped URL* when it starts with
 *   1. WORD and `:` (`postgresql:/host/x`, `postgres:`, `file:x.db`, `localhost:5432/x`,
 *      `user:pw@host/x`), except a drive letter: one letter, `:`, then `\`, `/` or nothing
 *      (`C:\x.db`, `C:/x.db`) is a path;
 *   2. WORD and `//` (`postgres//host/x`, `http//host`): a file path never needs an empty segment
 *      right after its first one, a URL that lost its `:` always has one (a leading `//` alone is
 *      a POSIX absolute path, still a path);
 *   3. a PostgreSQL-like word (postgres, postgresql, postgre, postgress, pgsql, pg, psql; any
 *      case) that ends the value or is followed by `/`, `\` or a space (`postgres/host/x`,
 *      `postgres`); `postgres.db` or `pg-notes.db` are file names, still paths.
 *   The message names the value and what to write instead: the corrected `postgres://` URL when
 *   the word is PostgreSQL-like, and `./<value>` for a SQLite file that really has such a name
 *   (a path starting with `./` or `/` is never a mistyped URL).
 * - Everything else is a SQLite path.
 * - A password is never printed: every message and every `display` form goes through
 *   `maskStoreUrl`, which over-masks rather than under-masks a URL it cannot parse.
 * - flower's own `schema` query parameter (default `flower`, as Prisma spells it) is removed from
 *   the connection string pg receives; every other parameter (sslmode, application_name, …) is
 *   passed through untouched.
 */

/** The schema flower's tables live in when the URL names none. */
export const DEFAULT_STORE_SCHEMA = 'flower';

/** A store URL or path that cannot be used; the message is one line naming what to fix. */
export class StoreUrlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreUrlError';
  }
}

export interface PostgresTarget {
  kind: 'postgres';
  /** What pg connects with: the URL without flower's `schema` parameter. */
  connectionString: string;
  /** The PostgreSQL schema that holds flower's tables. */
  schema: string;
  /** Host name, or the socket directory given as `?host=`. */
  host: string;
  port: number;
  database: string;
  /** Empty when the URL names none (libpq then uses the operating-system user). */
  user: string;
  /** Whether the URL carries a password (pg may still find one in PGPASSWORD or ~/.pgpass). */
  hasPassword: boolean;
  /** The URL as it may be printed: the password masked. */
  display: string;
}

export interface SqliteTarget {
  kind: 'sqlite';
  path: string;
}

export type StoreTarget = PostgresTarget | SqliteTarget;

const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;
const POSTGRES_SCHEMES = new Set(['postgres', 'postgresql']);
/** Rule 1: a scheme word and a colon (a drive letter, `C:\` or `C:/`, excepted below). */
const SCHEME_COLON = /^([A-Za-z][A-Za-z0-9+.-]*):/;
const DRIVE = /^[A-Za-z]:(?:[\\/]|$)/;
/** Rule 2: a scheme word and `//`, the colon lost. */
const SCHEME_NO_COLON = /^([A-Za-z][A-Za-z0-9+.-]*)\/\//;
/** Rule 3: words people write for PostgreSQL, misspellings included. */
const POSTGRES_WORDS = ['postgresql', 'postgress', 'postgres', 'postgre', 'pgsql', 'psql', 'pg'];
const POSTGRES_WORD = new RegExp(`^(${POSTGRES_WORDS.join('|')})(?=$|[\\s/\\\\])`, 'i');
/** Lower-case identifiers only: they need no quoting in a hand-typed psql session either. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
const ENCODING_HINT =
  'percent-encode special characters in the user name and password (@ as %40, : as %3A, / as %2F, # as %23)';
const EXAMPLE = 'postgres://user:password@host:5432/database';

/** Whether the text names a PostgreSQL server rather than a SQLite file. */
export function isPostgresUrl(text: string): boolean {
  const scheme = SCHEME.exec(text.trim())?.[1];
  return scheme !== undefined && POSTGRES_SCHEMES.has(scheme.toLowerCase());
}

/**
 * The URL with its password replaced by `***`, both in the user-info part and in a `password=`
 * query parameter. Works on text that is not a valid URL too: everything between the user name and
 * the last `@` is treated as the password, so an unencoded `@` or `/` in it is still hidden; in a
 * mistyped URL (no `://`), everything between the first `:` and the last `@`.
 */
export function maskStoreUrl(text: string): string {
  let masked = text.replace(/([?&]password=)[^&#]*/gi, '$1***');
  const scheme = SCHEME.exec(masked);
  if (scheme === null) return mistypedUrl(masked) === undefined ? masked : maskMistyped(masked);
  const start = scheme[0].length;
  const at = masked.lastIndexOf('@');
  if (at < start) return masked;
  const colon = masked.indexOf(':', start);
  if (colon === -1 || colon > at) return masked;
  masked = `${masked.slice(0, colon + 1)}***${masked.slice(at)}`;
  return masked;
}

/**
 * The password hidden in a mistyped URL (`postgres//u:pw@h/x`, `u:pw@h/x`): with no `://` to say
 * where the user name starts, everything from the first `:` to the last `@` is hidden, the user
 * name too where it cannot be told apart (`postgresql:/u:pw@h/x` becomes `postgresql:***@h/x`).
 */
function maskMistyped(text: string): string {
  const at = text.lastIndexOf('@');
  const colon = text.indexOf(':');
  return colon === -1 || colon > at ? text : `${text.slice(0, colon + 1)}***${text.slice(at)}`;
}

/**
 * The scheme word of a mistyped URL (rules 1–3 of the header) and what follows its broken
 * separator, or undefined when the text is a path. Call only on text that has no valid `scheme://`.
 */
function mistypedUrl(text: string): { word: string; prefix: string; rest: string } | undefined {
  const match =
    (DRIVE.test(text) ? null : SCHEME_COLON.exec(text)) ??
    SCHEME_NO_COLON.exec(text) ??
    POSTGRES_WORD.exec(text);
  if (match === null) return undefined;
  const word = match[1] as string;
  const separator = /^[\s:/\\]*/.exec(text.slice(word.length))?.[0] ?? '';
  return {
    word,
    prefix: text.slice(0, word.length + separator.length),
    rest: text.slice(word.length + separator.length),
  };
}

/** What to write instead of a URL whose scheme word is PostgreSQL-like, or undefined. */
function correctedUrl(word: string, rest: string): string | undefined {
  if (!POSTGRES_WORDS.includes(word.toLowerCase()) || rest === '') return undefined;
  const scheme = POSTGRES_SCHEMES.has(word.toLowerCase()) ? word.toLowerCase() : 'postgres';
  return maskStoreUrl(`${scheme}://${rest}`);
}

/** Reads a store URL or path; throws `StoreUrlError` with one line naming what to fix. */
export function parseStoreTarget(input: string): StoreTarget {
  const text = input.trim();
  if (text === '') {
    throw new StoreUrlError(`No store given: use a PostgreSQL URL (${EXAMPLE}) or a SQLite file path.`);
  }
  const scheme = SCHEME.exec(text)?.[1];
  if (scheme === undefined) {
    const mistyped = mistypedUrl(text);
    if (mistyped === undefined) return { kind: 'sqlite', path: text };
    const display = maskStoreUrl(text);
    const corrected = correctedUrl(mistyped.word, mistyped.rest);
    const instead = corrected === undefined ? `use ${EXAMPLE}` : `write ${corrected}`;
    throw new StoreUrlError(
      `Store URL ${display} is not a URL flower can use (it starts with "${mistyped.prefix}", not "postgres://"): ${instead}, or ./${display} for a SQLite file of that name.`,
    );
  }
  if (!POSTGRES_SCHEMES.has(scheme.toLowerCase())) {
    const corrected = correctedUrl(scheme, text.slice(scheme.length + 3));
    throw new StoreUrlError(
      `Store URL ${maskStoreUrl(text)} has the scheme "${scheme}:", which flower does not support: ${corrected === undefined ? `use ${EXAMPLE} or a SQLite file path` : `write ${corrected}`}.`,
    );
  }
  return parsePostgresUrl(text);
}

function parsePostgresUrl(text: string): PostgresTarget {
  const display = maskStoreUrl(text);
  const fail = (problem: string): never => {
    throw new StoreUrlError(`Store URL ${display} ${problem}`);
  };
  // Checked before parsing: a "#" in a password cuts the URL short, and the parser's complaint
  // about what is left ("invalid port") would point at the wrong place.
  if (text.includes('#')) fail(`contains "#", which ends a URL: ${ENCODING_HINT}.`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return fail(`is not a valid URL: write it as ${EXAMPLE} and ${ENCODING_HINT}.`);
  }
  const schemas = url.searchParams.getAll('schema');
  if (schemas.length > 1) fail('gives "schema" more than once: keep one.');
  const schema = schemas[0] ?? DEFAULT_STORE_SCHEMA;
  if (!SCHEMA_NAME.test(schema)) {
    fail(
      `names the schema "${schema}": use lower-case letters, digits and underscores (at most 63, not starting with a digit).`,
    );
  }
  const socketHost = url.searchParams.get('host') ?? '';
  const host = decodePart(url.hostname, fail) || socketHost;
  if (host === '') fail(`names no host: write it as ${EXAMPLE}.`);
  const port = url.port === '' ? 5432 : Number(url.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535) fail('has a port outside 1–65535.');
  const database = decodePart(url.pathname.replace(/^\//, ''), fail);
  if (database === '') fail(`names no database: add it after the host, as in ${EXAMPLE}.`);
  if (database.includes('/')) fail(`names the database "${database}", which contains "/": ${ENCODING_HINT}.`);
  const user = decodePart(url.username, fail);
  const password = decodePart(url.password, fail) || url.searchParams.get('password') || '';
  // Re-serialise only when flower's parameter has to go: URLSearchParams rewrites the encoding of
  // the others (a space becomes "+"), and an untouched URL is easier to recognise in pg's errors.
  if (schemas.length > 0) url.searchParams.delete('schema');
  return {
    kind: 'postgres',
    connectionString: schemas.length > 0 ? url.toString() : text,
    schema,
    host,
    port,
    database,
    user,
    hasPassword: password !== '',
    display,
  };
}

function decodePart(part: string, fail: (problem: string) => never): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return fail(`has a broken percent-encoding ("%" must be followed by two hex digits): ${ENCODING_HINT}.`);
  }
}
