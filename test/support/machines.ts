/**
 * Several "machines" on one host, for tests of a task shared through PostgreSQL. Each machine runs
 * its processes in a mount namespace of its own, where one path (the workspace) shows that
 * machine's own directory, and in a UTS namespace with its own host name: one workspace path, two
 * disks, two hosts, as two computers that mount a project at the same place. Each has its own HOME
 * and CLAUDE_CONFIG_DIR, kept across the processes it runs (a machine's config survives a restart).
 *
 * The pid namespace is the host's: a machine can see (and prove dead) the other's processes,
 * which real machines cannot; the lease never relies on that across hosts (the host names differ).
 *
 * Needs root and util-linux `unshare` (CI runs as root); `canMakeMachines` says whether they are here.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { mockModelEnv } from '../../src/testing/index.js';
import { isolatedEnv } from '../e2e/cli-harness.js';
import { tempDir } from './scratch.js';

export const canMakeMachines = process.getuid?.() === 0 && existsSync('/usr/bin/unshare');

export interface Machine {
  readonly name: string;
  /** This machine's own directory behind the shared workspace path. */
  readonly disk: string;
  readonly home: string;
  readonly configDir: string;
  /** `argv` as run on this machine (for `runFlower`'s `wrap`, or `spawn`). */
  wrap(argv: readonly string[]): [file: string, args: string[]];
  /** The environment of a flower on this machine talking to `model`. */
  env(model: { url: string }, extra?: Record<string, string>): Record<string, string>;
}

/** One workspace path, and a machine per name behind it. */
export function makeMachines(names: readonly string[]): { workspace: string; machines: Machine[] } {
  const workspace = tempDir('flower-shared-ws-');
  const machines = names.map((name): Machine => {
    const root = tempDir(`flower-machine-${name}-`);
    const disk = join(root, 'disk');
    const home = join(root, 'home');
    const configDir = join(root, 'claude');
    for (const dir of [disk, home, configDir]) mkdirSync(dir, { recursive: true });
    return {
      name,
      disk,
      home,
      configDir,
      wrap: (argv) => [
        'unshare',
        [
          '--mount',
          '--uts',
          '--propagation',
          'private',
          'sh',
          '-c',
          // exec all the way down: the child's pid is the flower process's own.
          'hostname "$1" && mount --bind "$2" "$3" && shift 3 && exec "$@"',
          'machine',
          name,
          disk,
          workspace,
          ...argv,
        ],
      ],
      env: (model, extra = {}) =>
        mockModelEnv(model, {
          configDir,
          maxRetries: 1,
          base: { ...isolatedEnv(), HOME: home, XDG_CONFIG_HOME: join(home, '.config') },
          extra,
        }),
    };
  });
  return { workspace, machines };
}
