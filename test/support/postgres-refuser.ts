/**
 * A loopback stand-in for a PostgreSQL server that turns a client away the way a real one does.
 *
 * Why a stand-in: no server on these machines rejects anyone. CI's PostgreSQL trusts every
 * loopback connection (no password is checked) and PGlite accepts any user and database, so a wrong
 * password or a missing database cannot be provoked there. This speaks just enough of the wire
 * protocol (v3): it reads the startup message, optionally asks for a cleartext password, and answers
 * with the FATAL ErrorResponse PostgreSQL sends in that case (same SQLSTATE, same wording), then
 * closes. Everything on the client side (pg, its pool, flower's error handling) is the real code.
 */
import { createServer, type Server, type Socket } from 'node:net';

export interface Refusal {
  /** SQLSTATE, e.g. 28P01 (invalid_password) or 3D000 (invalid_catalog_name). */
  code: string;
  message: string;
  /**
   * Ask for a password first, as a password-checking server does: in clear text (then refuse what
   * comes), or by SCRAM-SHA-256, PostgreSQL's default since version 14 (pg gives up by itself when it
   * has no password to answer with).
   */
  askPassword?: 'cleartext' | 'scram';
}

export const WRONG_PASSWORD = (user: string): Refusal => ({
  code: '28P01',
  message: `password authentication failed for user "${user}"`,
  askPassword: 'cleartext',
});

export const MISSING_DATABASE = (database: string): Refusal => ({
  code: '3D000',
  message: `database "${database}" does not exist`,
});

function message(type: string, body: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.write(type, 0, 'latin1');
  header.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

function errorResponse(refusal: Refusal): Buffer {
  const field = (tag: string, value: string) => Buffer.from(`${tag}${value}\0`, 'utf8');
  return message(
    'E',
    Buffer.concat([
      field('S', 'FATAL'),
      field('V', 'FATAL'),
      field('C', refusal.code),
      field('M', refusal.message),
      Buffer.from([0]),
    ]),
  );
}

function handle(socket: Socket, refusal: Refusal): void {
  let buffered = Buffer.alloc(0);
  let stage: 'startup' | 'password' = 'startup';
  socket.on('error', () => {});
  socket.on('data', (chunk) => {
    buffered = Buffer.concat([buffered, chunk]);
    // Startup and SSL requests have no type byte; the password message does.
    const offset = stage === 'startup' ? 0 : 1;
    if (buffered.length < offset + 4) return;
    const length = buffered.readInt32BE(offset);
    if (buffered.length < offset + length) return;
    const isSslRequest = stage === 'startup' && length === 8 && buffered.readInt32BE(4) === 80877103;
    buffered = buffered.subarray(offset + length);
    if (isSslRequest) {
      socket.write('N');
      return;
    }
    if (stage === 'startup' && refusal.askPassword !== undefined) {
      stage = 'password';
      const body =
        refusal.askPassword === 'scram'
          ? Buffer.concat([Buffer.from([0, 0, 0, 10]), Buffer.from('SCRAM-SHA-256\0\0', 'latin1')])
          : Buffer.from([0, 0, 0, 3]); // AuthenticationSASL (10) / AuthenticationCleartextPassword (3)
      socket.write(message('R', body));
      return;
    }
    socket.end(errorResponse(refusal));
  });
}

/** Starts the stand-in on 127.0.0.1; `close()` stops it. */
export async function startRefuser(refusal: Refusal): Promise<{ port: number; close: () => Promise<void> }> {
  const server: Server = createServer((socket) => handle(socket, refusal));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    port: address.port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
