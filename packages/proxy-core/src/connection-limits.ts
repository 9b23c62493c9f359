import type http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ServerOptions } from '@proxyd/model';
import { rateLimitKey } from './middleware/rate-limiter.js';
import { type ExchangeSlot, kExchange } from './slots.js';
import type { Http2Limits } from './tls/http2.js';

/**
 * Limits on the client connections of every data-plane listener (plain
 * HTTP, and HTTP/1.1 on the HTTPS listeners; HTTP/2 streams have their own,
 * `Http2Limits`). Each has a default, the one in {@link LISTENER_DEFAULTS},
 * in the range nginx uses. Issue 20: before them a header slowloris or a
 * silent connection was cut after up to 90 s (Node's 60 s checked every
 * 30 s), and a trickled body held its connection and an upstream connection
 * for 330 s.
 */
export interface ListenerLimits {
  /**
   * A request head (request line and headers) must have arrived this long
   * after its first byte, or after the connection opened (a silent
   * connection), ms; else `408` and the connection closes. nginx's
   * `client_header_timeout`; Node's `headersTimeout`. Default 60000.
   */
  headersTimeoutMs: number;
  /** A TLS handshake must finish within this, ms (nginx's `ssl_handshake_timeout`). Default 60000. */
  handshakeTimeoutMs: number;
  /**
   * While a request body is being received and the data plane reads it, no
   * byte for this long cuts the request: `408` (or the connection reset
   * once a response began), the upstream request aborted, the connection
   * closed; ms. nginx's `client_body_timeout` (between two reads). Time the
   * data plane itself does not read (an upstream slow to take the body, a
   * step not yet decided) does not count. Default 60000.
   */
  bodyTimeoutMs: number;
  /**
   * A body must also arrive at this rate, bytes/s, over each
   * `bodyTimeoutMs` window (0: no minimum): a body trickled a byte at a time
   * is cut like a stalled one (Kestrel's `MinRequestBodyDataRate`, Apache's
   * `mod_reqtimeout` `MinRate`). Default 240.
   */
  bodyMinRate: number;
  /**
   * A request (head and body) must have been received this long after it
   * began, ms; else `408` and the connection closes. Node's
   * `requestTimeout`, as `Http2Limits.requestTimeoutMs`. Must be at least
   * `headersTimeoutMs` (0: none). Default 300000.
   */
  requestTimeoutMs: number;
  /**
   * An idle keep-alive connection closes after this, ms; announced as
   * `Keep-Alive: timeout=N`. nginx's `keepalive_timeout` 75 s rather than
   * Node's 5 s: a load balancer in front (AWS ALB: 60 s idle) must not
   * reuse a connection the proxy is closing. Default 75000.
   */
  keepAliveTimeoutMs: number;
  /**
   * After an answer that left a request body unread (`401`, `413`, `429`, a
   * redirect, …), the connection, marked `Connection: close`, is half
   * closed and what the client still sends is discarded until it closes,
   * at most this long, ms (nginx's lingering close: a reset would erase the
   * answer from the client's buffers). Default 5000.
   */
  lingerMs: number;
  /**
   * A response must have been written whole this long after its request
   * arrived, ms; else its connection is reset (an HTTP/2 stream: the
   * stream). Go's `WriteTimeout`, Caddy's `timeouts { write }`: a bound on
   * the whole response, so a long download or event stream meets it too;
   * WebSockets are exempt. 0: none. Default 0.
   */
  writeTimeoutMs: number;
  /**
   * Largest request head of HTTP/1.1 (request line and headers), bytes;
   * over it `431` and the connection closes (Node's `maxHeaderSize`). The
   * HTTPS listeners take it for HTTP/2's header list too, unless
   * `Http2Limits.maxHeaderListSize` is set. Default 16384.
   */
  maxHeaderSize: number;
  /** How often the header, request and body timeouts are checked, ms (Node's default is 30000). Default 1000. */
  checkIntervalMs: number;
  /**
   * Connections one client address may hold at once on the data-plane
   * listeners (an IPv6 client by its /64); one more is closed at once. The
   * peer address counts, not `X-Forwarded-For`: a peer inside
   * `trusted_proxies` (a load balancer, which carries many clients) is not
   * capped per address. Per process, or per node when the processes share
   * a {@link ConnectionCounter}. 0: no cap. Default 256.
   */
  maxConnectionsPerIp: number;
  /** Connections all clients may hold at once on the data-plane listeners; one more is closed at once. 0: no cap. Default 10000. */
  maxConnections: number;
}

