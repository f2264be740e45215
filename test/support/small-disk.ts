/**
 * A real, size-limited file system for disk-full tests: a tmpfs mounted with `size=` on a fresh
 * temporary directory (root only), filled and emptied on demand. `smallDisk()` returns undefined
 * where mounting is not allowed (not root, or a container without CAP_SYS_ADMIN); tests then fall
 * back to a store that fails on demand (see `transcript-store-failure.test.ts`).
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmdirSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface SmallDisk {
  /** The mount point. */
  readonly path: string;
  /** Writes a filler file until the file system is full. */
  fill(): void;
  /** Removes the filler: the disk has room again. */
  free(): void;
  /** Unmounts and removes the mount point (everything on it is gone). */
  release(): void;
}

let mountable: boolean | undefined;

function tryMount(path: string, bytes: number): boolean {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes},mode=0755`, 'tmpfs', path], {
      stdio: 'ignore',
    });
    return true;
  } catch {
    return false;
  }
}

/** Whether this machine lets the tests mount a tmpfs (checked once, by mounting one). */
export function canMountSmallDisk(): boolean {
  if (mountable !== undefined) return mountable;
  const disk = smallDisk(64 * 1024);
  mountable = disk !== undefined;
  disk?.release();
  return mountable;
}

export function smallDisk(bytes: number): SmallDisk | undefined {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return undefined;
  const path = mkdtempSync(join(tmpdir(), 'flower-small-disk-'));
  if (!tryMount(path, bytes)) {
    rmdirSync(path);
    return undefined;
  }
  const filler = join(path, 'filler');
  return {
    path,
    fill() {
      const fd = openSync(filler, 'a');
      try {
        // Down to single bytes: a few kilobytes left over would still take a small SQLite write.
        for (const size of [64 * 1024, 4096, 512, 1]) {
          const chunk = Buffer.alloc(size);
          try {
            for (;;) writeSync(fd, chunk);
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
          }
        }
      } finally {
        closeSync(fd);
      }
    },
    free() {
      rmSync(filler, { force: true });
    },
    release() {
      for (let attempt = 0; attempt < 10; attempt += 1) {
        try {
          execFileSync('umount', [path], { stdio: 'ignore' });
          break;
        } catch {
          // Busy for a moment after a process that had files open there ended.
          execFileSync('sleep', ['0.3']);
        }
      }
      rmSync(path, { recursive: true, force: true });
    },
  };
}
