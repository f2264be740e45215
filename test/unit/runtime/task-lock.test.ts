import fs, {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { currentBootId, readProcStat } from '../../../src/runtime/process-liveness.js';
import { rescuesPending } from '../../../src/runtime/signals.js';
import {
  FileTaskLocks,
  lockTask,
  TASK_LOCK_FILE,
  TaskBusyError,
  taskBusyMessage,
} from '../../../src/runtime/task-lock.js';
import { busyProcess, cpuTicks, endSpawned, goneProcess } from '../../support/live-processes.js';

let root: string;
let task: { workspace: string; runDir: string };
let lockPath: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'flower-task-lock-'));
  task = { workspace: root, runDir: join(root, 'runs') };
  lockPath = join(task.runDir, TASK_LOCK_FILE);
});
afterEach(() => {
  endSpawned();
  rmSync(root, { recursive: true, force: true });
});

function planted(fields: Record<string, unknown>): void {
  mkdirSync(task.runDir, { recursive: true });
  writeFileSync(lockPath, JSON.stringify({ startedAt: new Date().toISOString(), token: 'x', ...fields }));
}

const onLinux = process.platform === 'linux';

describe('taskBusyMessage', () => {
  const now = new Date(2026, 4, 3, 10, 0);
  it('names the pid, the host and the time it started, and what to do', () => {
    const holder = { pid: 4242, host: 'build-01', startedAt: new Date(2026, 4, 3, 9, 12).toISOString() };
    expect(taskBusyMessage(holder, now)).toBe(
      'another flower (pid 4242, on host build-01, since 09:12) is working on this task; wait for it, or use -w for another directory',
    );
  });

  it('names this host too (the README promises the host), and the date when it is not today', () => {
    const holder = { pid: 7, host: hostname(), startedAt: new Date(2026, 4, 1, 23, 5).toISOString() };
    expect(taskBusyMessage(holder, now)).toContain(`(pid 7, on host ${hostname()}, since 2026-05-01 23:05)`);
  });
});