/** The defaults of {@link ListenerLimits}. */
export const LISTENER_DEFAULTS: Readonly<ListenerLimits> = {
  headersTimeoutMs: 60_000,
  handshakeTimeoutMs: 60_000,
  bodyTimeoutMs: 60_000,
  bodyMinRate: 240,
  requestTimeoutMs: 300_000,
  keepAliveTimeoutMs: 75_000,
  lingerMs: 5_000,
  checkIntervalMs: 1_000,
  writeTimeoutMs: 0,
  maxHeaderSize: 16 * 1024,
  maxConnectionsPerIp: 256,
  maxConnections: 10_000,
};

/**
 * The listener limits a Proxyfile's `servers` block sets (the rest keep
 * their defaults): `read_header` → `headersTimeoutMs` (with
 * `requestTimeoutMs` raised to it when longer), `read_body` →
 * `bodyTimeoutMs`, `write` → `writeTimeoutMs`, `idle` →
 * `keepAliveTimeoutMs` and HTTP/2's `sessionIdleMs`, `max_header_size` →
 * `maxHeaderSize` (HTTP/2's header list too), `max_connections_per_ip` →
 * `maxConnectionsPerIp`.
 */
export function listenerLimitsOf(servers: ServerOptions | undefined): {
  limits: Partial<ListenerLimits>;
  http2: Partial<Http2Limits>;
} {
  const limits: Partial<ListenerLimits> = {};
  const http2: Partial<Http2Limits> = {};
  if (servers === undefined) return { limits, http2 };
  if (servers.read_header_ms !== undefined) {
    limits.headersTimeoutMs = servers.read_header_ms;
    // Node refuses a head timeout longer than the request's.
    if (servers.read_header_ms > LISTENER_DEFAULTS.requestTimeoutMs) limits.requestTimeoutMs = servers.read_header_ms;
  }
  if (servers.read_body_ms !== undefined) limits.bodyTimeoutMs = servers.read_body_ms;
  if (servers.write_ms !== undefined) limits.writeTimeoutMs = servers.write_ms;
  if (servers.idle_ms !== undefined) {
    limits.keepAliveTimeoutMs = servers.idle_ms;
    http2.sessionIdleMs = servers.idle_ms;
  }
  if (servers.max_header_size_bytes !== undefined) {
    limits.maxHeaderSize = servers.max_header_size_bytes;
    http2.maxHeaderListSize = servers.max_header_size_bytes;
  }
  if (servers.max_connections_per_ip !== undefined) limits.maxConnectionsPerIp = servers.max_connections_per_ip;
  return { limits, http2 };
}

/** The `http.createServer` (and HTTP/1.1-fallback) options that carry the limits. */
export function http1ServerOptions(limits: Readonly<ListenerLimits>): http.ServerOptions {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: limits.checkIntervalMs,
    maxHeaderSize: limits.maxHeaderSize,
  };
}

/**
 * Arms the write timeout of one response ({@link ListenerLimits.writeTimeoutMs}):
 * a response not finished in time is destroyed with its connection (HTTP/1)
 * or stream (HTTP/2). Called per request only when the timeout is set.
 */
export function armWriteTimeout(res: ServerResponse, ms: number): void {
  const timer = setTimeout(cutUnwritten, ms, res);
  timer.unref();
  res.once('close', () => clearTimeout(timer));
}

function cutUnwritten(res: ServerResponse): void {
  if (!res.writableFinished) res.destroy();
}

/**
 * The node-wide count of connections per client address, when several
 * processes serve the same listeners (the multi-core daemon's workers: the
 * primary counts for all of them). Keys are those of the per-address cap
 * (an IPv4 address, an IPv6 /64).
 */
export interface ConnectionCounter {
  /** One more connection of `key`: resolves whether the node holds fewer than its cap; rejects when no answer can come. */
  acquire(key: string): Promise<boolean>;
  /** A connection that {@link acquire} admitted has closed. */
  release(key: string): void;
}

