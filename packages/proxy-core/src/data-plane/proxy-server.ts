import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { RouteSnapshot, RouteSpec, Site } from '@proxyd/model';
import type { CacheRegistry } from '../cache/response-cache.js';
import type { ChallengeResponder } from '../challenge.js';
import { clientErrorHandler, kOwed } from '../client-errors.js';
import { ClientIpResolver } from '../client-ip.js';
import {
  armWriteTimeout,
  BodyWatch,
  type ConnectionCounter,
  ConnectionLimiter,
  hasBody,
  http1ServerOptions,
  LISTENER_DEFAULTS,
  type ListenerLimits,
} from '../connection-limits.js';
import { compileFallbackSite } from '../fallback-site.js';
import { type FastListener, FastPath, fastPathEnabled } from '../fast/fast-path.js';
import { HttpForwarder } from '../forward/forwarder.js';
import type { DataPlaneHooks } from '../hooks.js';
import type { CompiledSite, Forwarder } from '../pipeline.js';
import type { HealthSharing } from '../pool/upstream-pool.js';
import { httpsPortSuffix } from '../redirect.js';
import { proxyHandlers, RouteTable, type TableChange } from '../route-table.js';
import type { CertificateStore } from '../tls/certificate-store.js';
import { type AlpnChallengeResponder, closeChallengeConnection, handshakeOptions } from '../tls/handshake.js';
import { type Http2Limits, http2ServerOptions, StreamAdmission, watchSession, watchStream } from '../tls/http2.js';
import type { ListenerBinds } from './binds.js';
import { type DrainSocket, kDraining, refusedBefore } from './client-connections.js';
import { holdUntilAdmitted } from './connection-gate.js';
import { CountingH2Response, CountingResponse } from './counting-response.js';
import { FrontDoor } from './front-door.js';
import type { RequestCounts } from './request-record.js';

/** The TLS session id context of every HTTPS listener: one value, so that sessions resume across daemons sharing ticket keys. */
const SESSION_ID_CONTEXT = 'proxyd';
/** Compiles a Site with the server's forwarder (the site middleware's `compileSite`). */
export type SiteCompilerWithForwarder = (site: Site, forwarder: Forwarder) => CompiledSite;