describe('FileTaskLocks', () => {
  it('writes the holder into the lock and removes it on release', async () => {
    const held = await new FileTaskLocks().acquire(task);
    const record = JSON.parse(readFileSync(lockPath, 'utf8'));
    expect(record).toMatchObject({ pid: process.pid, host: hostname(), workspace: root });
    expect(Date.parse(record.startedAt)).not.toBeNaN();
    expect(held.holder.pid).toBe(process.pid);
    await held.release();
    expect(existsSync(lockPath)).toBe(false);
  });

  it('leaves no directory behind that it created and nothing else used', async () => {
    const fresh = { workspace: join(root, 'new-ws'), runDir: join(root, 'new-ws', 'runs') };
    await (await new FileTaskLocks().acquire(fresh)).release();
    expect(existsSync(fresh.workspace)).toBe(false);

    const used = await new FileTaskLocks().acquire(fresh);
    writeFileSync(join(fresh.runDir, 'manifest.json'), '[]');
    await used.release();
    expect(existsSync(join(fresh.runDir, 'manifest.json'))).toBe(true);
  });

  it('is re-entrant within a process: the file goes with the last release', async () => {
    const locks = new FileTaskLocks();
    const outer = await locks.acquire(task);
    const inner = await locks.acquire(task);
    await inner.release();
    await inner.release(); // idempotent: does not count twice
    expect(existsSync(lockPath)).toBe(true);
    await outer.release();
    expect(existsSync(lockPath)).toBe(false);
  });

  it('refuses while a live process on this host holds it, and leaves its lock alone', async () => {
    // The parent of this test process is alive for as long as the test runs.
    planted({ pid: process.ppid, host: hostname() });
    const attempt = new FileTaskLocks().acquire(task);
    await expect(attempt).rejects.toBeInstanceOf(TaskBusyError);
    await expect(attempt).rejects.toMatchObject({ holder: { pid: process.ppid } });
    expect(JSON.parse(readFileSync(lockPath, 'utf8')).pid).toBe(process.ppid);
  });

  it.runIf(onLinux)(
    'refuses a live holder that recorded its own start time, however long it has run since; takes over once it exited',
    async () => {
      // Another process holds the task: its record is what it writes for itself (`ownIdentity`
      // reads its own stat the same way), taken at the moment it locked.
      const pid = await busyProcess();
      const start = readProcStat(pid)?.startTime;
      expect(start).toBeDefined();
      planted({ pid, host: hostname(), bootId: currentBootId(), processStart: start });
      // It works on: the parts of its stat that move while a process runs (its user and kernel
      // CPU times among them) have moved since it recorded itself.
      const before = cpuTicks(pid);
      const moved = () => {
        const now = cpuTicks(pid);
        return now.user >= before.user + 2 && now.system >= before.system + 2;
      };
      for (let tries = 0; tries < 1000 && !moved(); tries += 1)
        await new Promise((resolve) => setTimeout(resolve, 10));
      expect(moved()).toBe(true);
      const attempt = new FileTaskLocks().acquire(task);
      await expect(attempt).rejects.toBeInstanceOf(TaskBusyError);
      await expect(attempt).rejects.toMatchObject({ holder: { pid } });
      expect(JSON.parse(readFileSync(lockPath, 'utf8')).pid).toBe(pid);
      // It exits (and is reaped): its lock is taken over.
      process.kill(pid, 'SIGKILL');
      for (let tries = 0; tries < 500 && readProcStat(pid) !== undefined; tries += 1)
        await new Promise((resolve) => setTimeout(resolve, 10));
      const held = await new FileTaskLocks().acquire(task);
      expect(JSON.parse(readFileSync(lockPath, 'utf8')).pid).toBe(process.pid);
      await held.release();
    },
  );

  it('takes over a lock that is not a lock record (damage, never a holder mid-write)', async () => {
    planted({});
    writeFileSync(lockPath, '{"pid": 12');
    const held = await new FileTaskLocks().acquire(task);
    expect(JSON.parse(readFileSync(lockPath, 'utf8')).pid).toBe(process.pid);
    await held.release();
  });

  it.runIf(onLinux)(
    'takes over a lock whose pid now belongs to a process started at another time',
    async () => {
      planted({ pid: process.ppid, host: hostname(), processStart: '1' });
      const held = await new FileTaskLocks().acquire(task);
      expect(JSON.parse(readFileSync(lockPath, 'utf8')).pid).toBe(process.pid);
      await held.release();
    },
  );

  it.runIf(onLinux)('takes over a lock from before a reboot', async () => {
    planted({ pid: process.ppid, host: hostname(), bootId: 'another-boot' });
    const held = await new FileTaskLocks().acquire(task);
    expect(JSON.parse(readFileSync(lockPath, 'utf8')).pid).toBe(process.pid);
    await held.release();
  });

  it('is released at process exit by a holder that never called release', async () => {
    const before = new Set(process.listeners('exit'));
    const held = await new FileTaskLocks().acquire(task);
    expect(existsSync(lockPath)).toBe(true);
    // What `process.exit` runs, without ending the test's process: the exit handlers added by acquire.
    const added = process.listeners('exit').filter((listener) => !before.has(listener));
    for (const listener of added) listener.call(process, 0);
    expect(existsSync(lockPath)).toBe(false);
    await held.release(); // after the exit handler: nothing left to do, and no throw
  });

  it('release leaves a lock that is no longer its own', async () => {
    const held = await new FileTaskLocks().acquire(task);
    planted({ pid: process.ppid, host: hostname() });
    await held.release();
    expect(JSON.parse(readFileSync(lockPath, 'utf8')).pid).toBe(process.ppid);
  });
});

describe('FileTaskLocks when the lock cannot be taken at all', () => {
  it('says which file to delete when something that is no lock record sits in its place and cannot be moved', async () => {
    // A directory where the lock file should be: no link can replace it, and no holder is named in it.
    mkdirSync(join(lockPath, 'inside'), { recursive: true });
    const attempt = new FileTaskLocks().acquire(task);
    await expect(attempt).rejects.toThrow(
      `could not take the lock ${lockPath}; if no flower works on this task, delete that file`,
    );
    await expect(attempt).rejects.not.toBeInstanceOf(TaskBusyError);
    expect(existsSync(join(lockPath, 'inside'))).toBe(true);
  });
});

/** Runs `body` with one function of node:fs replaced (as the module under test sees it too). */
async function withFs<Name extends 'linkSync' | 'writeFileSync' | 'readFileSync' | 'renameSync'>(
  name: Name,
  replace: (real: (typeof fs)[Name]) => (typeof fs)[Name],
  body: () => Promise<void>,
): Promise<void> {
  const real = fs[name];
  fs[name] = replace(real);
  syncBuiltinESMExports();
  try {
    await body();
  } finally {
    fs[name] = real;
    syncBuiltinESMExports();
  }
}