/** The per-address key of a counted connection, and whether a {@link ConnectionCounter} holds it. */
class Held {
  remote = false;
  constructor(readonly key: string | null) {}
}

/**
 * Counts the connections of the data-plane listeners, per client address
 * and in total, and closes one over either cap as it arrives. One per
 * `ProxyServer`: every listener of a process shares the counts. Alone,
 * a process admits at once ({@link onConnection}, the listeners' first
 * 'connection' listener). With a {@link ConnectionCounter} (several
 * processes), a capped connection is held, not read, until the counter
 * answers ({@link admit}): the cap is then the node's, whichever process
 * the kernel gave each connection to; a counter that does not answer
 * leaves the process's own count as the cap.
 */
export class ConnectionLimiter {
  readonly #perIp: number;
  readonly #total: number;
  readonly #isTrusted: (ip: string) => boolean;
  readonly #counter: ConnectionCounter | undefined;
  readonly #byKey = new Map<string, number>();
  #open = 0;
  #refused = 0;
  /** The listeners' first 'connection' listener: counts the socket, or destroys it over a cap. */
  readonly onConnection = (socket: Duplex): void => {
    this.#admit(socket as Socket);
  };

  constructor(limits: Readonly<ListenerLimits>, isTrusted: (ip: string) => boolean, counter?: ConnectionCounter) {
    this.#perIp = limits.maxConnectionsPerIp;
    this.#total = limits.maxConnections;
    this.#isTrusted = isTrusted;
    this.#counter = limits.maxConnectionsPerIp > 0 ? counter : undefined;
  }

  /** Whether admission may wait for a {@link ConnectionCounter} (the listeners then use {@link admit}). */
  get waits(): boolean {
    return this.#counter !== undefined;
  }

  /** Connections open now. */
  get open(): number {
    return this.#open;
  }

  /** Connections closed on arrival so far (over a cap). */
  get refused(): number {
    return this.#refused;
  }

  /**
   * Counts a connection accepted paused, and calls `deliver` (which hands it
   * to HTTP or TLS and lets it read) once it is admitted: at once when no
   * per-address cap applies to it, after the counter's answer otherwise.
   * A connection over a cap is destroyed unread.
   */
  admit(socket: Socket, deliver: () => void): void {
    const held = this.#admit(socket);
    if (held === null) return;
    const counter = this.#counter;
    if (counter === undefined || held.key === null) {
      deliver();
      return;
    }
    const key = held.key;
    counter.acquire(key).then(
      (admitted) => {
        if (!admitted) {
          this.#refuse(socket);
          return;
        }
        if (socket.destroyed) {
          counter.release(key);
          return;
        }
        held.remote = true;
        deliver();
      },
      // No answer (the counter's process is stuck or gone): this process's own count is the cap.
      () => {
        if (!socket.destroyed) deliver();
      },
    );
  }

  #admit(socket: Socket): Held | null {
    if (this.#total > 0 && this.#open >= this.#total) {
      this.#refuse(socket);
      return null;
    }
    const peer = socket.remoteAddress;
    const key = this.#perIp > 0 && peer !== undefined && !this.#isTrusted(peer) ? rateLimitKey(peer) : null;
    if (key !== null) {
      const held = this.#byKey.get(key) ?? 0;
      if (held >= this.#perIp) {
        this.#refuse(socket);
        return null;
      }
      this.#byKey.set(key, held + 1);
    }
    this.#open++;
    const held = new Held(key);
    // One closure per connection (not per request); \`on\`, not \`once\`: 'close' comes once, and \`once\` wraps.
    socket.on('close', () => this.#release(held));
    return held;
  }

  #refuse(socket: Socket): void {
    this.#refused++;
    socket.destroy();
  }

  #release(held: Held): void {
    this.#open--;
    const key = held.key;
    if (key === null) return;
    if (held.remote) this.#counter?.release(key);
    const count = (this.#byKey.get(key) ?? 1) - 1;
    if (count <= 0) this.#byKey.delete(key);
    else this.#byKey.set(key, count);
  }
}

/**
 * The node-wide side of {@link ConnectionCounter}: connections per key and
 * per process, under one cap. A process that exits gives its connections
 * back at once ({@link forget}).
 */
export class ConnectionCounts {
  readonly #cap: number;
  readonly #byKey = new Map<string, number>();
  readonly #byProcess = new Map<number, Map<string, number>>();

