/**
 * PostgreSQL failures as one line a person can act on. Pure: `adviceFor` maps what pg or the
 * socket reported (a SQLSTATE, a Node error code, or one of pg's own messages) to what to fix,
 * naming the host, database, user or schema involved and never the password.
 *
 * The codes are PostgreSQL's (Appendix A of its manual) and Node's; pg's own client-side messages
 * have no code, so a few are recognised by their text (pg 8.x wording, pinned in package.json).
 */
import type { PostgresTarget } from '../../config/store-url.js';

/** A PostgreSQL store problem; the message is one line naming the server (password masked) and what to do. */
export class PostgresStoreError extends Error {
  /** The store URL as it may be printed (password masked). */
  readonly url: string;
  /** PostgreSQL's SQLSTATE or Node's error code, when there was one. */
  readonly code: string | undefined;
  constructor(url: string, message: string, options?: { cause?: unknown; code?: string }) {
    super(message, options);
    this.name = 'PostgresStoreError';
    this.url = url;
    this.code = options?.code;
  }
}

type Where = Pick<PostgresTarget, 'host' | 'port' | 'database' | 'user' | 'schema' | 'hasPassword'>;

const server = (where: Where): string => `${where.host}:${where.port}`;
const userName = (where: Where): string => (where.user === '' ? 'the default user' : `user "${where.user}"`);

const noPassword = (where: Where): string =>
  `${server(where)} asks ${userName(where)} for a password and the URL has none: add it (postgres://user:password@host/database) or set PGPASSWORD`;

/** The code of a pg or socket error, looking through AggregateError (IPv4 + IPv6 attempts). */
export function errorCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && code !== '') return code;
  const inner = (error as { errors?: unknown }).errors;
  return Array.isArray(inner) ? inner.map(errorCode).find((found) => found !== undefined) : undefined;
}

export function errorText(error: unknown): string {
  if (error instanceof Error) return error.message || errorCode(error) || error.name;
  return String(error);
}

/**
 * What to do about a failure, or undefined when it is not one a person can fix from the URL or the
 * server's set-up (a constraint violation, say): the caller then reports the plain detail.
 */
export function adviceFor(error: unknown, where: Where): string | undefined {
  const code = errorCode(error);
  const text = errorText(error);
  switch (code) {
    case 'ECONNREFUSED':
      return `nothing accepts connections at ${server(where)}: start PostgreSQL there, or fix the host and port in the URL`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `the host name "${where.host}" does not resolve: fix the host in the URL`;
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `${server(where)} cannot be reached: check the host, the port and any firewall in between`;
    case 'ECONNRESET':
    case 'EPIPE':
      return `${server(where)} closed the connection: run again; if it keeps happening, check that PostgreSQL listens there and that the URL's sslmode matches the server`;
    case '28P01':
      return where.hasPassword
        ? `PostgreSQL rejected the password for ${userName(where)}: fix the password in the URL (percent-encode @ : / # as %40 %3A %2F %23)`
        : noPassword(where);
    case '28000':
      return `PostgreSQL refused ${userName(where)} (${text}): fix the user name in the URL, or allow it in the server's pg_hba.conf`;
    case '3D000':
      return `database "${where.database}" does not exist on ${server(where)}: create it (createdb -h ${where.host} -p ${where.port} ${where.database}) or fix the database name in the URL`;
    case '42501':
      return `${userName(where)} may not create or use the schema "${where.schema}" (${text}): grant it (GRANT CREATE ON DATABASE ${where.database} TO ${where.user || 'the user'}), or name a schema the user owns with ?schema=`;
    case '53300':
      return `${server(where)} has no free connections (${text}): wait for other clients to finish, or raise max_connections on the server`;
    case '57P03':
      return `${server(where)} is starting up or shutting down: wait a moment and run again`;
    case '57P01':
    case '57P02':
      return `${server(where)} ended the connection (an administrator or a restart): run again when it is back`;
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY':
    case 'ERR_TLS_CERT_ALTNAME_INVALID':
      return `the TLS certificate of ${server(where)} is not trusted (${text}): give the CA with sslrootcert= in the URL, or connect with sslmode=no-verify if you accept that`;
  }
  if (/client password must be a string/i.test(text)) return noPassword(where);
  if (/does not support SSL/i.test(text)) {
    return `${server(where)} does not accept SSL connections: remove sslmode=require from the URL (or use sslmode=disable)`;
  }
  if (/timeout expired|connection timeout|Query read timeout/i.test(text)) {
    return `${server(where)} did not answer in time: check that it is up and reachable, then run again`;
  }
  if (/Connection terminated/i.test(text)) {
    return `the connection to ${server(where)} was lost: check that the server is up, then run again`;
  }
  return undefined;
}

/** A failed action as a `PostgresStoreError`: "PostgreSQL store <url>: could not <action>: <advice>." */
export function storeFailure(action: string, error: unknown, target: PostgresTarget): PostgresStoreError {
  if (error instanceof PostgresStoreError) return error;
  const advice = adviceFor(error, target);
  const detail = advice ?? `${oneLine(errorText(error))}; nothing was changed by this operation`;
  return new PostgresStoreError(
    target.display,
    `PostgreSQL store ${target.display}: could not ${action}: ${detail}.`,
    { cause: error, code: errorCode(error) },
  );
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
