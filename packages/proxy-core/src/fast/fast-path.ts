import type { Socket } from 'node:net';
import type { ClientIpResolver } from '../client-ip.js';
import type { ListenerLimits } from '../connection-limits.js';
import type { FrontDoor } from '../data-plane/front-door.js';
import type { RequestCounts } from '../data-plane/request-record.js';
import type { HttpForwarder } from '../forward/forwarder.js';
import type { DataPlaneHooks } from '../hooks.js';
import { FastConnection } from './fast-connection.js';
import type { FastUpstreams } from './upstream-conn.js';

/** Where a connection goes that the fast path does not serve: the node:http server's own connection listener. */
export type Fallback = (socket: Socket) => void;

/** What the fast path shares with its {@link ProxyServer}. */
export interface FastPathOptions {
  readonly door: FrontDoor;
  readonly forwarder: HttpForwarder;
  readonly hooks: DataPlaneHooks;
  readonly clientIp: ClientIpResolver;
  readonly counts: RequestCounts;
  readonly limits: Readonly<ListenerLimits>;
}

/**
 * Whether the HTTP/1.1 fast path is on: `PROXY_FAST_PATH=0` turns it off
 * (every request then goes through node:http, as before it existed).
 */
export function fastPathEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.PROXY_FAST_PATH !== '0';
}

/**
 * The HTTP/1.1 fast path of one {@link ProxyServer}: its listeners hand it
 * each new plain connection ({@link accept}); it serves the requests it
 * covers (`fast-connection.ts`) and hands the connection to node:http, with
 * the bytes it read, at the first request it does not ({@link fallback}).
 */
export class FastPath {
  readonly door: FrontDoor;
  readonly forwarder: HttpForwarder;
  readonly hooks: DataPlaneHooks;
  readonly clientIp: ClientIpResolver;
  readonly counts: RequestCounts;
  readonly limits: Readonly<ListenerLimits>;
  /** The `Keep-Alive: timeout=N` Node announces (seconds). */
  readonly keepAliveSeconds: number;
  readonly writeTimeoutMs: number;
  /** The forwarder's fast upstream connections. */
  readonly upstreams: FastUpstreams;
  /** Requests answered on the fast path so far. */
  served = 0;
  readonly #fallbacks = new WeakMap<Socket, Fallback>();
  readonly #timeouts = new WeakMap<Socket, (socket: Socket) => void>();
  readonly #connections = new Set<Socket>();

  constructor(options: FastPathOptions) {
    this.door = options.door;
    this.forwarder = options.forwarder;
    this.hooks = options.hooks;
    this.clientIp = options.clientIp;
    this.counts = options.counts;
    this.limits = options.limits;
    this.keepAliveSeconds = Math.floor(options.limits.keepAliveTimeoutMs / 1000);
    this.writeTimeoutMs = options.limits.writeTimeoutMs;
    this.upstreams = options.forwarder.fastUpstreams;
  }

  /**
   * Takes a new connection. `maxHeaderSize`: the listener's (node:http's
   * option, bytes). `fallback` gives it to node:http; `timedOut`
   * answers a connection that sent no complete request in the header
   * timeout (the listeners' `clientError` handler, `408`).
   */
  accept(
    socket: Socket,
    secure: boolean,
    maxHeaderSize: number,
    fallback: Fallback,
    timedOut: (socket: Socket) => void,
  ): void {
    this.#fallbacks.set(socket, fallback);
    this.#timeouts.set(socket, timedOut);
    this.#connections.add(socket);
    socket.once('close', () => this.#connections.delete(socket));
    // A head near the listener's limit goes to node:http, which answers 431 over it.
    new FastConnection(socket, this, secure, maxHeaderSize - 512);
  }

  /** Hands a connection to node:http, its unread bytes (`buf`, from a request's first byte) first. */
  fallback(socket: Socket, buf: Buffer, _secure: boolean): void {
    const fallback = this.#fallbacks.get(socket);
    this.#connections.delete(socket);
    if (fallback === undefined) {
      socket.destroy();
      return;
    }
    if (buf.length > 0) socket.unshift(buf);
    fallback(socket);
  }

  timedOut(socket: Socket): void {
    const timedOut = this.#timeouts.get(socket);
    if (timedOut !== undefined) timedOut(socket);
    else socket.destroy();
  }

  /** Destroys the connections it still serves (the forwarder closes the upstream ones). */
  close(): void {
    for (const socket of this.#connections) socket.destroy();
  }
}
