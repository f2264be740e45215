import { describe, expect, it } from 'vitest';
import { type PostgresTarget, parseStoreTarget } from '../../../../src/config/store-url.js';
import {
  adviceFor,
  errorCode,
  PostgresStoreError,
  storeFailure,
} from '../../../../src/store/postgres/errors.js';

const target = parseStoreTarget('postgres://flower:pw@db.example:6543/tasks?schema=team') as PostgresTarget;
const failure = (code: string | undefined, message = 'server said no') =>
  Object.assign(new Error(message), code === undefined ? {} : { code });

describe('adviceFor: what to fix, per failure', () => {
  it.each([
    ['ECONNREFUSED', 'nothing accepts connections at db.example:6543: start PostgreSQL there'],
    ['ENOTFOUND', 'the host name "db.example" does not resolve'],
    ['EAI_AGAIN', 'the host name "db.example" does not resolve'],
    ['ETIMEDOUT', 'db.example:6543 cannot be reached'],
    ['ECONNRESET', 'db.example:6543 closed the connection: run again'],
    ['28P01', 'PostgreSQL rejected the password for user "flower": fix the password in the URL'],
    ['28000', 'PostgreSQL refused user "flower" (server said no)'],
    [
      '3D000',
      'database "tasks" does not exist on db.example:6543: create it (createdb -h db.example -p 6543 tasks)',
    ],
    ['42501', 'user "flower" may not create or use the schema "team"'],
    ['53300', 'db.example:6543 has no free connections'],
    ['57P03', 'db.example:6543 is starting up or shutting down'],
    ['57P01', 'db.example:6543 ended the connection'],
    ['SELF_SIGNED_CERT_IN_CHAIN', 'the TLS certificate of db.example:6543 is not trusted'],
  ])('%s', (code, advice) => {
    expect(adviceFor(failure(code), target)).toContain(advice);
  });

  it.each([
    [
      'SASL: SCRAM-SERVER-FIRST-MESSAGE: client password must be a string',
      'asks user "flower" for a password',
    ],
    ['The server does not support SSL connections', 'does not accept SSL connections'],
    ['timeout expired', 'did not answer in time'],
    ['Query read timeout', 'did not answer in time'],
    ['Connection terminated unexpectedly', 'the connection to db.example:6543 was lost'],
  ])('pg\'s own message "%s"', (message, advice) => {
    expect(adviceFor(failure(undefined, message), target)).toContain(advice);
  });

  it('a rejected login without a password in the URL says to add one', () => {
    const bare = parseStoreTarget('postgres://flower@db.example/tasks') as PostgresTarget;
    expect(adviceFor(failure('28P01'), bare)).toContain('the URL has none: add it');
  });

  it('has nothing to say about failures a URL cannot fix', () => {
    expect(adviceFor(failure('23505', 'duplicate key'), target)).toBeUndefined();
  });

  it('finds the code inside an AggregateError (IPv4 and IPv6 attempts)', () => {
    const both = new AggregateError([failure('ECONNREFUSED'), failure('ECONNREFUSED')], '');
    expect(errorCode(both)).toBe('ECONNREFUSED');
    expect(adviceFor(both, target)).toContain('nothing accepts connections');
  });
});

describe('storeFailure', () => {
  it('is one line naming the store (password masked), the action and the advice', () => {
    const error = storeFailure('append to p/s', failure('ECONNREFUSED'), target);
    expect(error).toBeInstanceOf(PostgresStoreError);
    expect(error.code).toBe('ECONNREFUSED');
    expect(error.message).toBe(
      'PostgreSQL store postgres://flower:***@db.example:6543/tasks?schema=team: could not append to p/s: nothing accepts connections at db.example:6543: start PostgreSQL there, or fix the host and port in the URL.',
    );
  });

  it('without advice, gives the detail on one line and says nothing was changed', () => {
    const error = storeFailure('load p/s', failure('XX000', 'internal\nerror   here'), target);
    expect(error.message).toBe(
      'PostgreSQL store postgres://flower:***@db.example:6543/tasks?schema=team: could not load p/s: internal error here; nothing was changed by this operation.',
    );
  });

  it('passes a PostgresStoreError through unchanged', () => {
    const original = new PostgresStoreError(target.display, 'already explained');
    expect(storeFailure('x', original, target)).toBe(original);
  });
});
