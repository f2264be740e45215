import { spawnSync } from 'node:child_process';
import fs, {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type JsonDocumentCodec,
  LockTimeoutError,
  peekJsonDocument,
  readJsonDocument,
  takeOverStaleLock,
  updateJsonDocument,
  withFileLock,
} from '../../../src/runtime/locked-json-file.js';
import { endSpawned, liveShell, zombie } from '../../support/live-processes.js';

const counter: JsonDocumentCodec<{ count: number }> = {
  empty: () => ({ count: 0 }),
  decode: (value) =>
    typeof value === 'object' && value !== null && typeof (value as { count?: unknown }).count === 'number'
      ? (value as { count: number })
      : undefined,
};

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'flower-locked-'));
  file = join(dir, 'state.json');
});
afterEach(() => {
  endSpawned();
  rmSync(dir, { recursive: true, force: true });
});

/** A pid that is certainly not running: a child that has already exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', '0']);
  return child.pid ?? 999_999;
}

describe('updateJsonDocument', () => {
  it('creates the file (and its folder) from the empty document, pretty-printed', () => {
    const nested = join(dir, 'runs', 'state.json');
    updateJsonDocument(nested, counter, (current) => ({ count: current.count + 1 }));
    expect(readFileSync(nested, 'utf8')).toBe('{\n  "count": 1\n}\n');
  });

  it('applies each change to the latest content', () => {
    for (let i = 0; i < 5; i += 1)
      updateJsonDocument(file, counter, (current) => ({ count: current.count + 1 }));
    expect(readJsonDocument(file, counter)).toEqual({ count: 5 });
  });

  it('leaves no lock or temporary file behind', () => {
    updateJsonDocument(file, counter, () => ({ count: 1 }));
    expect(readdirSync(dir)).toEqual(['state.json']);
  });

  it('releases the lock when the change throws, and keeps the old content', () => {
    updateJsonDocument(file, counter, () => ({ count: 1 }));
    expect(() =>
      updateJsonDocument(file, counter, () => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(readdirSync(dir)).toEqual(['state.json']);
    expect(readJsonDocument(file, counter)).toEqual({ count: 1 });
  });
});

describe('corrupt files', () => {
  it.each([
    ['invalid JSON', '{"count": 3,'],
    ['the wrong structure', '["not", "an", "object"]'],
    ['an empty file', ''],
  ])('sets aside %s, warns once, and starts fresh', (_label, content) => {
    writeFileSync(file, content);
    const warnings: string[] = [];
    const result = updateJsonDocument(file, counter, (current) => ({ count: current.count + 1 }), {
      onWarning: (message) => warnings.push(message),
    });
    expect(result).toEqual({ count: 1 });
    expect(warnings).toHaveLength(1);
    const kept = readdirSync(dir).filter((name) => name.startsWith('state.json.corrupt-'));
    expect(kept).toHaveLength(1);
    expect(readFileSync(join(dir, kept[0]!), 'utf8')).toBe(content);
    expect(warnings[0]).toContain(kept[0]);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ count: 1 });
  });

  it('sets a corrupt file aside on read too, so the next reader sees a fresh file', () => {
    writeFileSync(file, 'garbage');
    const warnings: string[] = [];
    expect(readJsonDocument(file, counter, { onWarning: (message) => warnings.push(message) })).toEqual({
      count: 0,
    });
    expect(readJsonDocument(file, counter, { onWarning: (message) => warnings.push(message) })).toEqual({
      count: 0,
    });
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ count: 0 });
  });

  it('never overwrites an earlier corrupt copy', () => {
    writeFileSync(file, 'first');
    readJsonDocument(file, counter);
    writeFileSync(file, 'second');
    readJsonDocument(file, counter);
    const kept = readdirSync(dir)
      .filter((name) => name.startsWith('state.json.corrupt-'))
      .map((name) => readFileSync(join(dir, name), 'utf8'))
      .sort();
    expect(kept).toEqual(['first', 'second']);
  });

  it('reads a missing file as empty without creating anything', () => {
    const missing = join(dir, 'not-yet', 'state.json');
    expect(readJsonDocument(missing, counter)).toEqual({ count: 0 });
    expect(existsSync(join(dir, 'not-yet'))).toBe(false);
  });
});

describe('the advisory lock', () => {
  const lockOf = () => `${file}.lock`;

  it('takes over a lock whose owner process is gone', () => {
    writeFileSync(
      lockOf(),
      JSON.stringify({ pid: deadPid(), host: hostname(), createdAt: Date.now(), token: 'x' }),
    );
    updateJsonDocument(file, counter, () => ({ count: 7 }), { lock: { waitTimeoutMs: 1_000 } });
    expect(readJsonDocument(file, counter)).toEqual({ count: 7 });
    expect(existsSync(lockOf())).toBe(false);
  });

  it.runIf(process.platform === 'linux')(
    'takes over a fresh lock whose owner is a zombie (exited, never reaped), and waits for a live one',
    async () => {
      writeFileSync(
        lockOf(),
        JSON.stringify({ pid: await zombie(), host: hostname(), createdAt: Date.now(), token: 'x' }),
      );
      updateJsonDocument(file, counter, () => ({ count: 3 }), { lock: { waitTimeoutMs: 1_000 } });
      expect(readJsonDocument(file, counter)).toEqual({ count: 3 });

      writeFileSync(
        lockOf(),
        JSON.stringify({ pid: await liveShell(), host: hostname(), createdAt: Date.now(), token: 'x' }),
      );
      expect(() =>
        updateJsonDocument(file, counter, () => ({ count: 4 }), { lock: { waitTimeoutMs: 200 } }),
      ).toThrow(LockTimeoutError);
    },
  );

  it('takes over a lock older than the stale bound even if its owner still runs', () => {
    writeFileSync(
      lockOf(),
      JSON.stringify({ pid: process.pid, host: hostname(), createdAt: Date.now() - 60_000, token: 'x' }),
    );
    updateJsonDocument(file, counter, () => ({ count: 8 }), { lock: { waitTimeoutMs: 1_000 } });
    expect(readJsonDocument(file, counter)).toEqual({ count: 8 });
  });

  it('waits for a live, fresh lock and gives up with a clear message after the bound', () => {
    writeFileSync(
      lockOf(),
      JSON.stringify({ pid: process.pid, host: hostname(), createdAt: Date.now(), token: 'x' }),
    );
    const started = Date.now();
    let thrown: unknown;
    try {
      updateJsonDocument(file, counter, () => ({ count: 9 }), { lock: { waitTimeoutMs: 150 } });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(LockTimeoutError);
    expect((thrown as Error).message).toContain(lockOf());
    expect((thrown as Error).message).toContain('delete that file');
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    expect(existsSync(file)).toBe(false);
  });

  it("does not trust a pid recorded on another host; only the lock's age frees it", () => {
    writeFileSync(
      lockOf(),
      JSON.stringify({ pid: deadPid(), host: 'elsewhere', createdAt: Date.now(), token: 'x' }),
    );
    expect(() => withFileLock(file, () => 1, { waitTimeoutMs: 100 })).toThrow(LockTimeoutError);
  });

  it('falls back to the file age for a lock whose content was never written', () => {
    writeFileSync(lockOf(), '');
    expect(() => withFileLock(file, () => 1, { waitTimeoutMs: 100 })).toThrow(LockTimeoutError);
    expect(withFileLock(file, () => 2, { waitTimeoutMs: 500, staleAfterMs: 0 })).toBe(2);
  });
});

/** Runs `body` with one function of node:fs replaced (as the module under test sees it too). */
function withFs<Name extends 'openSync' | 'writeSync' | 'readFileSync'>(
  name: Name,
  replace: (real: (typeof fs)[Name]) => (typeof fs)[Name],
  body: () => void,
): void {
  const real = fs[name];
  fs[name] = replace(real);
  syncBuiltinESMExports();
  try {
    body();
  } finally {
    fs[name] = real;
    syncBuiltinESMExports();
  }
}

