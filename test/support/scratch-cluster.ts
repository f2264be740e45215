/**
 * A throwaway PostgreSQL cluster of the test's own: initdb into a temporary directory, started on
 * a free loopback port, for faults that must not touch the shared test server, above all a server
 * frozen with SIGSTOP (its kernel still accepts connections and acknowledges bytes; nothing
 * answers). PostgreSQL 15's binaries from /usr/lib/postgresql/15/bin (FLOWER_TEST_PG_BIN
 * overrides the directory).
 *
 * Invariants:
 * - Cleaned up whatever the test does: `stop()` (also registered with scratch.ts's `cleanUp`, so an
 *   afterEach that calls it ends a failed test's cluster) thaws the server, stops it at once and
 *   removes its directory; a test process that exits without it (a crash, a timeout that kills
 *   the worker) still sends the postmaster SIGCONT and SIGQUIT from an exit hook, so no frozen
 *   server outlives the run.
 * - As root (CI), initdb and pg_ctl run as the `postgres` user (both refuse root); otherwise as
 *   the current user.
 */
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { descendants } from './process-tree.js';
import { onCleanUp } from './scratch.js';

const BIN = process.env.FLOWER_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';

export interface ScratchCluster {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  port: number;
  /** The postmaster's pid. */
  pid: number;
  /** SIGSTOP the postmaster and every process under it (backends, checkpointer, ...). */
  pause(): void;
  /** SIGCONT them again. */
  resume(): void;
  /** Thaws, stops at once (pg_ctl -m immediate) and removes the directory; safe to call twice. */
  stop(): Promise<void>;
}

/** Whether this machine can start a cluster (the binaries are there). */
export const canStartCluster = existsSync(join(BIN, 'initdb')) && existsSync(join(BIN, 'pg_ctl'));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function asOwner(program: string, args: string[]): string[] {
  const path = join(BIN, program);
  return process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--', path, ...args] : [path, ...args];
}

function run(program: string, args: string[]): void {
  const [command, ...rest] = asOwner(program, args);
  execFileSync(command as string, rest, { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
}

function signal(pids: readonly number[], name: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, name);
    } catch {
      // gone already
    }
  }
}

export async function startScratchCluster(): Promise<ScratchCluster> {
  const root = mkdtempSync(join(tmpdir(), 'flower-pgcluster-'));
  const data = join(root, 'data');
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(root, uid, gid);
  }
  let pid = 0;
  let stopped = false;
  const exitHook = () => {
    // Synchronous and best effort: the worker is going away. SIGQUIT is an immediate shutdown,
    // which the postmaster passes on to its children.
    if (pid !== 0) {
      signal([pid, ...descendants(pid)], 'SIGCONT');
      signal([pid], 'SIGQUIT');
    }
    rmSync(root, { recursive: true, force: true });
  };
  process.once('exit', exitHook);
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    process.removeListener('exit', exitHook);
    if (pid !== 0) {
      signal([pid, ...descendants(pid)], 'SIGCONT');
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', '-t', '20', 'stop']);
      } catch {
        signal([pid], 'SIGQUIT');
      }
    }
    rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  };
  onCleanUp(stop);
  try {
    run('initdb', [
      '-D',
      data,
      '-A',
      'trust',
      '-U',
      'postgres',
      '-E',
      'UTF8',
      '--no-sync',
      '--no-instructions',
    ]);
    const port = await freePort();
    run('pg_ctl', [
      '-D',
      data,
      '-l',
      join(root, 'server.log'),
      '-w',
      '-t',
      '30',
      '-o',
      // Small and unsafe on purpose: a test's server holds a few rows and dies with the test.
      `-p ${port} -c listen_addresses=127.0.0.1 -k ${root} -c fsync=off -c synchronous_commit=off -c shared_buffers=16MB -c max_connections=40`,
      'start',
    ]);
    pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      port,
      pid,
      pause() {
        // The postmaster first, so it forks nothing new while its children are being stopped.
        signal([pid], 'SIGSTOP');
        signal(descendants(pid), 'SIGSTOP');
      },
      resume() {
        signal(descendants(pid), 'SIGCONT');
        signal([pid], 'SIGCONT');
      },
      stop,
    };
  } catch (error) {
    await stop();
    const detail = (error as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(`could not start a scratch PostgreSQL cluster: ${detail || (error as Error).message}`);
  }
}
