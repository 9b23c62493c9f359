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

/**
 * One listener's side of the fast path, made once per listener and shared
 * by its connections (nothing per connection but the connection itself).
 */
export interface FastListener {
  /** HTTPS (a TLS socket) or plain HTTP. */
  readonly secure: boolean;
  /** The listener's head limit (node:http's `maxHeaderSize`), bytes. */
  readonly maxHeaderSize: number;
  /** Gives a connection to node:http. */
  readonly fallback: Fallback;
  /** Answers a connection that sent no complete request in the header timeout (`408`, the `clientError` handler). */
  readonly timedOut: (socket: Socket) => void;
}

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
   * Takes a new connection of `listener`. Per connection this adds the
   * {@link FastConnection} and one set entry, no closure or listener of its
   * own: on a fresh TLS connection every listener added costs Node an
   * emitted `newListener` too (bench/tls/notes/2026-11-28-handshake-profile.md).
   */
  accept(socket: Socket, listener: FastListener): void {
    this.#connections.add(socket);
    new FastConnection(socket, this, listener);
  }

  /** Hands a connection to its listener's node:http, its unread bytes (`buf`, from a request's first byte) first. */
  fallback(socket: Socket, buf: Buffer, listener: FastListener): void {
    this.#connections.delete(socket);
    if (buf.length > 0) socket.unshift(buf);
    listener.fallback(socket);
  }

  /** A connection of the fast path closed. */
  closed(socket: Socket): void {
    this.#connections.delete(socket);
  }

  /** Destroys the connections it still serves (the forwarder closes the upstream ones). */
  close(): void {
    for (const socket of this.#connections) socket.destroy();
  }
}
