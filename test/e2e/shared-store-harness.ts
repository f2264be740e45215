/**
 * Set-up shared by the end-to-end tests of task state in PostgreSQL (issue 14): a schema of the
 * test's own on the real server (FLOWER_TEST_POSTGRES_URL; PGlite without it), queries against
 * it, a loopback TCP proxy that can cut, reset or black-hole flower's connections (fault-proxy.ts),
 * and a server that asks for a password and rejects every one (the CI server trusts loopback
 * connections, so a wrong password cannot be provoked on it; this speaks the same wire protocol up
 * to the refusal).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { type TestSchema, usePostgres } from '../support/postgres.js';

export const postgres = usePostgres();

export interface SharedSchema extends TestSchema {
  /** Runs one query in this schema. */
  query<Row extends pg.QueryResultRow = Record<string, unknown>>(
    text: string,
    values?: unknown[],
  ): Promise<Row[]>;
}

const drops: Array<() => Promise<void>> = [];

/** A fresh schema; `dropSchemas` (afterEach) removes every one made. */
export async function sharedSchema(label: string): Promise<SharedSchema> {
  const fresh = await postgres.freshSchema(label);
  drops.push(fresh.drop);
  return {
    ...fresh,
    query: async (text, values) => {
      const client = new pg.Client({ connectionString: postgres.baseUrl });
      await client.connect();
      try {
        await client.query(`SET search_path TO "${fresh.schema}"`);
        return (await client.query(text, values)).rows;
      } finally {
        await client.end();
      }
    },
  };
}

export async function dropSchemas(): Promise<void> {
  for (const drop of drops.splice(0)) await drop().catch(() => {});
}

/** The schema URL with its host and port replaced (to go through a proxy). */
export function viaPort(url: string, port: number): string {
  const parsed = new URL(url);
  parsed.hostname = '127.0.0.1';
  parsed.port = String(port);
  return parsed.toString();
}

/** The fault-injecting proxy (test/support/fault-proxy.ts); the outage test knows it by its first job. */
export { FaultProxy as CuttableProxy, FaultProxy } from '../support/fault-proxy.js';

/**
 * A server that speaks PostgreSQL's start-up protocol far enough to ask for a cleartext password
 * and refuse it with SQLSTATE 28P01, as a server with password authentication does.
 */
export async function passwordRefusingServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const server = createServer((socket) => {
    let stage: 'startup' | 'password' = 'startup';
    let buffer = Buffer.alloc(0);
    socket.on('error', () => {});
    socket.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        if (stage === 'startup') {
          if (buffer.length < 8) return;
          const length = buffer.readInt32BE(0);
          if (buffer.length < length) return;
          const code = buffer.readInt32BE(4);
          buffer = buffer.subarray(length);
          if (code === 80877103) {
            socket.write('N'); // SSLRequest: no SSL here
            continue;
          }
          // AuthenticationCleartextPassword
          const ask = Buffer.alloc(9);
          ask.write('R', 0);
          ask.writeInt32BE(8, 1);
          ask.writeInt32BE(3, 5);
          socket.write(ask);
          stage = 'password';
          continue;
        }
        if (buffer.length < 5) return;
        const length = buffer.readInt32BE(1);
        if (buffer.length < length + 1) return;
        buffer = buffer.subarray(length + 1);
        const fields = Buffer.concat([
          Buffer.from('SFATAL\0'),
          Buffer.from('C28P01\0'),
          Buffer.from('Mpassword authentication failed for user "flower_probe"\0'),
          Buffer.from('\0'),
        ]);
        const error = Buffer.alloc(5);
        error.write('E', 0);
        error.writeInt32BE(fields.length + 4, 1);
        socket.end(Buffer.concat([error, fields]));
        return;
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A port on 127.0.0.1 that nothing listens on (bound, then released). */
export async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Every JSONL transcript line under a CLAUDE_CONFIG_DIR's projects/ (the agent's own record). */
export function agentTranscriptEntries(configDir: string): Array<Record<string, unknown>> {
  const root = join(configDir, 'projects');
  const found: Array<Record<string, unknown>> = [];
  const walk = (directory: string) => {
    if (!existsSync(directory)) return;
    for (const name of readdirSync(directory)) {
      const path = join(directory, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.jsonl')) {
        for (const line of readFileSync(path, 'utf8').split('\n')) {
          if (line.trim() === '') continue;
          try {
            found.push(JSON.parse(line) as Record<string, unknown>);
          } catch {
            // A torn last line of a killed writer.
          }
        }
      }
    }
  };
  walk(root);
  return found;
}

export async function until(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  // A query against tables not created yet counts as "not yet".
  while (!(await Promise.resolve(condition()).catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
