/**
 * A machine with secrets on it, for the tests that prove the sandbox's walls: a home directory
 * holding flower's `.env` (with a key), an SSH key and a shell history; a workspace holding a
 * project `.env` and a run directory with a store file that names the key; a directory outside
 * the workspace; and a local TCP listener that counts the connections it gets.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import type { SessionSandbox } from '../../src/runtime/agent-spec.js';
import { sandboxPlaces } from '../../src/runtime/sandbox/places.js';
import { defaultSandboxPolicy, type SandboxPolicy } from '../../src/runtime/sandbox/policy.js';
import { tempDir } from './scratch.js';

export const PLANTED_KEY = 'sk-ant-planted-0123456789abcdefghij';

export interface SecretMachine {
  home: string;
  workspace: string;
  runDir: string;
  outside: string;
  /** Files that hold the key. */
  secrets: string[];
  /** The listener's port, and how many connections it accepted. */
  port: number;
  connections: () => number;
  close: () => Promise<void>;
  /** The session sandbox for this machine, from the environment the session gets. */
  sandbox: (
    env: Record<string, string>,
    options?: { policy?: SandboxPolicy; extraDirs?: string[] },
  ) => SessionSandbox;
}

export async function secretMachine(): Promise<SecretMachine> {
  const home = tempDir('flower-home-');
  const workspace = tempDir('flower-ws-');
  const outside = tempDir('flower-outside-');
  const runDir = join(workspace, 'runs');
  const flowerDir = join(home, '.config', 'flower');
  mkdirSync(flowerDir, { recursive: true });
  mkdirSync(join(home, '.ssh'), { recursive: true });
  mkdirSync(runDir, { recursive: true });
  const secrets = [
    join(flowerDir, '.env'),
    join(home, '.ssh', 'id_ed25519'),
    join(home, '.bash_history'),
    join(workspace, '.env'),
    join(runDir, 'sessions.db'),
  ];
  for (const file of secrets) writeFileSync(file, `ANTHROPIC_API_KEY=${PLANTED_KEY}\n`);
  writeFileSync(join(workspace, 'README.md'), '# a project\n');
  let accepted = 0;
  const server: Server = createServer((socket) => {
    accepted += 1;
    socket.end('hello from the listener\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    home,
    workspace,
    runDir,
    outside,
    secrets,
    port,
    connections: () => accepted,
    close: () => new Promise((resolve) => server.close(() => resolve())),
    sandbox: (env, { policy = defaultSandboxPolicy, extraDirs = [] } = {}) => ({
      policy,
      env,
      places: sandboxPlaces({ env, workspace, runDir, extraDirs }),
    }),
  };
}