/** Options of {@link ProxyServer}. */
export interface ProxyServerOptions {
  /** The initial routes (default none); replace them with {@link ProxyServer.setRoutes}. */
  routes?: readonly RouteSpec[];
  /** Version of the initial routes (default 0). */
  version?: number;
  /** Data-plane hooks (request records, intercept, response transform). */
  hooks?: DataPlaneHooks;
  /** CIDRs whose `X-Forwarded-For` is believed (default none). */
  trustedProxies?: readonly string[];
  /** Builds each Site's handler; default {@link compileFallbackSite}. */
  compileSite?: SiteCompilerWithForwarder;
  /** Certificates of the HTTPS listeners, by SNI. Absent: no HTTPS listener and no redirects. */
  certificates?: CertificateStore;
  /** Answers ACME HTTP-01 challenges before host matching. Absent: challenge paths go on as any request. */
  challenges?: ChallengeResponder;
  /** Answers ACME TLS-ALPN-01 challenges (`acme-tls/1`) on every HTTPS listener. Absent: `acme-tls/1` is refused. */
  alpnChallenges?: AlpnChallengeResponder;
  /**
   * The HTTPS port named in redirects (default 443: no port in the
   * Location; 0: the port {@link ProxyServer.listenHttps} bound).
   */
  httpsPort?: number;
  /** Upstream health shared with other processes (a multi-core daemon's workers); default: kept here. */
  health?: HealthSharing;
  /** Where the sites' `cache` steps keep their caches (a node's shared cache); default: in this process. */
  caches?: CacheRegistry;
  /**
   * The TLS session-ticket keys of the HTTPS listeners (48 bytes): the
   * workers of a multi-core daemon share one set, so a client resumes its
   * session whichever worker it reaches. Default: random per listener.
   */
  ticketKeys?: Buffer;
  /**
   * Listeners bind with `SO_REUSEPORT` (Linux): several processes (the
   * daemon's workers) bind the same port and the kernel spreads new
   * connections over them by a hash of the connection. Default false.
   */
  reusePort?: boolean;
  /**
   * The local addresses sites answer on (`default_bind`, each site's
   * `bind`): once a site names its own, a request that arrived at an
   * address its site does not bind is answered 404. Default: every site on
   * every listener.
   */
  binds?: ListenerBinds;
  /**
   * Whether plain-HTTP requests for HTTPS sites are redirected (308) once a
   * certificate exists and the HTTPS listener is open (`wantsHttps`);
   * default true. False (Caddy's `auto_https disable_redirects`) serves them
   * over HTTP.
   */
  redirects?: boolean;
  /** Upstream connect timeout, ms (default 5000). */
  connectTimeoutMs?: number;
  /** Upstream idle timeout, ms (default 60000). */
  idleTimeoutMs?: number;
  /** HTTP/2 limits of the HTTPS listeners (defaults: `tls/http2.ts`). */
  http2?: Partial<Http2Limits>;
  /**
   * Timeouts and connection caps of every listener (header, body, request,
   * keep-alive, TLS handshake; connections per client address and in
   * total); defaults: `LISTENER_DEFAULTS` in `connection-limits.ts`.
   */
  limits?: Partial<ListenerLimits>;
  /**
   * The node-wide per-address count, when several processes serve these
   * listeners (each worker of a multi-core daemon): `maxConnectionsPerIp`
   * is then the node's cap, not this process's. Default none.
   */
  connectionCounter?: ConnectionCounter;
  /**
   * Whether plain-HTTP/1.1 connections go through the fast path first
   * (`fast/`: llhttp on the raw socket, pooled raw upstream connections,
   * node:http for whatever it does not cover). Default: on unless
   * `PROXY_FAST_PATH=0`.
   */
  fastPath?: boolean;
}

/**
 * The data-plane listeners and their front door, one path for requests and
 * upgrades ({@link ProxyServer.enter}, `front-door.ts`): Transfer-Encoding → request
 * target → host → ACME challenge → client IP → route (unknown host → `404 no route for host`, no
 * upstream contacted) → HTTP→HTTPS redirect (`wantsHttps`) →
 * RequestContext → `hooks.intercept` → listener check (site ports) → the
 * route's CompiledSite. `hooks.onRequest` gets one record per finished request.
 */
export class ProxyServer {
  readonly #table: RouteTable;
  readonly #forwarder: HttpForwarder;
  readonly #door: FrontDoor;
  readonly #compile: (site: Site) => CompiledSite;
  readonly #certificates: CertificateStore | undefined;
  readonly #alpnChallenges: AlpnChallengeResponder | undefined;
  readonly #httpsPort: number | undefined;
  readonly #http2: Partial<Http2Limits>;
  readonly #reusePort: boolean;
  #ticketKeys: Buffer | undefined;
  readonly #limits: Readonly<ListenerLimits>;
  /** Connections per client address and in total, shared by every listener. */
  readonly #connections: ConnectionLimiter;
  /** Request bodies being received on HTTP/1 connections (body timeout, unread bodies). */
  readonly #bodies: BodyWatch;
  readonly #servers: (http.Server | http2.Http2SecureServer)[] = [];
  /** TLS connections of the HTTPS listeners (an HTTP/2 server has no `closeAllConnections`). */
  readonly #tlsSockets = new Set<Duplex>();
  /** Bound ports of the main listeners ({@link listen}, {@link listenHttps}). */
  readonly #mainPorts = new Set<number>();
  /** Site-port listeners asked for so far ({@link listenSitePort}). */
  readonly #sitePorts = new Set<number>();
  #draining = false;
  /** Upgraded (WebSocket) client sockets: the HTTP server no longer tracks them. */
  readonly #upgraded = new Set<Duplex>();
  /** Connections of the plain-HTTP listeners (a drain waits for them). */
  readonly #httpSockets = new Set<Duplex>();
  /** HTTP/2 sessions of the HTTPS listeners (a drain sends each GOAWAY). */
  readonly #sessions = new Set<http2.ServerHttp2Session>();
  /** Requests recorded and not yet finished (only while an `onRequest` hook is set). */
  readonly #counts: RequestCounts = { inFlight: 0 };
  /** The HTTP/1.1 fast path (null: off, every connection goes to node:http). */
  readonly #fast: FastPath | null;

