/**
 * Issue 21 (High 2): a gateway URL on the wrong protocol or port. The built `flower` against real
 * sockets on 127.0.0.1, the real SDK and binary: `https://` on the mock model's plain-HTTP port, and
 * a port whose server answers bytes of another protocol and hangs up (as PostgreSQL does when sent
 * an HTTP request). Both passed the TCP probe, so each was retried like an outage: six attempts of
 * the binary's ten retries, ~20 minutes, ending on "no connection: refused, reset or timed out".
 *
 * Now each stops like a refused port does: the bound is the refused port's own time, measured in
 * the same test, and no flower retry round may start.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { mock } from '../../src/testing/index.js';
import { closedPort } from '../support/closed-port.js';
import { cleanUp, startMock } from '../support/scratch.js';
import { type FlowerRun, isolatedEnv, mockedEnv, runFlower, tempDir } from './cli-harness.js';

const servers: Server[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const server of servers.splice(0)) await new Promise((done) => server.close(done));
  await cleanUp();
});

/** The binary's own default: ten retries per attempt with growing waits (~3 minutes). */
const BINARY_DEFAULT_RETRIES = { CLAUDE_CODE_MAX_RETRIES: '10' };
/** A wrong-protocol stop may take this many times a refused port's (one more probe, a loaded machine). */
const SLOWER_THAN_REFUSED = 3;

/** Like PostgreSQL answering an HTTP request line: an error packet, then the connection closed. */
const POSTGRES_LIKE = Buffer.from(
  'E\x00\x00\x00\x4cSFATAL\x00Minvalid length of startup packet\x00\x00',
  'latin1',
);

/** A server that writes `POSTGRES_LIKE` to each connection and closes it; its port and a connection count. */
async function notHttpServer(): Promise<{ port: number; connections: () => number }> {
  let connections = 0;
  const server = createServer((socket) => {
    connections += 1;
    sockets.push(socket);
    socket.on('error', () => {});
    socket.end(POSTGRES_LIKE);
  });
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { port: (server.address() as { port: number }).port, connections: () => connections };
}

async function timed(args: string[], env: Record<string, string>, killAfterMs: number) {
  const started = Date.now();
  const run = await runFlower(args, { env, timeoutMs: killAfterMs });
  return { run, ms: Date.now() - started };
}

/** `once` against a port nothing listens on: the fast stop the others are measured against. */
async function refusedBaseline(): Promise<number> {
  const port = await closedPort();
  const { run, ms } = await timed(
    ['once', 'Do something.', '-w', tempDir('wp-refused')],
    mockedEnv({ url: `http://127.0.0.1:${port}` }, BINARY_DEFAULT_RETRIES),
    120_000,
  );
  expect(run.stderr).toContain(`nothing listens at 127.0.0.1:${port}`);
  return ms;
}

function lastLine(run: FlowerRun): string {
  return run.stderr.trimEnd().split('\n').at(-1) ?? '';
}

function expectNoRetryRound(run: FlowerRun): void {
  expect(run.stdout + run.stderr).not.toMatch(/Attempt \d+ failed/);
  expect(run.stdout + run.stderr).not.toContain('waiting for it to come back');
}

describe('an endpoint that never answered in the protocol its URL names', () => {
  it('https:// on a plain-HTTP port stops as fast as a refused port, saying "use http://"', async () => {
    const baseline = await refusedBaseline();
    const model = await startMock([mock.text('never reached')]);
    const url = `https://127.0.0.1:${model.port}`;
    const { run, ms } = await timed(
      ['once', 'Do something.', '-w', tempDir('wp-https')],
      mockedEnv({ url }, BINARY_DEFAULT_RETRIES),
      baseline * SLOWER_THAN_REFUSED + 15_000,
    );
    expect(run.status, run.stderr).toBe(1);
    expect(ms).toBeLessThan(baseline * SLOWER_THAN_REFUSED);
    expectNoRetryRound(run);
    const line = lastLine(run);
    expect(line).toContain(`${url} answers plain HTTP, not HTTPS`);
    expect(line).toContain(`use http://127.0.0.1:${model.port}`);
    expect(line).toContain('flower doctor');
    // The protocol check's HEAD is the only plain request; no Messages request ever got through.
    expect(model.mainRequests()).toHaveLength(0);
  });

  it.each(['http', 'https'])(
    '%s:// on a port that answers another protocol stops as fast, asking "is this the right port?"',
    async (scheme) => {
      const baseline = await refusedBaseline();
      const server = await notHttpServer();
      const url = `${scheme}://127.0.0.1:${server.port}`;
      const { run, ms } = await timed(
        ['once', 'Do something.', '-w', tempDir('wp-not-http')],
        mockedEnv({ url }, BINARY_DEFAULT_RETRIES),
        baseline * SLOWER_THAN_REFUSED + 15_000,
      );
      expect(run.status, run.stderr).toBe(1);
      expect(ms).toBeLessThan(baseline * SLOWER_THAN_REFUSED);
      expectNoRetryRound(run);
      const line = lastLine(run);
      expect(line).toContain(`${url} is not an HTTP server`);
      expect(line).toContain('is this the right port?');
      expect(line).toContain('flower doctor');
      // Far fewer than one attempt's eleven requests: the binary's first failure ended it.
      expect(server.connections()).toBeLessThan(11);
    },
  );
});