describe('the advisory lock: the rest of its promises', () => {
  const lockOf = () => `${file}.lock`;

  it('judges a lock without a host (written before hosts were recorded) by its pid', () => {
    writeFileSync(lockOf(), JSON.stringify({ pid: deadPid(), createdAt: Date.now(), token: 'x' }));
    expect(withFileLock(file, () => 1, { waitTimeoutMs: 1_000 })).toBe(1);
  });

  it('does not take a fresh lock without a pid for an abandoned one: only its age frees it', () => {
    writeFileSync(lockOf(), JSON.stringify({ host: hostname(), createdAt: Date.now(), token: 'x' }));
    expect(() => withFileLock(file, () => 1, { waitTimeoutMs: 100 })).toThrow(LockTimeoutError);
    expect(existsSync(lockOf())).toBe(true);
  });

  it('times out with an error that says its name', () => {
    writeFileSync(lockOf(), JSON.stringify({ pid: process.pid, host: hostname(), createdAt: Date.now() }));
    expect(() => withFileLock(file, () => 1, { waitTimeoutMs: 50 })).toThrow(
      expect.objectContaining({ name: 'LockTimeoutError', lockPath: lockOf() }),
    );
  });

  it('is created owner-only while it is held', () => {
    const mode = withFileLock(file, () => statSync(lockOf()).mode & 0o777);
    expect(mode).toBe(0o600);
  });

  it('leaves a lock that is no longer its own when it releases', () => {
    withFileLock(file, () => {
      writeFileSync(
        lockOf(),
        JSON.stringify({ pid: process.pid, host: hostname(), createdAt: Date.now(), token: 'other' }),
      );
    });
    expect(JSON.parse(readFileSync(lockOf(), 'utf8')).token).toBe('other');
  });

  it('releases quietly when its lock is already gone, and the action keeps its result', () => {
    const result = withFileLock(file, () => {
      rmSync(lockOf());
      return 'done';
    });
    expect(result).toBe('done');
    expect(existsSync(lockOf())).toBe(false);
  });

  it('a full disk while writing the lock leaves no empty lock behind, and says why', () => {
    withFs(
      'writeSync',
      (real) =>
        ((fd: number, ...rest: unknown[]) => {
          if (fs.readlinkSync(`/proc/self/fd/${fd}`) === lockOf())
            throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
          return (real as (...args: unknown[]) => unknown)(fd, ...rest);
        }) as typeof fs.writeSync,
      () => {
        expect(() => withFileLock(file, () => 1)).toThrow('ENOSPC');
      },
    );
    expect(existsSync(lockOf())).toBe(false);
  });

  it('a lock that cannot be created for another reason than "exists" is said at once', () => {
    withFs(
      'openSync',
      (real) =>
        ((path: fs.PathLike, ...rest: unknown[]) => {
          if (String(path) === lockOf())
            throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
          return (real as (...args: unknown[]) => unknown)(path, ...rest);
        }) as typeof fs.openSync,
      () => {
        const started = Date.now();
        expect(() => withFileLock(file, () => 1, { waitTimeoutMs: 5_000 })).toThrow('EACCES');
        expect(Date.now() - started).toBeLessThan(2_000);
      },
    );
  });

  it('never takes over a lock it cannot read, however old: moved aside, it could not be told from another', () => {
    // A directory where the lock should be: it exists, so the lock cannot be created, and it has no content.
    mkdirSync(join(lockOf(), 'inside'), { recursive: true });
    expect(() => withFileLock(file, () => 1, { waitTimeoutMs: 200, staleAfterMs: 0 })).toThrow(
      LockTimeoutError,
    );
    expect(existsSync(join(lockOf(), 'inside'))).toBe(true);
    expect(readdirSync(dir)).toEqual(['state.json.lock']);
  });

  it('a takeover that finds a fresh lock in place of the stale one puts it back', () => {
    const fresh = JSON.stringify({
      pid: process.pid,
      host: hostname(),
      createdAt: Date.now(),
      token: 'fresh',
    });
    writeFileSync(lockOf(), fresh);
    takeOverStaleLock(lockOf(), JSON.stringify({ pid: 1, host: hostname(), createdAt: 0, token: 'stale' }));
    expect(readFileSync(lockOf(), 'utf8')).toBe(fresh);
    expect(readdirSync(dir)).toEqual(['state.json.lock']);
    // The stale one itself is moved away, and nothing is left beside it.
    const stale = JSON.stringify({ pid: 1, host: hostname(), createdAt: 0, token: 'stale' });
    writeFileSync(lockOf(), stale);
    takeOverStaleLock(lockOf(), stale);
    expect(readdirSync(dir)).toEqual([]);
    // A lock gone meanwhile: nothing to do, and no throw.
    expect(() => takeOverStaleLock(lockOf(), stale)).not.toThrow();
  });
});

