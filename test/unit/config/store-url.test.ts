import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_STORE_SCHEMA,
  isPostgresUrl,
  maskStoreUrl,
  parseStoreTarget,
  StoreUrlError,
} from '../../../src/config/store-url.js';

const problem = (text: string): string => {
  try {
    parseStoreTarget(text);
  } catch (error) {
    expect(error).toBeInstanceOf(StoreUrlError);
    return (error as Error).message;
  }
  throw new Error(`${text} was accepted`);
};

describe('parseStoreTarget: which backend', () => {
  it.each([
    ['runs/sessions.db'],
    ['/var/lib/flower/sessions.db'],
    ['C:\\flower\\sessions.db'],
    ['C:/flower/sessions.db'],
    ['./postgres-notes.db'],
    ['sessions.db'],
    ['../shared/sessions.db'],
    ['postgres.db'],
    ['pg-notes.db'],
    ['postgres_backup/sessions.db'],
    ['data/a:b.db'],
    ['./postgres//127.0.0.1/x'],
    ['./postgres:'],
    ['//srv/flower/sessions.db'],
    ['/postgres/x.db'],
  ])('%s is a SQLite path', (text) => {
    expect(parseStoreTarget(text)).toEqual({ kind: 'sqlite', path: text });
    expect(isPostgresUrl(text)).toBe(false);
  });

  it.each([['postgres://u@h/db'], ['postgresql://u@h/db'], ['POSTGRES://u@h/db']])(
    '%s is PostgreSQL',
    (text) => {
      expect(parseStoreTarget(text).kind).toBe('postgres');
      expect(isPostgresUrl(text)).toBe(true);
    },
  );

  it('refuses another scheme instead of making a SQLite file named after it', () => {
    expect(problem('postgress://u:pw@h/db')).toBe(
      'Store URL postgress://u:***@h/db has the scheme "postgress:", which flower does not support: write postgres://u:***@h/db.',
    );
    expect(problem('pg://h/x')).toContain('write postgres://h/x.');
    expect(problem('mysql://root@localhost/test')).toBe(
      'Store URL mysql://root@localhost/test has the scheme "mysql:", which flower does not support: use postgres://user:password@host:5432/database or a SQLite file path.',
    );
    expect(problem('http://127.0.0.1/x')).toContain('"http:"');
  });

  // Issue 21: these ran a whole task on a SQLite file named after the URL.
  it.each([
    ['postgres//127.0.0.1/x', 'postgres//', 'write postgres://127.0.0.1/x'],
    ['postgresql:/host/x', 'postgresql:/', 'write postgresql://host/x'],
    ['postgres:host/x', 'postgres:', 'write postgres://host/x'],
    ['POSTGRES//h/x', 'POSTGRES//', 'write postgres://h/x'],
    ['postgre:/h/x', 'postgre:/', 'write postgres://h/x'],
    ['pg//h/x', 'pg//', 'write postgres://h/x'],
    ['postgres/127.0.0.1/x', 'postgres/', 'write postgres://127.0.0.1/x'],
    ['postgres:', 'postgres:', 'use postgres://user:password@host:5432/database'],
    ['postgres', 'postgres', 'use postgres://user:password@host:5432/database'],
    ['http//127.0.0.1/x', 'http//', 'use postgres://user:password@host:5432/database'],
    ['file:sessions.db', 'file:', 'use postgres://user:password@host:5432/database'],
    ['localhost:5432/x', 'localhost:', 'use postgres://user:password@host:5432/database'],
    ['u:pw@h/x', 'u:', 'use postgres://user:password@host:5432/database'],
  ])('%s is a mistyped URL, refused', (text, prefix, fix) => {
    const message = problem(text);
    expect(message).toContain(`(it starts with "${prefix}", not "postgres://")`);
    expect(message).toContain(`: ${fix}, or ./`);
    expect(message).toMatch(/ for a SQLite file of that name\.$/);
    expect(message).not.toContain('\n');
    expect(isPostgresUrl(text)).toBe(false);
  });

  it('names the value, the URL to write and the way to a file of that name, in one line', () => {
    expect(problem(' postgres//127.0.0.1/x ')).toBe(
      'Store URL postgres//127.0.0.1/x is not a URL flower can use (it starts with "postgres//", not "postgres://"): write postgres://127.0.0.1/x, or ./postgres//127.0.0.1/x for a SQLite file of that name.',
    );
  });

  it('a value starting with ./ or / is always a SQLite path (property)', () => {
    const unit = fc.constantFrom(...'abcXYZ019@:/\\#?&%=+. -'.split(''));
    fc.assert(
      fc.property(fc.constantFrom('./', '/'), fc.string({ unit, minLength: 1 }), (lead, tail) => {
        const text = `${lead}x${tail}x`;
        expect(parseStoreTarget(text)).toEqual({ kind: 'sqlite', path: text });
      }),
      { numRuns: 300 },
    );
  });

  it('never shows the password of a mistyped URL', () => {
    for (const text of [
      'postgres//flower:hunter2@db/tasks',
      'postgresql:/flower:hunter2@db/tasks',
      'postgres:flower:hunter2@db/tasks',
      'flower:hunter2@db/tasks',
      'postgres/flower:hun@ter2@db/tasks',
    ]) {
      const message = problem(text);
      expect(message, text).not.toContain('hunter2');
      expect(message, text).not.toContain('hun@ter2');
      expect(message, text).toContain('***@db/tasks');
    }
  });

  it('refuses an empty value', () => {
    expect(problem('   ')).toContain('No store given');
  });
});

