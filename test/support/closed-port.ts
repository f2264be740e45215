/** Ports nothing listens on, for tests of unreachable endpoints (loopback only). */
import { createServer } from 'node:net';

/** A port on 127.0.0.1 that nothing listens on (bound, noted, released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}