describe('the real thing: ANTHROPIC_BASE_URL on a PostgreSQL port', () => {
  const postgres = process.env.FLOWER_TEST_POSTGRES_URL;
  // PostgreSQL hangs up on an HTTP request line without a byte: the ambiguous case (a proxy whose
  // backend is down does the same), so only "never answered this task" makes it a stop.
  it.runIf(postgres !== undefined)(
    'stops as fast as a refused port, asking "is this the right port?"',
    async () => {
      const baseline = await refusedBaseline();
      const { hostname, port } = new URL(postgres ?? 'postgres://127.0.0.1:5432');
      const url = `http://${hostname}:${port || '5432'}`;
      const { run, ms } = await timed(
        ['once', 'Do something.', '-w', tempDir('wp-postgres')],
        mockedEnv({ url }, BINARY_DEFAULT_RETRIES),
        baseline * SLOWER_THAN_REFUSED + 15_000,
      );
      expect(run.status, run.stderr).toBe(1);
      expect(ms).toBeLessThan(baseline * SLOWER_THAN_REFUSED);
      expectNoRetryRound(run);
      expect(lastLine(run)).toContain(`${url} is not an HTTP server (closed the connection without a byte)`);
      expect(lastLine(run)).toContain('is this the right port? — fix ANTHROPIC_BASE_URL; flower doctor');
    },
  );
});

describe('the same mistakes before a run and in flower doctor', () => {
  it('go, with the start-up probe: stops before any work with the same words and the doctor hint', async () => {
    const model = await startMock([mock.text('never reached')]);
    const url = `https://127.0.0.1:${model.port}`;
    const env = mockedEnv({ url }, BINARY_DEFAULT_RETRIES);
    delete env.FLOWER_NO_PROBE;
    const workspace = tempDir('wp-go');
    const run = await runFlower(['-w', workspace, '--clarify-only', '--timeout', '0', 'count the words'], {
      env,
      timeoutMs: 120_000,
    });
    expect(run.status, run.stderr).toBe(1);
    expectNoRetryRound(run);
    const line = lastLine(run);
    expect(line).toContain(`${url} answers plain HTTP, not HTTPS`);
    expect(line).toContain(`use http://127.0.0.1:${model.port}`);
    expect(line).toContain('flower doctor');
    expect(model.mainRequests()).toHaveLength(0);
  });

  it('flower doctor names each mistake on its Endpoint line, and --probe calls it a setting', async () => {
    const model = await startMock([]);
    const server = await notHttpServer();
    const doctor = (url: string, ...args: string[]) => {
      const env = isolatedEnv({ ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: url });
      delete env.FLOWER_NO_PROBE;
      return runFlower(['doctor', ...args], { cwd: tempDir('wp-doctor'), env, timeoutMs: 60_000 });
    };
    const https = `https://127.0.0.1:${model.port}`;
    const wrongScheme = await doctor(https);
    expect(wrongScheme.stdout).toMatch(
      new RegExp(
        `Endpoint: 127\\.0\\.0\\.1:${model.port} reachable \\(TCP\\), but ${https} answers plain HTTP, not HTTPS .*: use http://127\\.0\\.0\\.1:${model.port} — fix ANTHROPIC_BASE_URL`,
      ),
    );
    const notHttp = await doctor(`http://127.0.0.1:${server.port}`);
    expect(notHttp.stdout).toContain(
      `Endpoint: 127.0.0.1:${server.port} reachable (TCP), but http://127.0.0.1:${server.port} is not an HTTP server (answered "E`,
    );
    expect(notHttp.stdout).toContain('is this the right port? — fix ANTHROPIC_BASE_URL');
    const probed = await doctor(https, '--probe');
    expect(probed.stdout).toContain('Probe: config');
    expect(probed.stdout).toContain(`use http://127.0.0.1:${model.port}`);
    expect(probed.status).toBe(1);
    expect(model.mainRequests()).toHaveLength(0);
  });
});