  /** `cap`: connections per key on the node (`maxConnectionsPerIp`). */
  constructor(cap: number) {
    this.#cap = cap;
  }

  /** Connections of `key` held now, over every process. */
  held(key: string): number {
    return this.#byKey.get(key) ?? 0;
  }

  /** One more connection of `key` for `process`, unless the node holds `cap` already. */
  acquire(process: number, key: string): boolean {
    const held = this.#byKey.get(key) ?? 0;
    if (held >= this.#cap) return false;
    this.#byKey.set(key, held + 1);
    let mine = this.#byProcess.get(process);
    if (mine === undefined) {
      mine = new Map();
      this.#byProcess.set(process, mine);
    }
    mine.set(key, (mine.get(key) ?? 0) + 1);
    return true;
  }

  /** A connection of `key` that `process` acquired closed. */
  release(process: number, key: string): void {
    const mine = this.#byProcess.get(process);
    const count = mine?.get(key) ?? 0;
    if (mine === undefined || count === 0) return;
    if (count === 1) mine.delete(key);
    else mine.set(key, count - 1);
    this.#drop(key, 1);
  }

  /** `process` is gone: its connections with it. */
  forget(process: number): void {
    const mine = this.#byProcess.get(process);
    if (mine === undefined) return;
    this.#byProcess.delete(process);
    for (const [key, count] of mine) this.#drop(key, count);
  }

  #drop(key: string, count: number): void {
    const left = (this.#byKey.get(key) ?? 0) - count;
    if (left <= 0) this.#byKey.delete(key);
    else this.#byKey.set(key, left);
  }
}

const TEXT = 'text/plain; charset=utf-8';
const TIMEOUT_BODY = 'request timeout\n';

/** The body being received of one HTTP/1 request ({@link BodyWatch}). */
class BodyEntry {
  /** When bytes last arrived (or the data plane last stopped reading), ms. */
  lastAt: number;
  lastBytes: number;
  /** Start of the current rate window, ms, and the connection's bytes then. */
  windowAt: number;
  windowBytes: number;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly socket: Socket,
    /** Whether Node would keep the connection alive (held off until the body is read). */
    readonly keepAlive: boolean,
    now: number,
  ) {
    const bytes = socket.bytesRead;
    this.lastAt = now;
    this.lastBytes = bytes;
    this.windowAt = now;
    this.windowBytes = bytes;
  }
}

const kBody = Symbol('proxyd.bodyEntry');
const kLinger = Symbol('proxyd.lingerMs');
type WatchedRequest = IncomingMessage & { [kBody]?: BodyEntry; [kWatch]?: BodyWatch };
type LingeringSocket = Socket & { [kLinger]?: number };
const kWatch = Symbol('proxyd.bodyWatch');

/**
 * The request bodies of the HTTP/1 connections: their timeout and minimum
 * rate ({@link ListenerLimits.bodyTimeoutMs}, `bodyMinRate`), and closing
 * the connection after an answer that leaves one unread. Only requests with
 * a body are watched (a GET costs two header lookups); one timer per
 * server, running while a body is being received.
 *
 * Unread bodies: until a request's body has been read to its end, its
 * response is marked `Connection: close` (Node's `shouldKeepAlive`, given
 * back when the body ends, so a forwarded or collected body keeps the
 * connection); an early answer (a step that refused the request) thus
 * closes the connection instead of draining whatever the client trickles
 * afterwards, with a lingering close ({@link ListenerLimits.lingerMs}).
 */
export class BodyWatch {
  readonly #limits: Readonly<ListenerLimits>;
  readonly #entries = new Set<BodyEntry>();
  #timer: NodeJS.Timeout | null = null;
  readonly #sweep = (): void => this.#check();

  constructor(limits: Readonly<ListenerLimits>) {
    this.#limits = limits;
  }