describe('FileTaskLocks: the rest of its promises', () => {
  it('the lock file is owner-only, like the run directory it sits in', async () => {
    const held = await new FileTaskLocks().acquire(task);
    expect(statSync(lockPath).mode & 0o777).toBe(0o600);
    await held.release();
  });

  it.each(['EPERM', 'ENOTSUP', 'EOPNOTSUPP'])(
    'on a file system without hard links (%s) the lock is still created whole, once, owner-only',
    async (code) => {
      await withFs(
        'linkSync',
        () => () => {
          throw Object.assign(new Error(`link: ${code}`), { code });
        },
        async () => {
          const held = await new FileTaskLocks().acquire(task);
          expect(JSON.parse(readFileSync(lockPath, 'utf8'))).toMatchObject({
            pid: process.pid,
            workspace: root,
          });
          expect(statSync(lockPath).mode & 0o777).toBe(0o600);
          // Another holder (here: another set of locks in this process) finds it taken.
          await expect(new FileTaskLocks().acquire(task)).rejects.toBeInstanceOf(TaskBusyError);
          expect(JSON.parse(readFileSync(lockPath, 'utf8')).token).toBeDefined();
          await held.release();
          expect(existsSync(lockPath)).toBe(false);
        },
      );
    },
  );

  it('a failure to link for another reason is said, not taken for a busy task', async () => {
    await withFs(
      'linkSync',
      () => () => {
        throw Object.assign(new Error('link: EIO'), { code: 'EIO' });
      },
      async () => {
        await expect(new FileTaskLocks().acquire(task)).rejects.toThrow('link: EIO');
      },
    );
    expect(existsSync(lockPath)).toBe(false);
  });

  it('takes the lock even when a holder that just released removed the directories meanwhile', async () => {
    const fresh = { workspace: join(root, 'ws'), runDir: join(root, 'ws', 'runs') };
    let removed = false;
    await withFs(
      'writeFileSync',
      (real) =>
        ((path: fs.PathOrFileDescriptor, ...rest: unknown[]) => {
          if (!removed && String(path).endsWith('.new')) {
            removed = true;
            rmSync(fresh.workspace, { recursive: true, force: true });
          }
          return (real as (...args: unknown[]) => unknown)(path, ...rest);
        }) as typeof fs.writeFileSync,
      async () => {
        const held = await new FileTaskLocks().acquire(fresh);
        const path = join(fresh.runDir, TASK_LOCK_FILE);
        expect(removed).toBe(true);
        expect(JSON.parse(readFileSync(path, 'utf8')).pid).toBe(process.pid);
        expect(statSync(path).mode & 0o777).toBe(0o600);
        await held.release();
      },
    );
  });

  it.each([
    ['no host', { pid: process.ppid }],
    ['a pid that is no number, on another host', { pid: String(process.ppid), host: 'elsewhere' }],
  ])('a record with %s is damage, not a holder: it is taken over', async (_label, fields) => {
    planted(fields);
    const held = await new FileTaskLocks().acquire(task);
    expect(JSON.parse(readFileSync(lockPath, 'utf8')).pid).toBe(process.pid);
    await held.release();
  });

  it('once released, it no longer listens for exit or for termination signals', async () => {
    const exitListeners = process.listenerCount('exit');
    const held = await new FileTaskLocks().acquire(task);
    expect(process.listenerCount('exit')).toBe(exitListeners + 1);
    expect(rescuesPending()).toBe(true);
    await held.release();
    expect(process.listenerCount('exit')).toBe(exitListeners);
    expect(rescuesPending()).toBe(false);
  });

  it('release never throws, even when someone deleted the lock file by hand', async () => {
    const held = await new FileTaskLocks().acquire(task);
    rmSync(lockPath);
    await expect(held.release()).resolves.toBeUndefined();
  });

  it('a lock released at exit and taken again is not given up by the first handle', async () => {
    const locks = new FileTaskLocks();
    const before = new Set(process.listeners('exit'));
    const first = await locks.acquire(task);
    for (const listener of process.listeners('exit').filter((l) => !before.has(l))) listener.call(process, 0);
    const second = await locks.acquire(task);
    await first.release();
    expect(existsSync(lockPath)).toBe(true);
    // Still re-entrant: the second holding is this process's, not forgotten by the first handle.
    const third = await locks.acquire(task);
    await third.release();
    expect(existsSync(lockPath)).toBe(true);
    await second.release();
    expect(existsSync(lockPath)).toBe(false);
  });
});

