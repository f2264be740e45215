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
});
