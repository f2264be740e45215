/**
 * Issue 21 (High 2): the protocol check behind "use http://" and "is this the right port?", against
 * real sockets on 127.0.0.1: the mock model (plain HTTP), a server that answers bytes of another
 * protocol, one that hangs up at once, one that never says a word, and a TLS server.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { probeCredentials } from '../../../src/config/probe.js';
import { checkProtocol, protocolMistakeText, shownUrl } from '../../../src/config/reachability.js';
import { type MockModel, startMockModel } from '../../../src/testing/index.js';
import { closedPort } from '../../support/closed-port.js';

let model: MockModel | undefined;
const servers: Server[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  await model?.close();
  model = undefined;
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const server of servers.splice(0)) {
    await new Promise((done) => server.close(done));
  }
});

/** A TCP server on 127.0.0.1 that does `onSocket` with every connection; its port. */
async function tcpServer(onSocket: (socket: Socket) => void): Promise<number> {
  const server = createServer((socket) => {
    sockets.push(socket);
    onSocket(socket);
  });
  servers.push(server);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return (server.address() as { port: number }).port;
}

/** Like PostgreSQL told an HTTP request line: an error packet, then the connection closed. */
const POSTGRES_LIKE = Buffer.from(
  'E\x00\x00\x00\x4cSFATAL\x00Minvalid length of startup packet\x00\x00',
  'latin1',
);

const hasOpenssl = (() => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** A self-signed certificate made on the spot (no key material is kept in the repository). */
function selfSigned(): { key: Buffer; cert: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'flower-tls-'));
  try {
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1'].concat([
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ]),
      { stdio: 'ignore' },
    );
    return { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('checkProtocol', () => {
  it('plain HTTP as the URL says: speaks, and the mock model sees no Messages request', async () => {
    model = await startMockModel({});
    const check = await checkProtocol(model.url, 2_000);
    expect(check).toMatchObject({ speaks: true });
    expect(model.mainRequests()).toHaveLength(0);
  });

  it('https:// on a plain-HTTP port: use http://, the port kept', async () => {
    model = await startMockModel({});
    const url = `https://127.0.0.1:${model.port}`;
    const check = await checkProtocol(url, 2_000);
    expect(check).toMatchObject({ speaks: false, mistake: 'use-http' });
    expect(protocolMistakeText(url, check)).toMatch(
      new RegExp(
        `^https://127\\.0\\.0\\.1:${model.port} answers plain HTTP, not HTTPS \\(TLS failed: .*\\): use http://127\\.0\\.0\\.1:${model.port}$`,
      ),
    );
  });

  it.each([
    ['http', 'answered'],
    ['https', 'answered'],
  ])('%s:// on a port that answers another protocol: not HTTP, is this the right port?', async (scheme) => {
    const port = await tcpServer((socket) => socket.end(POSTGRES_LIKE));
    const url = `${scheme}://127.0.0.1:${port}/anthropic`;
    const check = await checkProtocol(url, 2_000);
    expect(check).toMatchObject({ speaks: false, mistake: 'not-http' });
    expect(check.observed).toContain('answered "E\\x00\\x00\\x00L');
    expect(protocolMistakeText(url, check)).toMatch(
      new RegExp(
        `^${scheme}://127\\.0\\.0\\.1:${port}/anthropic is not an HTTP server \\(.*\\): is this the right port\\?$`,
      ),
    );
  });

  it.each(['http', 'https'])('%s:// on a port that hangs up without a byte: not HTTP', async (scheme) => {
    const port = await tcpServer((socket) => socket.destroy());
    const check = await checkProtocol(`${scheme}://127.0.0.1:${port}`, 2_000);
    expect(check).toMatchObject({ speaks: false, mistake: 'not-http' });
    expect(check.observed).toContain('closed the connection without a byte');
  });

  it('a server that accepts and never says a word is undecided, not a mistake', async () => {
    const port = await tcpServer(() => {});
    const check = await checkProtocol(`http://127.0.0.1:${port}`, 300);
    expect(check.speaks).toBeUndefined();
    expect(check.mistake).toBeUndefined();
  });

  it('nothing listening is reachability’s question: undecided', async () => {
    const port = await closedPort();
    const check = await checkProtocol(`https://127.0.0.1:${port}`, 1_000);
    expect(check.speaks).toBeUndefined();
  });

  it('a malformed URL is undecided, without throwing', async () => {
    expect((await checkProtocol('not a url', 200)).speaks).toBeUndefined();
  });

  it.runIf(hasOpenssl)(
    'TLS as the URL says speaks (a self-signed certificate is not judged); http:// on it: use https://',
    async () => {
      const server = createHttpsServer(selfSigned(), (_request, response) => response.end('ok'));
      servers.push(server);
      await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
      const port = (server.address() as { port: number }).port;
      expect(await checkProtocol(`https://127.0.0.1:${port}`, 2_000)).toMatchObject({ speaks: true });
      const url = `http://127.0.0.1:${port}`;
      const check = await checkProtocol(url, 2_000);
      expect(check).toMatchObject({ speaks: false, mistake: 'use-https' });
      expect(protocolMistakeText(url, check)).toContain(`: use https://127.0.0.1:${port}`);
    },
  );
});

describe('protocolMistakeText and shownUrl', () => {
  it('keeps a default port explicit in the fix, so https://host does not become port 80', () => {
    const text = protocolMistakeText('https://gw.example/anthropic', {
      speaks: false,
      mistake: 'use-http',
      observed: 'x',
    });
    expect(text).toBe(
      'https://gw.example/anthropic answers plain HTTP, not HTTPS (x): use http://gw.example:443/anthropic',
    );
  });

  it('no mistake, no text', () => {
    expect(protocolMistakeText('http://h:1', { speaks: true, observed: 'answered HTTP' })).toBeUndefined();
  });

  it('never shows a user, password or query', () => {
    expect(shownUrl('https://user:secret@gw.example:8443/v?key=sk-1')).toBe('https://gw.example:8443/v');
  });
});

describe('the credential probe on the wrong protocol or port', () => {
  const env = (url: string) => ({ ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: url });

  it('https:// on a plain-HTTP port is a setting to fix (config), not the network', async () => {
    model = await startMockModel({});
    const result = await probeCredentials(env(`https://127.0.0.1:${model.port}`), { timeoutMs: 2_000 });
    expect(result.verdict).toBe('config');
    expect(result.detail).toContain(`use http://127.0.0.1:${model.port}`);
    expect(model.mainRequests()).toHaveLength(0);
  });

  it('a port answering another protocol is config too', async () => {
    const port = await tcpServer((socket) => socket.end(POSTGRES_LIKE));
    const result = await probeCredentials(env(`http://127.0.0.1:${port}`), { timeoutMs: 2_000 });
    expect(result.verdict).toBe('config');
    expect(result.detail).toContain('is this the right port?');
  });

  it('a hang-up without a byte is named but stays net: a proxy with its backend down does the same', async () => {
    const port = await tcpServer((socket) => socket.destroy());
    const result = await probeCredentials(env(`http://127.0.0.1:${port}`), { timeoutMs: 2_000 });
    expect(result.verdict).toBe('net');
    expect(result.detail).toContain('is not an HTTP server (closed the connection without a byte)');
  });

  it('a refused port stays net with the socket error, as before', async () => {
    const port = await closedPort();
    const result = await probeCredentials(env(`http://127.0.0.1:${port}`), { timeoutMs: 2_000 });
    expect(result.verdict).toBe('net');
    expect(result.detail).toContain('ECONNREFUSED');
  });
});