describe('lockTask', () => {
  it('takes the file lock by default, and the given backend otherwise', async () => {
    const held = await lockTask(task);
    expect(JSON.parse(readFileSync(lockPath, 'utf8')).pid).toBe(process.pid);
    await held.release();
    expect(existsSync(lockPath)).toBe(false);
    const asked: unknown[] = [];
    const holder = { pid: 1, host: 'db', startedAt: '' };
    const other = {
      acquire: async (ref: unknown) => {
        asked.push(ref);
        return { holder, release: async () => {} };
      },
    };
    expect((await lockTask(task, other)).holder).toBe(holder);
    expect(asked).toEqual([task]);
    expect(existsSync(lockPath)).toBe(false);
  });
});

describe("FileTaskLocks when a dead holder's lock cannot be moved aside", () => {
  const cannotMove = () => () => {
    throw Object.assign(new Error('rename: EACCES'), { code: 'EACCES' });
  };

  it.runIf(onLinux)('says which file to delete, and does not call the dead holder busy', async () => {
    planted({ pid: await goneProcess(), host: hostname() });
    await withFs('renameSync', cannotMove, async () => {
      const attempt = new FileTaskLocks().acquire(task);
      await expect(attempt).rejects.toThrow(`could not take the lock ${lockPath}`);
      await expect(attempt).rejects.not.toBeInstanceOf(TaskBusyError);
    });
  });

  it.runIf(onLinux)('names a live holder that took the lock meanwhile', async () => {
    const dead = JSON.stringify({ pid: await goneProcess(), host: hostname(), startedAt: '', token: 'x' });
    planted({ pid: process.ppid, host: hostname() });
    const live = readFileSync(lockPath, 'utf8');
    let reads = 0;
    await withFs('renameSync', cannotMove, () =>
      withFs(
        'readFileSync',
        (real) =>
          ((path: fs.PathOrFileDescriptor, ...rest: unknown[]) => {
            if (String(path) !== lockPath) return (real as (...args: unknown[]) => unknown)(path, ...rest);
            reads += 1;
            // Each round finds the dead holder's lock; after the last, a live one has taken its place.
            return reads <= 3 ? dead : live;
          }) as typeof fs.readFileSync,
        async () => {
          const attempt = new FileTaskLocks().acquire(task);
          await expect(attempt).rejects.toBeInstanceOf(TaskBusyError);
          await expect(attempt).rejects.toMatchObject({ holder: { pid: process.ppid } });
        },
      ),
    );
    expect(reads).toBe(4);
  });
});

describe('FileTaskLocks: failures it must say, not hide', () => {
  const failing = (code: string) => Object.assign(new Error(`write: ${code}`), { code });

  it('a draft that cannot be written for another reason than a missing directory is said at once', async () => {
    let failed = 0;
    await withFs(
      'writeFileSync',
      (real) =>
        ((path: fs.PathOrFileDescriptor, ...rest: unknown[]) => {
          // One failure, as a bad sector gives: written again, it would go through.
          if (String(path).endsWith('.new') && failed === 0) {
            failed += 1;
            throw failing('EIO');
          }
          return (real as (...args: unknown[]) => unknown)(path, ...rest);
        }) as typeof fs.writeFileSync,
      async () => {
        await expect(new FileTaskLocks().acquire(task)).rejects.toThrow('write: EIO');
      },
    );
  });

  it('without hard links, a lock that cannot be created for another reason is said at once', async () => {
    await withFs(
      'linkSync',
      () => () => {
        throw failing('EPERM');
      },
      () =>
        withFs(
          'writeFileSync',
          (real) =>
            ((path: fs.PathOrFileDescriptor, ...rest: unknown[]) => {
              if (String(path) === lockPath) throw failing('ENOSPC');
              return (real as (...args: unknown[]) => unknown)(path, ...rest);
            }) as typeof fs.writeFileSync,
          async () => {
            await expect(new FileTaskLocks().acquire(task)).rejects.toThrow('write: ENOSPC');
          },
        ),
    );
  });
});