describe('parseStoreTarget: the PostgreSQL parts', () => {
  it('reads host, port, database, user and the default schema', () => {
    expect(parseStoreTarget('postgres://flower:pw@db.internal:6543/tasks?sslmode=require')).toEqual({
      kind: 'postgres',
      connectionString: 'postgres://flower:pw@db.internal:6543/tasks?sslmode=require',
      schema: DEFAULT_STORE_SCHEMA,
      host: 'db.internal',
      port: 6543,
      database: 'tasks',
      user: 'flower',
      hasPassword: true,
      display: 'postgres://flower:***@db.internal:6543/tasks?sslmode=require',
    });
  });

  it('defaults the port to 5432 and allows no user (libpq then uses the OS user)', () => {
    const target = parseStoreTarget('postgres://127.0.0.1/test');
    expect(target).toMatchObject({
      host: '127.0.0.1',
      port: 5432,
      user: '',
      database: 'test',
      hasPassword: false,
    });
  });

  it("takes flower's schema parameter out of what pg sees and keeps every other parameter", () => {
    const target = parseStoreTarget('postgres://u@h/db?sslmode=disable&schema=team_a&application_name=x');
    expect(target).toMatchObject({ schema: 'team_a' });
    if (target.kind !== 'postgres') throw new Error('not postgres');
    const params = new URL(target.connectionString).searchParams;
    expect(params.get('schema')).toBeNull();
    expect(params.get('sslmode')).toBe('disable');
    expect(params.get('application_name')).toBe('x');
  });

  it('decodes a percent-encoded user and password, and a socket directory given as ?host=', () => {
    expect(parseStoreTarget('postgres://us%40er:p%23w@h/db')).toMatchObject({ user: 'us@er' });
    expect(parseStoreTarget('postgres:///db?host=/var/run/postgresql')).toMatchObject({
      host: '/var/run/postgresql',
      database: 'db',
    });
  });

  it.each([
    ['postgres://user:pa/ss@host/db', 'is not a valid URL'],
    ['postgres://user:pa#ss@host/db', 'contains "#"'],
    ['postgres://user:p%zzw@host/db', 'broken percent-encoding'],
    ['postgres:///db', 'names no host'],
    ['postgres://u@h', 'names no database'],
    ['postgres://u@h/', 'names no database'],
    ['postgres://u@h:0/db', 'port outside 1–65535'],
    ['postgres://u@h:99999/db', 'is not a valid URL'],
    ['postgres://u@h/db?schema=Team', 'names the schema "Team"'],
    ['postgres://u@h/db?schema=1st', 'names the schema "1st"'],
    ['postgres://u@h/db?schema=a;drop', 'names the schema'],
    ['postgres://u@h/db?schema=a&schema=b', 'more than once'],
  ])('%s: %s', (text, expected) => {
    const message = problem(text);
    expect(message).toContain(expected);
    expect(message.startsWith('Store URL ')).toBe(true);
    expect(message).not.toContain('\n');
    expect(message).not.toMatch(/pa\/ss|pa#ss|p%zzw/);
  });
});

describe('maskStoreUrl', () => {
  it.each([
    ['postgres://u:secret@h:5432/db', 'postgres://u:***@h:5432/db'],
    ['postgres://u@h/db', 'postgres://u@h/db'],
    ['postgres://h/db', 'postgres://h/db'],
    ['postgres://u:@h/db', 'postgres://u:***@h/db'],
    ['postgres://u:p@ss/w#rd@h/db', 'postgres://u:***@h/db'],
    [
      'postgres://h/db?user=u&password=secret&sslmode=require',
      'postgres://h/db?user=u&password=***&sslmode=require',
    ],
    ['https://user:token@example.com/x', 'https://user:***@example.com/x'],
    ['not a url at all', 'not a url at all'],
    ['/path/with:colon@at', '/path/with:colon@at'],
    ['postgres//u:secret@h/db', 'postgres//u:***@h/db'],
    ['postgresql:/u:secret@h/db', 'postgresql:***@h/db'],
    ['u:secret@h/db', 'u:***@h/db'],
    ['postgres//u@h/db', 'postgres//u@h/db'],
    ['C:\\x@y\\a:b.db', 'C:\\x@y\\a:b.db'],
  ])('%s → %s', (text, masked) => {
    expect(maskStoreUrl(text)).toBe(masked);
  });

  it('never shows the password, however it is written (property)', () => {
    const unsafe = fc.string({ unit: fc.constantFrom(...'abcXYZ019@:/#?&%=+ !'.split('')), minLength: 1 });
    fc.assert(
      fc.property(unsafe, fc.constantFrom('postgres', 'postgresql'), (tail, scheme) => {
        const password = `Pw9${tail}`;
        const text = `${scheme}://flower:${password}@db.example:5432/tasks`;
        expect(maskStoreUrl(text)).not.toContain(password);
        let message = '';
        try {
          const target = parseStoreTarget(text);
          message = target.kind === 'postgres' ? target.display : '';
        } catch (error) {
          message = (error as Error).message;
        }
        expect(message).not.toContain(password);
      }),
      { numRuns: 300 },
    );
  });
});