  constructor(options: ProxyServerOptions = {}) {
    const hooks = options.hooks ?? {};
    const clientIp = new ClientIpResolver(options.trustedProxies ?? []);
    this.#forwarder = new HttpForwarder({
      hooks,
      clientIp,
      ...(options.connectTimeoutMs !== undefined ? { connectTimeoutMs: options.connectTimeoutMs } : {}),
      ...(options.idleTimeoutMs !== undefined ? { idleTimeoutMs: options.idleTimeoutMs } : {}),
      ...(options.health !== undefined ? { health: options.health } : {}),
      ...(options.caches !== undefined ? { caches: options.caches } : {}),
    });
    const compileSite = options.compileSite ?? compileFallbackSite;
    const forwarder = this.#forwarder;
    this.#compile = (site) => compileSite(site, forwarder);
    this.#certificates = options.certificates;
    this.#alpnChallenges = options.alpnChallenges;
    this.#httpsPort = options.httpsPort;
    this.#http2 = {
      maxHeaderListSize: options.limits?.maxHeaderSize ?? LISTENER_DEFAULTS.maxHeaderSize,
      ...options.http2,
    };
    this.#reusePort = options.reusePort ?? false;
    this.#ticketKeys = options.ticketKeys;
    const limits = { ...LISTENER_DEFAULTS, ...options.limits };
    this.#limits = limits;
    this.#connections = new ConnectionLimiter(limits, (ip) => clientIp.isTrusted(ip), options.connectionCounter);
    this.#bodies = new BodyWatch(limits);
    this.#table = new RouteTable(options.routes ?? [], options.version ?? 0, this.#compile);
    this.#door = new FrontDoor({
      table: this.#table,
      forwarder,
      hooks,
      clientIp,
      redirectCertificates: options.redirects === false ? undefined : options.certificates,
      challenges: options.challenges,
      binds: options.binds,
      mainPorts: this.#mainPorts,
      counts: this.#counts,
      httpsSuffix: httpsPortSuffix(options.httpsPort),
    });
    this.#fast =
      (options.fastPath ?? fastPathEnabled())
        ? new FastPath({ door: this.#door, forwarder, hooks, clientIp, counts: this.#counts, limits })
        : null;
    this.#retain();
    this.#prepareHealthChecks(this.#table.sites());
  }

  /** Whether a main HTTPS listener is open (a condition of every redirect). */
  get httpsOpen(): boolean {
    return this.#door.httpsOpen;
  }

  /**
   * Requests in flight (recorded by `hooks.onRequest`, their record not yet
   * out; 0 without that hook) and connections open on every listener
   * (plain, TLS, WebSocket; those refused over a cap are not counted). O(1).
   */
  stats(): { requestsInFlight: number; openConnections: number } {
    return { requestsInFlight: this.#counts.inFlight, openConnections: this.#connections.open };
  }

  /** Requests the HTTP/1.1 fast path has taken so far (0 when it is off); for tests and benchmarks. */
  get fastPathRequests(): number {
    return this.#fast?.served ?? 0;
  }

  /**
   * Replaces the TLS session-ticket keys (48 bytes) of every TLS listener,
   * open and opened later: tickets issued with the previous keys are not
   * accepted any more (Node keeps one key set per server).
   */
  setTicketKeys(keys: Buffer): void {
    this.#ticketKeys = keys;
    for (const server of this.#servers) {
      if ('setTicketKeys' in server) server.setTicketKeys(keys);
    }
  }

  /** The current route table. */
  get table(): RouteTable {
    return this.#table;
  }

  /** The forwarder (its `caches` is the admin API's CachePort). */
  get forwarder(): HttpForwarder {
    return this.#forwarder;
  }

  /**
   * Publishes a new route set; a request in flight finishes on the route it
   * matched. The table is updated in place (`RouteTable.update`): with the
   * snapshot's `changes`, when they apply to the routes served now, in
   * O(changed routes), else by comparing every route. Compiled sites are kept for unchanged
   * Site objects; dropped ones are closed, their pools and caches released.
   * `sitePorts` (lowercase domain → port, from `sitePortsOf`) pins routes to
   * site-port listeners; default none.
   */
  setRoutes(snapshot: RouteSnapshot, sitePorts?: ReadonlyMap<string, number>): void {
    const change = this.#table.update(snapshot, sitePorts);
    this.#door.pinning = this.#table.pinnedCount > 0 || this.#sitePorts.size > 0;
    this.#retain(change);
    for (const compiled of change.dropped) safeClose(compiled);
    this.#prepareHealthChecks(change.fresh);
  }

  /** Starts the active health checks of these sites' pools now, not at their first request. */
  #prepareHealthChecks(sites: Iterable<Site>): void {
    for (const site of sites) {
      for (const handler of proxyHandlers(site)) if (handler.health.uri !== null) this.#forwarder.prepare(handler);
    }
  }

  /** Listens for plain HTTP on host:port (port 0 picks a free one): a main listener. */
  async listen(port: number, host = '127.0.0.1'): Promise<AddressInfo> {
    const address = await this.#start(this.#httpServer(), port, host);
    this.#mainPorts.add(address.port);
    return address;
  }

  /**
   * Listens for HTTPS on host:port with SNI: a main listener, the one
   * redirects lead to (the redirect names `httpsPort`). Each handshake takes
   * its certificate from the {@link CertificateStore}; an unknown name fails
   * the handshake. With `alpnChallenges`, `acme-tls/1` is answered
   * (`tls/handshake.ts`), here and on TLS site ports.
   */
  async listenHttps(port: number, host = '127.0.0.1'): Promise<AddressInfo> {
    const address = await this.#start(this.#httpsServer(), port, host);
    this.#mainPorts.add(address.port);
    if (this.#httpsPort === 0) this.#door.httpsSuffix = httpsPortSuffix(address.port);
    this.#door.httpsOpen = true;
    return address;
  }

  /**
   * Listens on a site port (plain HTTP, or HTTPS by SNI with `tls`): it
   * serves only the routes pinned to `port` by {@link setRoutes}, and once
   * one is asked for, the main listeners serve only unpinned routes.
   */
  async listenSitePort(port: number, host: string, tls: boolean): Promise<AddressInfo> {
    this.#sitePorts.add(port);
    this.#door.pinning = true;
    return await this.#start(tls ? this.#httpsServer() : this.#httpServer(), port, host);
  }

  #httpServer(): http.Server {
    const bodies = this.#bodies;
    const writeMs = this.#limits.writeTimeoutMs;
    const handler = (req: IncomingMessage, res: ServerResponse) => {
      if (refusedBefore(req)) return;
      if (hasBody(req)) bodies.watch(req, res);
      if (writeMs > 0) armWriteTimeout(res, writeMs);
      this.#door.enter(req, res, null, null, false);
    };
    const server = http.createServer(
      { ...http1ServerOptions(this.#limits), ServerResponse: CountingResponse },
      handler,
    );
    const fast = this.#fast;
    if (fast !== null) {
      // The fast path takes each connection first and gives it to node:http's own listener when it must.
      const [nodeListener] = server.listeners('connection') as ((socket: Socket) => void)[];
      server.removeAllListeners('connection');
      const listener: FastListener = {
        secure: false,
        maxHeaderSize: this.#limits.maxHeaderSize,
        fallback: (socket) => (nodeListener as (socket: Socket) => void).call(server, socket),
        timedOut: (socket) => server.emit('clientError', headersTimeout(), socket),
      };
      server.on('connection', (socket: Socket) => fast.accept(socket, listener));
    }
    const sockets = this.#httpSockets;
    const untrack = untracker(sockets);
    server.on('connection', (socket: Duplex) => {
      sockets.add(socket);
      socket.on('close', untrack);
    });
    // No automatic `100 Continue`: the forwarder asks for the body only
    // after the access checks passed (a 401/429 goes out without it).
    server.on('checkContinue', handler);
    return server;
  }

  /**
   * One TLS listener for HTTP/2 and HTTP/1.1 (ALPN `h2`, `http/1.1`; no
   * ALPN: HTTP/1.1). HTTP/2 requests come as Node's compat objects
   * (`Http2ServerRequest`/`Http2ServerResponse`), which the data plane uses
   * through the `IncomingMessage`/`ServerResponse` members both share;
   * WebSockets stay on HTTP/1.1 (`upgrade`). Limits: `tls/http2.ts`.
   */
  #httpsServer(): http2.Http2SecureServer {
    const certificates = this.#certificates;
    if (certificates === undefined) throw new Error('no certificate store configured');
    const writeMs = this.#limits.writeTimeoutMs;
    const enter = (req: IncomingMessage, res: ServerResponse) => {
      if (writeMs > 0) armWriteTimeout(res, writeMs);
      this.#door.enter(req, res, null, null, true);
    };
    const admission = new StreamAdmission(enter);
    const bodies = this.#bodies;
    // HTTP/2: its own limits (`tls/http2.ts`); Node resets a stream whose response ended before its body.
    const handler = (req: IncomingMessage, res: ServerResponse) => {
      if (req.httpVersionMajor === 2) admission.admit(req, res);
      else if (!refusedBefore(req)) {
        if (hasBody(req)) bodies.watch(req, res);
        enter(req, res);
      }
    };
    const limits = this.#http2;
    const options: http2.SecureServerOptions = {
      // HTTP/2's options last: its `maxHeaderSize` (the header list's) is HTTP/1.1's on this listener.
      ...http1ServerOptions(this.#limits),
      ...http2ServerOptions(limits),
      handshakeTimeout: this.#limits.handshakeTimeoutMs,
      // TCP_NODELAY, as node:http's own server sets it (tls.Server's default is Nagle on): without it an answer
      // written in two parts waited for the client's delayed ACK, ~40 ms (issue 30's probe saw 50 ms "stalls").
      noDelay: true,
      allowHTTP1: true,
      Http1ServerResponse: CountingResponse,
      Http2ServerResponse: CountingH2Response as never,
      ...handshakeOptions(certificates, this.#alpnChallenges),
      ...(this.#ticketKeys === undefined ? {} : { ticketKeys: this.#ticketKeys }),
      // Node's default is a hash of the process's command line, which differs between two daemons (their
      // `--config` paths): a session could then resume on no other daemon even with shared ticket keys.
      sessionIdContext: SESSION_ID_CONTEXT,
    };
    const server = http2.createSecureServer(options, handler as never);
    // One `secureConnection` listener does what this listener adds per connection (before, three did): on a
    // TLS socket each listener costs Node a `newListener` event too, and each `once` a wrapper.
    const [nodeListener] = server.listeners('secureConnection') as ((socket: tls.TLSSocket) => void)[];
    server.removeAllListeners('secureConnection');
    const toNode = nodeListener as (socket: tls.TLSSocket) => void;
    const fast = this.#fast;
    // HTTP/1.1 (ALPN `http/1.1` or none) goes to the fast path first, which gives it to the server's own
    // listener (node:http's HTTP/1.1 on this listener) when it must; h2 and anything else go there at once.
    const listener: FastListener | null =
      fast === null
        ? null
        : {
            secure: true,
            // This listener's HTTP/1.1 head limit: HTTP/2's header list limit when set (the options above).
            maxHeaderSize: (options as { maxHeaderSize?: number }).maxHeaderSize ?? this.#limits.maxHeaderSize,
            fallback: (socket) => toNode.call(server, socket as tls.TLSSocket),
            timedOut: (socket) => server.emit('clientError', headersTimeout(), socket),
          };
    const challenges = this.#alpnChallenges !== undefined;
    const sockets = this.#tlsSockets;
    const untrack = untracker(sockets);
    server.on('secureConnection', (socket: tls.TLSSocket) => {
      sockets.add(socket);
      socket.on('close', untrack);
      // Before HTTP: an `acme-tls/1` connection carries none.
      if (challenges) closeChallengeConnection(socket);
      const alpn = socket.alpnProtocol;
      if (listener !== null && !socket.destroyed && (alpn === false || alpn === 'http/1.1')) {
        (fast as FastPath).accept(socket, listener);
      } else toNode.call(server, socket);
    });
    const sessions = this.#sessions;
    server.on('session', (session: http2.ServerHttp2Session) => {
      watchSession(session, limits);
      sessions.add(session);
      session.once('close', () => sessions.delete(session));
    });
    server.on('stream', (stream: http2.ServerHttp2Stream) => watchStream(stream, limits));
    // Session errors (a flood answered with GOAWAY, a reset socket) end that session only.
    server.on('sessionError', ignore);
    server.on('checkContinue', handler as never);
    server.on('tlsClientError', (_err, socket) => socket.destroy());
    return server;
  }

  /**
   * Graceful stop, as nginx and Caddy do it: the listeners stop accepting;
   * idle keep-alive connections close after DRAIN_IDLE_MS (a request that
   * reuses one meanwhile is answered, as its last); a request in flight is
   * answered (its response says `Connection: close` when its head is still
   * to be sent) and its connection closes after it; an HTTP/2 session gets
   * GOAWAY and its open streams finish; a WebSocket runs on. Once all of
   * them are done, or after `graceMs`, whatever is left is cut
   * ({@link close}). Resolves when everything is closed.
   */
  async drain(graceMs: number): Promise<void> {
    this.#draining = true;
    for (const server of this.#servers) {
      // Node's close() also ends every idle keep-alive connection at once;
      // here they get DRAIN_IDLE_MS first (below).
      if (server instanceof http.Server) server.closeIdleConnections = () => {};
      server.close();
    }
    const sockets = [...this.#httpSockets, ...this.#tlsSockets] as DrainSocket[];
    for (const socket of sockets) if (socket.alpnProtocol !== 'h2') socket[kDraining] = true;
    for (const session of this.#sessions) session.close();
    // An idle keep-alive connection is not ended at once: its client may
    // have a request on the wire already, which would meet the close and
    // fail. A request that arrives meanwhile is answered with `Connection:
    // close` (the connection ends after it); what is still idle then ends.
    const idle = setTimeout(
      () => {
        for (const socket of sockets) {
          if (socket[kDraining] === true && (socket[kOwed] ?? 0) === 0 && !this.#upgraded.has(socket)) socket.end();
        }
      },
      Math.min(DRAIN_IDLE_MS, graceMs),
    );
    const deadline = Date.now() + graceMs;
    while (Date.now() < deadline && this.#httpSockets.size + this.#tlsSockets.size + this.#upgraded.size > 0) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    clearTimeout(idle);
    await this.close();
  }

  /** Whether {@link drain} has begun. */
  get draining(): boolean {
    return this.#draining;
  }

  /** Stops every listener, closes connections, health checks and upstream sockets. */
  async close(): Promise<void> {
    for (const socket of this.#upgraded) socket.destroy();
    // Before the servers' close, which waits for every connection: node:http does not know the fast path's.
    this.#fast?.close();
    await Promise.all(
      this.#servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            if (server instanceof http.Server) server.closeAllConnections();
          }),
      ),
    );
    for (const socket of this.#tlsSockets) socket.destroy();
    for (const compiled of this.#table.compiledSites()) safeClose(compiled);
    this.#forwarder.close();
  }

  #start(server: http.Server | http2.Http2SecureServer, port: number, host: string): Promise<AddressInfo> {
    const secure = server instanceof tls.Server;
    // First: a connection over a cap is closed before HTTP or TLS sees it.
    if (this.#connections.waits) holdUntilAdmitted(server, this.#connections, secure);
    else server.prependListener('connection', this.#connections.onConnection);
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on('error', () => socket.destroy());
      if (refusedBefore(req)) {
        socket.end();
        return;
      }
      this.#upgraded.add(socket);
      socket.once('close', () => this.#upgraded.delete(socket));
      this.#door.enter(req, null, socket, head, secure);
    });
    (server as http.Server).on('clientError', clientErrorHandler(this.#limits));
    this.#servers.push(server);
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen({ port, host, reusePort: this.#reusePort }, () => {
        server.off('error', reject);
        resolve(server.address() as AddressInfo);
      });
    });
  }

  /**
   * Releases the pools and caches of sites that left the table. Pools and
   * caches are created on first use, so only a dropped site can leave a pool
   * behind (the forwarder's `retain` then walks its pools, not the routes),
   * and only a site with `cache`, added or dropped, changes the caches
   * (`caches.retain` walks the live sites). Without `change` (at start): both.
   */
  #retain(change?: TableChange): void {
    const table = this.#table;
    if (change === undefined) {
      this.#forwarder.retain(table.handlers());
    } else if (change.droppedSites.length > 0) {
      // Only the dropped sites' handlers can be gone (a route write replaces one site): O(changes).
      const kept = table.handlers();
      const gone = change.droppedSites.flatMap((site) => proxyHandlers(site)).filter((h) => !kept.has(h));
      this.#forwarder.release(gone);
    }
    if (
      change === undefined ||
      change.droppedSites.some((site) => site.cache !== null) ||
      change.fresh.some((site) => site.cache !== null)
    ) {
      this.#forwarder.caches.retain(new Set(table.sites()));
    }
  }

  /** The front door ({@link FrontDoor.enter}); public for tests and benchmarks that drive it without a socket. */
  enter(
    req: IncomingMessage,
    res: ServerResponse | null,
    socket: Duplex | null,
    head: Buffer | null,
    secure: boolean,
  ): void {
    this.#door.enter(req, res, socket, head, secure);
  }
}

/**
 * How long a drain lets an idle HTTP/1 keep-alive connection be before it
 * ends it: a client that reuses it within this time gets its answer (and
 * `Connection: close`) instead of a reset (`ProxyServer.drain`).
 */
const DRAIN_IDLE_MS = 250;

function safeClose(compiled: CompiledSite): void {
  try {
    compiled.close?.();
  } catch {
    // Closing a dropped site must not break the swap.
  }
}

function ignore(): void {}

/** The error Node's server reports for a head not received in time (the `clientError` handler answers 408). */
function headersTimeout(): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error('Request timeout');
  err.code = 'ERR_HTTP_REQUEST_TIMEOUT';
  return err;
}

/** A `close` listener shared by every socket of `sockets` (`this` is the socket): no closure per connection. */
function untracker(sockets: Set<Duplex>): (this: Duplex) => void {
  return function untrack(this: Duplex) {
    sockets.delete(this);
  };
}
