/**
 * The write-behind queue: jobs run in the order pushed, one at a time; a passing failure (the
 * server away) is retried until it succeeds and said once however many jobs meet it; a refused job
 * is said and dropped without blocking the rest; `flush` waits a bounded time, and `close` ends
 * every wait at once.
 */
import { describe, expect, it } from 'vitest';
import { PostgresStoreError } from '../../../../src/store/postgres/errors.js';
import {
  isPassingFailure,
  outageNotice,
  WriteBehindQueue,
} from '../../../../src/store/shared/write-behind.js';

const refusedConnection = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

function queueWith(lines: { warnings: string[]; verbose: string[]; refused: string[] }) {
  const notice = outageNotice('postgres://u:***@db/x', {
    onWarning: (line) => lines.warnings.push(line),
    onVerbose: (line) => lines.verbose.push(line),
  });
  return new WriteBehindQueue({
    notice,
    retryDelayMs: 5,
    maxRetryDelayMs: 20,
    onRefused: (label) => lines.refused.push(label),
  });
}

describe('write-behind', () => {
  it('runs jobs in order, retries through an outage, says it once, and catches up', async () => {
    const lines = { warnings: [] as string[], verbose: [] as string[], refused: [] as string[] };
    const queue = queueWith(lines);
    const done: number[] = [];
    let down = 6;
    for (let job = 0; job < 5; job += 1) {
      queue.push(`job ${job}`, async () => {
        if (down > 0) {
          down -= 1;
          throw refusedConnection();
        }
        done.push(job);
      });
    }
    expect(await queue.flush(5000)).toBe(true);
    expect(done).toEqual([0, 1, 2, 3, 4]);
    expect(lines.warnings).toHaveLength(1);
    expect(lines.warnings[0]).toContain('postgres://u:***@db/x does not answer');
    expect(lines.warnings[0]).toContain('the work continues in the run directory');
    expect(lines.verbose).toEqual(['PostgreSQL store postgres://u:***@db/x answers again; catching up.']);
    // A second outage later in the same process is not said again.
    down = 2;
    queue.push('job 5', async () => {
      if (down-- > 0) throw refusedConnection();
      done.push(5);
    });
    expect(await queue.flush(5000)).toBe(true);
    expect(done.at(-1)).toBe(5);
    expect(lines.warnings).toHaveLength(1);
  });

  it('drops a job the server refuses, says which, and goes on with the next', async () => {
    const lines = { warnings: [] as string[], verbose: [] as string[], refused: [] as string[] };
    const queue = queueWith(lines);
    const done: string[] = [];
    queue.push('append to p/s', async () => {
      throw Object.assign(new Error('value too long'), { code: '22001' });
    });
    queue.push('next', async () => {
      done.push('next');
    });
    expect(await queue.flush(1000)).toBe(true);
    expect(lines.refused).toEqual(['append to p/s']);
    expect(done).toEqual(['next']);
    expect(lines.warnings).toEqual([]);
  });

  it('flush gives up after its bound while the server stays away, and the job is still pending', async () => {
    const lines = { warnings: [] as string[], verbose: [] as string[], refused: [] as string[] };
    const queue = queueWith(lines);
    queue.push('never', async () => {
      throw refusedConnection();
    });
    const started = Date.now();
    expect(await queue.flush(150)).toBe(false);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(queue.pending).toBe(1);
    queue.close();
  });

  it('tells an outage from a refusal', () => {
    expect(isPassingFailure(refusedConnection())).toBe(true);
    expect(isPassingFailure(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isPassingFailure(Object.assign(new Error('x'), { code: '08006' }))).toBe(true);
    expect(isPassingFailure(Object.assign(new Error('duplicate key'), { code: '23505' }))).toBe(false);
  });

  it('keeps at most maxPending jobs through an outage and catches up once, again if jobs came in meanwhile', async () => {
    const lines = { warnings: [] as string[], verbose: [] as string[], refused: [] as string[] };
    const notice = outageNotice('db', { onWarning: (line) => lines.warnings.push(line) });
    const done: string[] = [];
    let down = true;
    let queue: WriteBehindQueue;
    let catchUps = 0;
    queue = new WriteBehindQueue({
      notice,
      retryDelayMs: 5,
      maxRetryDelayMs: 10,
      maxPending: 3,
      catchUp: {
        label: 'catch up',
        run: async () => {
          catchUps += 1;
          // A job arriving while the first catch-up reads is dropped (the queue is full): it must cause another.
          if (catchUps === 1) for (let extra = 0; extra < 3; extra += 1) queue.push('late', async () => {});
          done.push(`catch-up ${catchUps}`);
        },
      },
    });
    for (let job = 0; job < 10; job += 1) {
      queue.push(`job ${job}`, async () => {
        if (down) throw refusedConnection();
        done.push(`job ${job}`);
      });
    }
    expect(queue.pending).toBe(4); // three jobs and the catch-up in their place
    down = false;
    expect(await queue.flush(5000)).toBe(true);
    expect(done.slice(0, 4)).toEqual(['job 0', 'job 1', 'job 2', 'catch-up 1']);
    expect(done).toContain('catch-up 2');
    expect(lines.warnings).toHaveLength(1);
  });
  it('pauses at most maxRetryDelayMs between retries, however long the outage', async () => {
    const queue = new WriteBehindQueue({
      notice: outageNotice('db', {}),
      retryDelayMs: 5,
      maxRetryDelayMs: 20,
    });
    let down = 14; // doubling without the cap would pause 5 * (2^14 - 1) ms, over a minute
    queue.push('job', async () => {
      if (down-- > 0) throw refusedConnection();
    });
    // No flush until the end: a flush cuts the pause short.
    const started = Date.now();
    while (queue.pending > 0 && Date.now() - started < 5000)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(queue.pending).toBe(0);
  });

  it('a flush cuts the current backoff pause short', async () => {
    const queue = new WriteBehindQueue({
      notice: outageNotice('db', {}),
      retryDelayMs: 60_000,
      maxRetryDelayMs: 60_000,
    });
    let down = 1;
    queue.push('job', async () => {
      if (down-- > 0) throw refusedConnection();
    });
    await new Promise((resolve) => setTimeout(resolve, 20)); // the first try failed; the pause began
    expect(await queue.flush(2000)).toBe(true);
    queue.close();
  });

  it('close stops retrying: a job still failing is not tried again', async () => {
    const queue = new WriteBehindQueue({
      notice: outageNotice('db', {}),
      retryDelayMs: 5,
      maxRetryDelayMs: 5,
    });
    let tries = 0;
    queue.push('never', async () => {
      tries += 1;
      throw refusedConnection();
    });
    await new Promise((resolve) => setTimeout(resolve, 30));
    queue.close();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const atClose = tries;
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(tries).toBe(atClose);
    expect(queue.pending).toBe(1);
  });

  it('close answers a waiting flush at once (false: a job is left), without waiting for its bound', async () => {
    const queue = new WriteBehindQueue({ notice: outageNotice('db', {}), retryDelayMs: 5 });
    queue.push('hangs', () => new Promise<void>(() => {}));
    const started = Date.now();
    const flushed = queue.flush(60_000);
    queue.close();
    expect(await flushed).toBe(false);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('flush on an empty queue says drained at once, even with no time to wait (no false "could not be sent")', async () => {
    const queue = new WriteBehindQueue({ notice: outageNotice('db', {}), retryDelayMs: 5 });
    // SharedTask.flush passes 0 during an outage: an empty queue is still drained.
    expect(await queue.flush(0)).toBe(true);
    const started = Date.now();
    expect(await queue.flush(60_000)).toBe(true);
    queue.push('job', async () => {});
    expect(await queue.flush(5000)).toBe(true);
    expect(queue.pending).toBe(0);
    // Drained again after work: still true, still at once.
    expect(await queue.flush(0)).toBe(true);
    expect(Date.now() - started).toBeLessThan(1000);
    queue.close();
    expect(await queue.flush(0)).toBe(true);
  });

  it('a flush that comes after close answers at once: nothing will send what is left', async () => {
    const queue = new WriteBehindQueue({ notice: outageNotice('db', {}), retryDelayMs: 5 });
    queue.push('never', async () => {
      throw refusedConnection();
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    queue.close();
    const started = Date.now();
    expect(await queue.flush(5000)).toBe(false);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(queue.pending).toBe(1);
  });

  it('a job pushed after close is not kept: nothing is pending, so a flush does not report it unsent', async () => {
    const queue = new WriteBehindQueue({ notice: outageNotice('db', {}), retryDelayMs: 5 });
    queue.close();
    let ran = false;
    queue.push('late', async () => {
      ran = true;
    });
    expect(queue.pending).toBe(0);
    expect(await queue.flush(0)).toBe(true);
    expect(ran).toBe(false);
  });

  it('a job that fails after close (its connection torn down) is not said as an outage', async () => {
    const warnings: string[] = [];
    const queue = new WriteBehindQueue({
      notice: outageNotice('db', { onWarning: (line) => warnings.push(line) }),
      retryDelayMs: 5,
    });
    let fail: (error: Error) => void = () => {};
    queue.push('in flight', () => new Promise<void>((_, reject) => (fail = reject)));
    queue.close();
    fail(new Error('Connection terminated unexpectedly'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(warnings).toEqual([]);
    expect(queue.pending).toBe(1);
  });

  it("the outage line gives the driver's words, not the wrapped store error's advice", () => {
    const warnings: string[] = [];
    const notice = outageNotice('postgres://db/x', { onWarning: (line) => warnings.push(line) });
    notice.failed(
      new PostgresStoreError(
        'postgres://db/x',
        'PostgreSQL store postgres://db/x: could not write task records: db:5432 closed the connection: run again.',
        { cause: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }) },
      ),
    );
    expect(warnings).toEqual([
      'PostgreSQL store postgres://db/x does not answer (read ECONNRESET); the work continues in the run directory and is sent when it answers again.',
    ]);
  });

  it('the server cutting a statement or a session short (connection.ts bounds) is an outage', () => {
    for (const code of ['57014', '25P03', '57P05'])
      expect(isPassingFailure(Object.assign(new Error('x'), { code }))).toBe(true);
  });

  it('an outage wrapped in another error (its cause) is an outage too', () => {
    const wrapped = Object.assign(new Error('write task records failed'), {
      cause: Object.assign(new Error('x'), { code: 'ECONNRESET' }),
    });
    expect(isPassingFailure(wrapped)).toBe(true);
    const wrappedRefusal = Object.assign(new Error('write task records failed'), {
      cause: Object.assign(new Error('x'), { code: '23505' }),
    });
    expect(isPassingFailure(wrappedRefusal)).toBe(false);
  });

  it('the outage notice says whether the store is down now', () => {
    const notice = outageNotice('db', {});
    expect(notice.down).toBe(false);
    notice.failed(refusedConnection());
    expect(notice.down).toBe(true);
    notice.recovered();
    expect(notice.down).toBe(false);
    // An answer while nothing failed is no recovery to tell.
    const verbose: string[] = [];
    const quiet = outageNotice('db', { onVerbose: (line) => verbose.push(line) });
    quiet.recovered();
    expect(verbose).toEqual([]);
  });

  it('every connection-level code is an outage, whatever the message', () => {
    const codes = [
      'ECONNREFUSED',
      'ECONNRESET',
      'EPIPE',
      'ETIMEDOUT',
      'EHOSTUNREACH',
      'ENETUNREACH',
      'ENOTFOUND',
      'EAI_AGAIN',
      '53300',
      '57P01',
      '57P02',
      '57P03',
      '57P05',
      '25P03',
      '57014',
      '40001',
      '40P01',
      '08000',
      '08P01',
    ];
    for (const code of codes)
      expect([code, isPassingFailure(Object.assign(new Error('x'), { code }))]).toEqual([code, true]);
    for (const code of ['23505', '22001', '42P01', '28P01', '3D000', '0A000'])
      expect([code, isPassingFailure(Object.assign(new Error('x'), { code }))]).toEqual([code, false]);
  });

  it("the driver's words for a lost connection are an outage, in the error or its cause", () => {
    const outages = [
      'Query read timeout',
      'connection timed out',
      'Connection terminated unexpectedly',
      'Client has encountered a connection error and is not queryable',
      'Connection to the server was lost',
      'connection closed',
      'the connection has ended',
      'read ECONNRESET',
      'the server did not answer within 10 s',
      'db:5432 cannot be reached',
      'the server closed the connection unexpectedly',
    ];
    for (const text of outages) {
      expect([text, isPassingFailure(new Error(text))]).toEqual([text, true]);
      expect([text, isPassingFailure(new Error('could not write', { cause: new Error(text) }))]).toEqual([
        text,
        true,
      ]);
    }
    expect(isPassingFailure(new Error('could not write', { cause: new Error('duplicate key value') }))).toBe(
      false,
    );
    expect(isPassingFailure(new Error('connection string is invalid'))).toBe(false);
    expect(isPassingFailure('a bare string')).toBe(false);
    expect(isPassingFailure(null)).toBe(false);
    expect(isPassingFailure(undefined)).toBe(false);
  });

  it('a job that fails with no error at all is dropped as refused, and the next one runs', async () => {
    const queue = new WriteBehindQueue({ notice: outageNotice('db', {}), retryDelayMs: 5 });
    const done: string[] = [];
    queue.push('rejects with nothing', () => Promise.reject(undefined));
    queue.push('rejects with null', () => Promise.reject(null));
    queue.push('next', async () => {
      done.push('next');
    });
    expect(await queue.flush(2000)).toBe(true);
    expect(done).toEqual(['next']);
    expect(queue.done).toBe(3);
  });

  it('a refused job is dropped even when nobody listens for refusals', async () => {
    const queue = new WriteBehindQueue({ notice: outageNotice('db', {}), retryDelayMs: 5 });
    const done: string[] = [];
    queue.push('refused', async () => {
      throw Object.assign(new Error('value too long'), { code: '22001' });
    });
    queue.push('next', async () => {
      done.push('next');
    });
    expect(await queue.flush(2000)).toBe(true);
    expect(done).toEqual(['next']);
  });

  it('counts the jobs done, sent or given up, and says each time the queue runs empty', async () => {
    let drained = 0;
    const queue = new WriteBehindQueue({
      notice: outageNotice('db', {}),
      retryDelayMs: 5,
      onDrained: () => {
        drained += 1;
      },
    });
    let started = 0;
    for (let job = 0; job < 3; job += 1)
      queue.push(`job ${job}`, async () => {
        started += 1;
      });
    queue.push('refused', async () => {
      throw Object.assign(new Error('bad value'), { code: '22P02' });
    });
    expect(await queue.flush(2000)).toBe(true);
    expect([started, queue.done, drained]).toEqual([3, 4, 1]);
    queue.push('later', async () => {});
    expect(await queue.flush(2000)).toBe(true);
    expect([queue.done, drained]).toEqual([5, 2]);
  });

  it('a flush waits for every job pushed before it, not only the first', async () => {
    const queue = new WriteBehindQueue({ notice: outageNotice('db', {}), retryDelayMs: 5 });
    const done: number[] = [];
    for (let job = 0; job < 3; job += 1)
      queue.push(`job ${job}`, async () => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        done.push(job);
      });
    expect(await queue.flush(5000)).toBe(true);
    expect(done).toEqual([0, 1, 2]);
    expect(queue.pending).toBe(0);
  });

  it('the pause between retries doubles', async () => {
    const queue = new WriteBehindQueue({
      notice: outageNotice('db', {}),
      retryDelayMs: 20,
      maxRetryDelayMs: 10_000,
    });
    const tries: number[] = [];
    queue.push('job', async () => {
      tries.push(Date.now());
      if (tries.length <= 5) throw refusedConnection();
    });
    const started = Date.now();
    while (queue.pending > 0 && Date.now() - started < 10_000)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(queue.pending).toBe(0);
    // Pauses of 20, 40, 80, 160 and 320 ms: at least 620 ms from the first try to the last.
    expect((tries.at(-1) as number) - (tries[0] as number)).toBeGreaterThanOrEqual(600);
  });

  it('a job that succeeds ends the backoff: the next outage starts again from retryDelayMs', async () => {
    const queue = new WriteBehindQueue({
      notice: outageNotice('db', {}),
      retryDelayMs: 1,
      maxRetryDelayMs: 3000,
    });
    let failures = 10; // 1 + 2 + ... + 512 ms: the pause has grown to 1024 ms
    let sent = 0;
    queue.push('long outage', async () => {
      if (failures-- > 0) throw refusedConnection();
      sent = Date.now();
    });
    let second = 1;
    let tried = 0;
    queue.push('short outage', async () => {
      if (second-- > 0) throw refusedConnection();
      tried = Date.now();
    });
    const started = Date.now();
    while (queue.pending > 0 && Date.now() - started < 20_000)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(queue.pending).toBe(0);
    expect(tried - sent).toBeLessThan(400);
  });

  it('by default a failing job is retried at a pace (half a second, doubling), never in a busy loop', async () => {
    const queue = new WriteBehindQueue({ notice: outageNotice('db', {}) });
    let tries = 0;
    queue.push('never', async () => {
      tries += 1;
      throw refusedConnection();
    });
    await new Promise((resolve) => setTimeout(resolve, 800));
    queue.close();
    // Tried at once and after 500 ms; the next try would be 1 s later.
    expect(tries).toBeGreaterThanOrEqual(1);
    expect(tries).toBeLessThanOrEqual(2);
  });

  it('with maxPending 0 every job is replaced by the catch-up, which runs', async () => {
    let catchUps = 0;
    const queue = new WriteBehindQueue({
      notice: outageNotice('db', {}),
      retryDelayMs: 5,
      maxPending: 0,
      catchUp: {
        label: 'catch up',
        run: async () => {
          catchUps += 1;
        },
      },
    });
    let ran = false;
    queue.push('job', async () => {
      ran = true;
    });
    expect(await queue.flush(2000)).toBe(true);
    expect([ran, catchUps]).toEqual([false, 1]);
  });

  it('a flush leaves no timer behind that would keep the process alive', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const queue = new WriteBehindQueue({ notice: outageNotice('db', {}), retryDelayMs: 5 });
    const before = timers();
    queue.push('job', async () => {});
    expect(await queue.flush(60_000)).toBe(true);
    expect(timers()).toBe(before);
  });

  it('a pause between retries does not keep the process alive', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const queue = new WriteBehindQueue({ notice: outageNotice('db', {}), retryDelayMs: 60_000 });
    const before = timers();
    let tried = false;
    queue.push('never', async () => {
      tried = true;
      throw refusedConnection();
    });
    while (!tried) await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(timers()).toBe(before);
    queue.close();
  });

  it('the outage line is one line, and an error that is not a store error is said in its own words', () => {
    const warnings: string[] = [];
    outageNotice('db', { onWarning: (line) => warnings.push(line) }).failed(
      new Error('  read\n   ECONNRESET  \n', { cause: new Error('the cause, not said') }),
    );
    expect(warnings).toEqual([
      'PostgreSQL store db does not answer (read ECONNRESET); the work continues in the run directory and is sent when it answers again.',
    ]);
  });

  it('without a catch-up, maxPending bounds nothing: every job is kept and pushing never throws', async () => {
    const queue = new WriteBehindQueue({ notice: outageNotice('db', {}), retryDelayMs: 5, maxPending: 1 });
    let release: () => void = () => {};
    const done: number[] = [];
    queue.push('first', () => new Promise<void>((resolve) => (release = resolve)));
    for (let job = 0; job < 3; job += 1)
      expect(() =>
        queue.push(`job ${job}`, async () => {
          done.push(job);
        }),
      ).not.toThrow();
    expect(queue.pending).toBe(4);
    release();
    expect(await queue.flush(2000)).toBe(true);
    expect(done).toEqual([0, 1, 2]);
  });

  it('one job at a time: queueing the catch-up starts no second runner beside the job in flight', async () => {
    let catchUps = 0;
    const queue = new WriteBehindQueue({
      notice: outageNotice('db', {}),
      retryDelayMs: 5,
      maxPending: 1,
      catchUp: {
        label: 'catch up',
        run: async () => {
          catchUps += 1;
        },
      },
    });
    let runs = 0;
    let release: () => void = () => {};
    queue.push('slow', () => {
      runs += 1;
      return new Promise<void>((resolve) => (release = resolve));
    });
    queue.push('over the bound', async () => {});
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(runs).toBe(1);
    release();
    expect(await queue.flush(2000)).toBe(true);
    expect([runs, catchUps]).toEqual([1, 1]);
  });
});