describe('a directory where the file should be', () => {
  it('is set aside like unreadable content, with a warning that says so', () => {
    mkdirSync(join(file, 'inside'), { recursive: true });
    const warnings: string[] = [];
    const result = updateJsonDocument(file, counter, (current) => ({ count: current.count + 1 }), {
      onWarning: (message) => warnings.push(message),
    });
    expect(result).toEqual({ count: 1 });
    const kept = readdirSync(dir).filter((name) => name.startsWith('state.json.corrupt-'));
    expect(kept).toHaveLength(1);
    expect(existsSync(join(dir, kept[0]!, 'inside'))).toBe(true);
    expect(warnings).toEqual([
      `${file} is a directory, not a file. It was kept as ${join(dir, kept[0]!)} for inspection, and a fresh file was started.`,
    ]);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('the warning for bad content says what was wrong', () => {
    writeFileSync(file, 'garbage');
    const warnings: string[] = [];
    readJsonDocument(file, counter, { onWarning: (message) => warnings.push(message) });
    expect(warnings[0]).toMatch(
      /^.* could not be read \(not valid JSON, or not the expected structure\)\. It was kept as .* for inspection, and a fresh file was started\.$/,
    );
  });
});

describe('peekJsonDocument', () => {
  it('reads without a lock and repairs nothing: ok, missing, or corrupt with the reason', () => {
    expect(peekJsonDocument(file, counter)).toEqual({ state: 'missing', document: { count: 0 } });
    writeFileSync(file, '{"count": 4}');
    expect(peekJsonDocument(file, counter)).toEqual({ state: 'ok', document: { count: 4 } });
    writeFileSync(file, '["no"]');
    expect(peekJsonDocument(file, counter)).toEqual({
      state: 'corrupt',
      document: { count: 0 },
      reason: 'not the expected structure',
    });
    writeFileSync(file, '{"count": ');
    expect(peekJsonDocument(file, counter)).toEqual({
      state: 'corrupt',
      document: { count: 0 },
      reason: 'not valid JSON',
    });
    expect(readdirSync(dir)).toEqual(['state.json']);
    rmSync(file);
    mkdirSync(file);
    expect(peekJsonDocument(file, counter)).toEqual({
      state: 'corrupt',
      document: { count: 0 },
      reason: expect.stringContaining('EISDIR'),
    });
  });
});

describe('the file and its lock: what must not leak or be mistaken', () => {
  it.runIf(process.platform === 'linux')(
    'leaves no file descriptor open, however many times it locks',
    () => {
      const open = () => readdirSync('/proc/self/fd').length;
      updateJsonDocument(file, counter, () => ({ count: 0 }));
      const before = open();
      for (let i = 0; i < 20; i += 1)
        updateJsonDocument(file, counter, (current) => ({ count: current.count + 1 }));
      expect(open()).toBe(before);
    },
  );

  it('a file that cannot be read for another reason than being a directory is said, not set aside', () => {
    writeFileSync(file, '{"count": 2}');
    withFs(
      'readFileSync',
      (real) =>
        ((path: fs.PathOrFileDescriptor, ...rest: unknown[]) => {
          if (String(path) === file)
            throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
          return (real as (...args: unknown[]) => unknown)(path, ...rest);
        }) as typeof fs.readFileSync,
      () => {
        expect(() => readJsonDocument(file, counter)).toThrow('EACCES');
      },
    );
    expect(readdirSync(dir)).toEqual(['state.json']);
    expect(readJsonDocument(file, counter)).toEqual({ count: 2 });
  });
});