  /** Bodies being received now. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Watches the body of a request that has one (see {@link hasBody}); the
   * listener calls it before the request enters the data plane.
   */
  watch(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket as LingeringSocket;
    const entry = new BodyEntry(req, res, socket, res.shouldKeepAlive, Date.now());
    res.shouldKeepAlive = false;
    // Node closes a `Connection: close` connection with `destroySoon` after the response: linger instead.
    if (this.#limits.lingerMs > 0 && socket[kLinger] === undefined) {
      socket[kLinger] = this.#limits.lingerMs;
      socket.destroySoon = lingeringClose;
    }
    const watched = req as WatchedRequest;
    watched[kBody] = entry;
    watched[kWatch] = this;
    req.once('end', onBodyEnd);
    if (this.#limits.bodyTimeoutMs > 0) {
      this.#entries.add(entry);
      if (this.#timer === null) {
        this.#timer = setInterval(this.#sweep, this.#limits.checkIntervalMs);
        this.#timer.unref();
      }
    }
  }

  /** Stops watching (the body ended, or the request is gone). */
  forget(entry: BodyEntry): void {
    this.#entries.delete(entry);
    if (this.#entries.size === 0 && this.#timer !== null) {
      clearInterval(this.#timer);
      this.#timer = null;
    }
  }

  /** Stops the timer (the server closes). */
  close(): void {
    this.#entries.clear();
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  #check(): void {
    const now = Date.now();
    const { bodyTimeoutMs: timeout, bodyMinRate: rate } = this.#limits;
    for (const entry of this.#entries) {
      const { req, socket } = entry;
      if (req.complete || req.destroyed || socket.destroyed) {
        this.forget(entry);
        continue;
      }
      const bytes = socket.bytesRead;
      if (req.readableFlowing !== true) {
        // Nobody reads (a step still deciding, an upstream slow to take the
        // body): the client is waiting for us, its clocks restart.
        entry.lastAt = entry.windowAt = now;
        entry.lastBytes = entry.windowBytes = bytes;
        continue;
      }
      if (bytes !== entry.lastBytes) {
        entry.lastBytes = bytes;
        entry.lastAt = now;
      } else if (now - entry.lastAt >= timeout) {
        this.#cut(entry);
        continue;
      }
      const span = now - entry.windowAt;
      if (rate > 0 && span >= timeout) {
        if ((bytes - entry.windowBytes) * 1000 < rate * span) {
          this.#cut(entry);
          continue;
        }
        entry.windowAt = now;
        entry.windowBytes = bytes;
      }
    }
  }

  /** A body too slow: 408 and close (or a reset once a response began); its upstream exchange aborted. */
  #cut(entry: BodyEntry): void {
    this.forget(entry);
    const { res, socket } = entry;
    // The forwarder's exchange (collecting the body, or sending it): aborted, its upstream request destroyed.
    (res as ServerResponse & { [kExchange]?: ExchangeSlot })[kExchange]?.onResponseClose(res);
    if (res.headersSent || res.writableEnded) {
      socket.destroy();
      return;
    }
    // No lingering: this client has stopped sending.
    delete (socket as Partial<LingeringSocket>).destroySoon;
    res.shouldKeepAlive = false;
    res.writeHead(408, { 'content-type': TEXT, 'content-length': TIMEOUT_BODY.length, connection: 'close' });
    res.end(TIMEOUT_BODY);
  }
}

/** Whether a request announces a body (a non-zero Content-Length, or Transfer-Encoding). */
export function hasBody(req: IncomingMessage): boolean {
  const headers = req.headers;
  const length = headers['content-length'];
  return (length !== undefined && length !== '0') || headers['transfer-encoding'] !== undefined;
}

/** The body was read to its end: the connection may be kept alive again, the timers stop. */
function onBodyEnd(this: WatchedRequest): void {
  const entry = this[kBody];
  if (entry === undefined) return;
  if (entry.keepAlive && !entry.res.headersSent) entry.res.shouldKeepAlive = true;
  this[kWatch]?.forget(entry);
}

/**
 * `socket.destroySoon` of a connection that may still receive a body
 * nobody reads: half close after the response (FIN), go on reading and
 * discarding (Node's parser does) until the client closes, at most
 * {@link ListenerLimits.lingerMs}, then destroy.
 */
function lingeringClose(this: LingeringSocket): void {
  if (this.writable) this.end();
  if (this.destroyed) return;
  const timer = setTimeout(destroyLingering, this[kLinger] ?? 0, this);
  timer.unref();
  this.once('close', () => clearTimeout(timer));
}

function destroyLingering(socket: Socket): void {
  socket.destroy();
}
