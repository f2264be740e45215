/**
 * A loopback TCP proxy in front of PostgreSQL that fails the way networks and servers fail, for
 * the fault-injection tests of the shared store (issues 14 and 18). flower, pg and the server are
 * all real; only the wire between them misbehaves on command:
 *
 * - `reset()`: every open connection is reset (a TCP RST to flower's side, as a crashed peer or a
 *   middlebox that forgot the connection sends), and new connections keep being accepted.
 * - `cut()` / `restore()`: every open connection is dropped and new ones are refused (accepted and
 *   closed at once: the port stays reserved) until restored.
 * - `blackHole(ms)`: connections are accepted and kept open, old and new, but nothing is forwarded
 *   in either direction, as a stalled path or a frozen server looks from the client. Bytes sent
 *   meanwhile are held, and delivered in order when the hole closes (a recovered path retransmits;
 *   dropping them would desynchronise the protocol, which no real network does).
 * - `when(pattern, action)`: the action runs the first time flower sends bytes matching `pattern`
 *   (query text or a bound parameter, as the extended protocol carries them in the clear), before
 *   those bytes are forwarded. That places a fault at an exact moment of the run (the in-flight
 *   marker of a step that starts, the lock's release at exit) with no timing guesswork.
 *
 * Invariants: the proxy never throws into the test (socket errors end that pair only); `close()`
 * ends every socket and the listener, so an aborted test leaves no port or timer behind.
 */
import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';

/** A fault, or any action of the test's own (freezing a server, say) to run at that moment. */
export type FaultAction = 'reset' | 'cut' | { blackHoleMs: number } | (() => void);

interface Pair {
  client: Socket;
  upstream: Socket;
  /** Held while the proxy black-holes: [direction, chunk] in arrival order; null is a FIN. */
  held: Array<[toServer: boolean, chunk: Buffer | null]>;
  /** Bytes flower sent on this connection so far (latin1), for `when` patterns split across chunks. */
  sent: string;
}

interface Trigger {
  pattern: RegExp;
  action: FaultAction;
  /** Matches still to let pass before this one fires. */
  skip: number;
  fired: boolean;
  resolve: () => void;
}

/** How much of a connection's recent traffic `when` patterns see (a query split over two chunks). */
const PATTERN_WINDOW = 64 * 1024;

export class FaultProxy {
  private readonly server: Server;
  private readonly pairs = new Set<Pair>();
  private readonly triggers: Trigger[] = [];
  private open = true;
  private holding = false;
  private holdTimer: NodeJS.Timeout | undefined;
  /** Connections accepted while cut (each closed at once). */
  refused = 0;
  /** Connections reset by `reset()`. */
  resets = 0;
  /** Connections accepted and forwarded, over the proxy's life. */
  accepted = 0;

  private constructor(
    private readonly host: string,
    private readonly targetPort: number,
  ) {
    // Half-open sockets, so that a FIN is forwarded like data: held in a black hole, where a
    // client's goodbye must get no answer (the server never sees it, so it never closes back).
    this.server = createServer({ allowHalfOpen: true }, (client) => this.accept(client));
  }

  /** A proxy on a free port of 127.0.0.1 in front of the server `url` names. */
  static async start(url: string): Promise<FaultProxy> {
    const target = new URL(url);
    const proxy = new FaultProxy(target.hostname, Number(target.port || 5432));
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Connections open through the proxy now. */
  get connections(): number {
    return this.pairs.size;
  }

  /** Whether the proxy holds traffic right now. */
  get blackHoling(): boolean {
    return this.holding;
  }

  private accept(client: Socket): void {
    if (!this.open) {
      this.refused += 1;
      client.on('error', () => {});
      client.destroy();
      return;
    }
    this.accepted += 1;
    const upstream = connect({ port: this.targetPort, host: this.host, allowHalfOpen: true });
    const pair: Pair = { client, upstream, held: [], sent: '' };
    this.pairs.add(pair);
    const end = () => {
      if (!this.pairs.delete(pair)) return;
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.on('data', (chunk: Buffer) => this.fromClient(pair, chunk));
    upstream.on('data', (chunk: Buffer) => this.forward(pair, false, chunk));
    client.on('end', () => this.forward(pair, true, null));
    upstream.on('end', () => this.forward(pair, false, null));
  }

  private fromClient(pair: Pair, chunk: Buffer): void {
    pair.sent = (pair.sent + chunk.toString('latin1')).slice(-PATTERN_WINDOW);
    for (const trigger of this.triggers) {
      if (trigger.fired || !trigger.pattern.test(pair.sent)) continue;
      // Counted once per match: what matched is forgotten, so the next match is new bytes.
      pair.sent = '';
      if (trigger.skip > 0) {
        trigger.skip -= 1;
        continue;
      }
      trigger.fired = true;
      this.apply(trigger.action);
      trigger.resolve();
      // The bytes that matched went out on a connection the action just ended (or are held).
      if (!this.pairs.has(pair)) return;
    }
    this.forward(pair, true, chunk);
  }

  private forward(pair: Pair, toServer: boolean, chunk: Buffer | null): void {
    if (this.holding) {
      pair.held.push([toServer, chunk]);
      return;
    }
    deliver(toServer ? pair.upstream : pair.client, chunk);
  }

  private apply(action: FaultAction): void {
    if (typeof action === 'function') action();
    else if (action === 'reset') this.reset();
    else if (action === 'cut') this.cut();
    else this.blackHole(action.blackHoleMs);
  }

  /**
   * Runs `action` the `nth` time (default the first) flower sends bytes matching `pattern` on any
   * connection; the promise resolves when it fired. Patterns are tested against the connection's
   * recent bytes as latin1 text, so write them for the wire (a parameter value, a table name).
   */
  when(pattern: RegExp, action: FaultAction, nth = 1): Promise<void> {
    return new Promise<void>((resolve) => {
      this.triggers.push({ pattern, action, skip: nth - 1, fired: false, resolve });
    });
  }

  /** Whether every `when` so far has fired. */
  get allFired(): boolean {
    return this.triggers.every((trigger) => trigger.fired);
  }

  /** Resets every open connection (RST to flower); new connections are still accepted. */
  reset(): void {
    for (const pair of [...this.pairs]) {
      this.pairs.delete(pair);
      this.resets += 1;
      pair.client.resetAndDestroy();
      pair.upstream.destroy();
    }
  }

  /** Drops every open connection and refuses new ones until `restore()`. */
  cut(): void {
    this.open = false;
    for (const pair of [...this.pairs]) {
      this.pairs.delete(pair);
      pair.client.destroy();
      pair.upstream.destroy();
    }
  }

  /**
   * Forwards nothing, either way, for `ms` (or until `restore()` when `ms` is omitted); connections
   * stay open and new ones are accepted meanwhile.
   */
  blackHole(ms?: number): void {
    this.holding = true;
    clearTimeout(this.holdTimer);
    this.holdTimer = ms === undefined ? undefined : setTimeout(() => this.restore(), ms);
  }

  /** Ends a cut or a black hole: new connections are forwarded, held bytes delivered. */
  restore(): void {
    this.open = true;
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    if (!this.holding) return;
    this.holding = false;
    for (const pair of this.pairs) {
      for (const [toServer, chunk] of pair.held.splice(0))
        deliver(toServer ? pair.upstream : pair.client, chunk);
    }
  }

  async close(): Promise<void> {
    clearTimeout(this.holdTimer);
    this.holding = false;
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function deliver(socket: Socket, chunk: Buffer | null): void {
  if (socket.destroyed) return;
  if (chunk === null) socket.end();
  else socket.write(chunk);
}
