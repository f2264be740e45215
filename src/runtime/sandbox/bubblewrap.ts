/**
 * flower's own wall: a command run inside bubblewrap, for the commands flower itself launches (the
 * checks of a goal) and for the coordinator's glances, which must be stricter than the sandbox its
 * session shares with the workers (see agents/guards/glance-wall.ts).
 *
 * Why bubblewrap directly and not the binary's engine: the engine (`@anthropic-ai/sandbox-runtime`)
 * needs Node 22, and flower's floor is 20; the binary's own sandbox only wraps the Bash tool. The
 * argument list below is short enough to read in one sitting, which is the point of a wall.
 *
 * Invariants:
 * - The whole filesystem is mounted read-only (`--ro-bind / /`); only `writable` is bound
 *   read-write on top; then every existing credential store is covered last, so a store inside a
 *   writable place (the workspace's `.env`, `runs/`) stays covered: a directory by an empty one and
 *   a file by an empty file, both mode 000, so a read fails with "Permission denied".
 * - Own user namespace with every capability dropped (`--unshare-user`, `--cap-drop ALL`): even when
 *   flower runs as root (CI does), the command cannot remount, and mode 000 holds for it. Verified:
 *   without the user namespace a root command kept CAP_SYS_ADMIN inside the sandbox.
 * - No network unless `network` is true (`--unshare-net`: only a loopback of its own, so even a local
 *   listener refuses); own PID namespace with a fresh /proc (no other process's environment);
 *   `--new-session` (no typing into the user's terminal); `--die-with-parent`.
 * - A path is covered where it really is (links followed), so a link cannot lead around it.
 */
import { chmodSync, existsSync, mkdtempSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxPlaces } from './places.js';
import { reachOf, type SandboxPolicy, type SandboxRole } from './policy.js';

/** What one walled command may do. */
export interface WallPlan {
  /** Directories the command may write (everything else is read-only). */
  readonly writable: readonly string[];
  /** Credential stores: covered, unreadable. */
  readonly hidden: readonly string[];
  /** Share the host's network (only a worker policy of `any`). */
  readonly network: boolean;
  /** Where the command starts. */
  readonly cwd: string;
}

/** A credential store as it is on disk now. */
export interface ExistingStore {
  readonly path: string;
  readonly kind: 'directory' | 'file';
}

/** The facts the argument list needs, found once (`wallFacts`) so the list itself is pure. */
export interface WallFacts {
  /** The writable places that exist (a cache never made is left out: bubblewrap binds only what is there). */
  readonly writable: readonly string[];
  readonly stores: readonly ExistingStore[];
  /** An empty file of mode 000 to cover file stores with. */
  readonly blankFile: string;
  readonly uid: number;
  readonly gid: number;
}

/** bubblewrap's arguments for running `argv` under `plan`. Pure. */
export function bubblewrapArgs(plan: WallPlan, facts: WallFacts, argv: readonly string[]): string[] {
  const args = [
    '--unshare-user',
    '--uid',
    String(facts.uid),
    '--gid',
    String(facts.gid),
    '--cap-drop',
    'ALL',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    ...(plan.network ? [] : ['--unshare-net']),
    '--die-with-parent',
    '--new-session',
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
  ];
  for (const path of facts.writable) args.push('--bind', path, path);
  for (const store of facts.stores) {
    if (store.kind === 'directory') args.push('--perms', '000', '--tmpfs', store.path);
    else args.push('--ro-bind', facts.blankFile, store.path);
  }
  args.push('--chdir', plan.cwd, '--', ...argv);
  return args;
}

/** The blank file, made on first use and again if it was removed ('' names no file: it never exists). */
// Stryker disable next-line StringLiteral: any path that does not exist means "none yet" just as well
let blankFile = '';

/** The stores that exist (where their links lead), the blank file, and who runs the command. */
export function wallFacts(plan: WallPlan): WallFacts {
  const stores: ExistingStore[] = [];
  const seen = new Set<string>();
  for (const path of plan.hidden) {
    let real: string;
    try {
      real = realpathSync(path);
    } catch {
      continue; // Nothing there to hide.
    }
    if (seen.has(real) || real === '/') continue;
    seen.add(real);
    stores.push({ path: real, kind: statSync(real).isDirectory() ? 'directory' : 'file' });
  }
  if (!existsSync(blankFile)) {
    const directory = mkdtempSync(join(tmpdir(), 'flower-wall-'));
    blankFile = join(directory, 'blank');
    writeFileSync(blankFile, '');
    chmodSync(blankFile, 0o000);
  }
  return {
    writable: plan.writable.filter((path) => existsSync(path)),
    stores,
    blankFile,
    // Stryker disable next-line OptionalChaining: getuid exists wherever bubblewrap runs (Linux); the optional call only serves the type
    uid: process.getuid?.() ?? 0,
    // Stryker disable next-line OptionalChaining: getgid exists wherever bubblewrap runs (Linux); the optional call only serves the type
    gid: process.getgid?.() ?? 0,
  };
}

/** The program and arguments that run `argv` inside the wall. */
export function walledCommand(plan: WallPlan, argv: readonly string[]): { file: string; args: string[] } {
  return { file: 'bwrap', args: bubblewrapArgs(plan, wallFacts(plan), argv) };
}

/**
 * The wall for a command of `role` started in `cwd`: a read-only role writes nothing; a worker (a
 * check) writes the places it may reach, the caches and `scratch` (its temporary directory, which
 * the caller points TMPDIR at: /tmp itself stays read-only, as in the binary's sandbox). The host's
 * network is shared only for a worker reach of `any`: bubblewrap alone cannot filter by domain, so a
 * domain list means no network for a check.
 */
export function wallPlan(
  role: SandboxRole,
  policy: SandboxPolicy,
  places: SandboxPlaces,
  cwd: string,
  scratch?: string,
): WallPlan {
  if (role === 'read-only') return { writable: [], hidden: places.hidden, network: false, cwd };
  return {
    writable: [...places.reachable, ...places.caches, ...(scratch === undefined ? [] : [scratch])],
    hidden: places.hidden,
    network: reachOf(role, policy).kind === 'any',
    cwd,
  };
}
