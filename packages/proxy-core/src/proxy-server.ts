import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { RouteSnapshot, RouteSpec, Site } from '@proxyd/model';
import { type ChallengeResponder, isChallengePath } from './challenge.js';
import { clientErrorHandler, kOwed, sendOwedAnswer } from './client-errors.js';
import { ClientIpResolver } from './client-ip.js';
import {
  armWriteTimeout,
  BodyWatch,
  type ConnectionCounter,
  ConnectionLimiter,
  hasBody,
  http1ServerOptions,
  LISTENER_DEFAULTS,
  type ListenerLimits,
} from './connection-limits.js';
import { answersOn, type ListenerBinds } from './data-plane/binds.js';
import { servedOn } from './data-plane/site-ports.js';
import { compileFallbackSite } from './fallback-site.js';
import { HttpForwarder } from './forward/forwarder.js';
import type { DataPlaneHooks, RequestContext, RequestRecord } from './hooks.js';
import type { CompiledSite, Forwarder } from './pipeline.js';
import type { HealthSharing } from './pool/upstream-pool.js';
import { httpsLocation, httpsPortSuffix, wantsHttps } from './redirect.js';
import { normalizeHost, proxyHandlers, type Route, RouteTable, type TableChange } from './route-table.js';
import { type ExchangeSlot, kCloseOwned, kEvents, kExchange, kRecord } from './slots.js';
import type { CertificateStore } from './tls/certificate-store.js';
import { type AlpnChallengeResponder, closeChallengeConnection, handshakeOptions } from './tls/handshake.js';
import {
  type Http2Limits,
  h2Headers,
  http2ServerOptions,
  isH2Forbidden,
  StreamAdmission,
  watchSession,
  watchStream,
} from './tls/http2.js';
import { transferEncodingStatus } from './transfer-encoding.js';

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
}

const TEXT = 'text/plain; charset=utf-8';
const NO_ROUTE = 'no route for host\n';
const BAD_TARGET = 'bad request target\n';
const SLASH = 0x2f;
const ABSOLUTE_FORM = /^https?:\/\/([^/?#]*)([^#]*)/i;
const ACME_TOKEN_START = '/.well-known/acme-challenge/'.length;
const RAW_NO_ROUTE = `HTTP/1.1 404 Not Found\r\ncontent-type: ${TEXT}\r\ncontent-length: ${NO_ROUTE.length}\r\nconnection: close\r\n\r\n${NO_ROUTE}`;
const BAD_HOST = 'a request needs exactly one Host header\n';
const RAW_BAD_HOST = `HTTP/1.1 400 Bad Request\r\ncontent-type: ${TEXT}\r\ncontent-length: ${BAD_HOST.length}\r\nconnection: close\r\n\r\n${BAD_HOST}`;
const RAW_BAD_TARGET = `HTTP/1.1 400 Bad Request\r\ncontent-type: ${TEXT}\r\ncontent-length: ${BAD_TARGET.length}\r\nconnection: close\r\n\r\n${BAD_TARGET}`;
const BAD_FRAMING = 'bad transfer-encoding\n';
const UNKNOWN_CODING = 'transfer coding not implemented\n';

/** What the server keeps per request for its `onRequest` record. */
interface PendingRecord {
  readonly hook: NonNullable<DataPlaneHooks['onRequest']>;
  readonly host: string;
  readonly domain: string | null;
  readonly analytics: boolean;
  readonly path: string;
  /** The target's query string without `?` (undefined without one). */
  readonly query: string | undefined;
  readonly clientIp: string;
  readonly startedAt: number;
  /** `performance.now()` at the start: the duration's clock (monotonic). */
  readonly startedMono: number;
  /** The server's counts: the request is in flight until its record goes out. */
  readonly counts: RequestCounts;
}

/** What a server counts of its requests (read by {@link ProxyServer.stats}). */
interface RequestCounts {
  inFlight: number;
}

/**
 * The data-plane listeners and their front door, one path for requests and
 * upgrades ({@link ProxyServer.enter}): Transfer-Encoding → request
 * target → host → ACME challenge → client IP → route (unknown host → `404 no route for host`, no
 * upstream contacted) → HTTP→HTTPS redirect (`wantsHttps`) →
 * RequestContext → `hooks.intercept` → listener check (site ports) → the
 * route's CompiledSite. `hooks.onRequest` gets one record per finished request.
 */
export class ProxyServer {
  #table: RouteTable;
  readonly #forwarder: HttpForwarder;
  readonly #hooks: DataPlaneHooks;
  readonly #clientIp: ClientIpResolver;
  readonly #compile: (site: Site) => CompiledSite;
  readonly #certificates: CertificateStore | undefined;
  /** The store the redirect rule asks; undefined when redirects are off or there is no store. */
  readonly #redirectCertificates: CertificateStore | undefined;
  readonly #challenges: ChallengeResponder | undefined;
  readonly #alpnChallenges: AlpnChallengeResponder | undefined;
  readonly #httpsPort: number | undefined;
  #httpsSuffix: string;
  readonly #http2: Partial<Http2Limits>;
  readonly #reusePort: boolean;
  readonly #binds: ListenerBinds | undefined;
  readonly #ticketKeys: Buffer | undefined;
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
  /** Whether a main HTTPS listener is open (redirects lead somewhere). */
  #httpsOpen = false;
  /** Whether any listener may refuse a route: some route is pinned or a site port is open. */
  #pinning = false;
  #draining = false;
  /** Upgraded (WebSocket) client sockets: the HTTP server no longer tracks them. */
  readonly #upgraded = new Set<Duplex>();
  /** Connections of the plain-HTTP listeners (a drain waits for them). */
  readonly #httpSockets = new Set<Duplex>();
  /** HTTP/2 sessions of the HTTPS listeners (a drain sends each GOAWAY). */
  readonly #sessions = new Set<http2.ServerHttp2Session>();
  /** Requests recorded and not yet finished (only while an `onRequest` hook is set). */
  readonly #counts: RequestCounts = { inFlight: 0 };

  constructor(options: ProxyServerOptions = {}) {
    this.#hooks = options.hooks ?? {};
    this.#clientIp = new ClientIpResolver(options.trustedProxies ?? []);
    this.#forwarder = new HttpForwarder({
      hooks: this.#hooks,
      clientIp: this.#clientIp,
      ...(options.connectTimeoutMs !== undefined ? { connectTimeoutMs: options.connectTimeoutMs } : {}),
      ...(options.idleTimeoutMs !== undefined ? { idleTimeoutMs: options.idleTimeoutMs } : {}),
      ...(options.health !== undefined ? { health: options.health } : {}),
    });
    const compileSite = options.compileSite ?? compileFallbackSite;
    const forwarder = this.#forwarder;
    this.#compile = (site) => compileSite(site, forwarder);
    this.#certificates = options.certificates;
    this.#redirectCertificates = options.redirects === false ? undefined : options.certificates;
    this.#challenges = options.challenges;
    this.#alpnChallenges = options.alpnChallenges;
    this.#httpsPort = options.httpsPort;
    this.#httpsSuffix = httpsPortSuffix(options.httpsPort);
    this.#http2 = {
      maxHeaderListSize: options.limits?.maxHeaderSize ?? LISTENER_DEFAULTS.maxHeaderSize,
      ...options.http2,
    };
    this.#reusePort = options.reusePort ?? false;
    this.#binds = options.binds;
    this.#ticketKeys = options.ticketKeys;
    const limits = { ...LISTENER_DEFAULTS, ...options.limits };
    this.#limits = limits;
    const clientIp = this.#clientIp;
    this.#connections = new ConnectionLimiter(limits, (ip) => clientIp.isTrusted(ip), options.connectionCounter);
    this.#bodies = new BodyWatch(limits);
    this.#table = new RouteTable(options.routes ?? [], options.version ?? 0, this.#compile);
    this.#retain();
    this.#prepareHealthChecks(this.#table.sites());
  }

  /** Whether a main HTTPS listener is open (a condition of every redirect). */
  get httpsOpen(): boolean {
    return this.#httpsOpen;
  }

  /**
   * Requests in flight (recorded by `hooks.onRequest`, their record not yet
   * out; 0 without that hook) and connections open on every listener
   * (plain, TLS, WebSocket; those refused over a cap are not counted). O(1).
   */
  stats(): { requestsInFlight: number; openConnections: number } {
    return { requestsInFlight: this.#counts.inFlight, openConnections: this.#connections.open };
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
    this.#pinning = this.#table.pinnedCount > 0 || this.#sitePorts.size > 0;
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
    if (this.#httpsPort === 0) this.#httpsSuffix = httpsPortSuffix(address.port);
    this.#httpsOpen = true;
    return address;
  }

  /**
   * Listens on a site port (plain HTTP, or HTTPS by SNI with `tls`): it
   * serves only the routes pinned to `port` by {@link setRoutes}, and once
   * one is asked for, the main listeners serve only unpinned routes.
   */
  async listenSitePort(port: number, host: string, tls: boolean): Promise<AddressInfo> {
    this.#sitePorts.add(port);
    this.#pinning = true;
    return await this.#start(tls ? this.#httpsServer() : this.#httpServer(), port, host);
  }

  #httpServer(): http.Server {
    const bodies = this.#bodies;
    const writeMs = this.#limits.writeTimeoutMs;
    const handler = (req: IncomingMessage, res: ServerResponse) => {
      if (refusedBefore(req)) return;
      if (hasBody(req)) bodies.watch(req, res);
      if (writeMs > 0) armWriteTimeout(res, writeMs);
      this.enter(req, res, null, null, false);
    };
    const server = http.createServer(
      { ...http1ServerOptions(this.#limits), ServerResponse: CountingResponse },
      handler,
    );
    const sockets = this.#httpSockets;
    server.on('connection', (socket: Duplex) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
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
      this.enter(req, res, null, null, true);
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
    const server = http2.createSecureServer(
      {
        // HTTP/2's options last: its `maxHeaderSize` (the header list's) is HTTP/1.1's on this listener.
        ...http1ServerOptions(this.#limits),
        ...http2ServerOptions(limits),
        handshakeTimeout: this.#limits.handshakeTimeoutMs,
        allowHTTP1: true,
        Http1ServerResponse: CountingResponse,
        Http2ServerResponse: CountingH2Response as never,
        ...handshakeOptions(certificates, this.#alpnChallenges),
        ...(this.#ticketKeys === undefined ? {} : { ticketKeys: this.#ticketKeys }),
      },
      handler as never,
    );
    // Before the HTTP server's own listener: an `acme-tls/1` connection carries no HTTP.
    if (this.#alpnChallenges !== undefined) server.prependListener('secureConnection', closeChallengeConnection);
    const sockets = this.#tlsSockets;
    server.on('secureConnection', (socket: tls.TLSSocket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
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
      this.enter(req, null, socket, head, secure);
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
    if (change === undefined || change.droppedSites.some((site) => proxyHandlers(site).length > 0)) {
      this.#forwarder.retain(table.handlers());
    }
    if (
      change === undefined ||
      change.droppedSites.some((site) => site.cache !== null) ||
      change.fresh.some((site) => site.cache !== null)
    ) {
      this.#forwarder.caches.retain(new Set(table.sites()));
    }
  }

  /**
   * The front door, one path for requests (`res`) and upgrades (`socket`,
   * `head`): Transfer-Encoding (`chunked` alone, else 400/501:
   * `transfer-encoding.ts`) → request target (absolute form → origin
   * form, else 400) → host → ACME challenge (requests only, when a
   * responder is set) → client IP → route (unknown host: 404) → request
   * record → HTTP→HTTPS redirect
   * (requests only: a WebSocket client does not follow one) → context →
   * `hooks.intercept` (requests) → listener check (a route pinned elsewhere:
   * 404) → the route's CompiledSite. Public for tests and benchmarks that
   * drive it without a socket; listeners call it.
   */
  enter(
    req: IncomingMessage,
    res: ServerResponse | null,
    socket: Duplex | null,
    head: Buffer | null,
    secure: boolean,
  ): void {
    // `chunked` alone or nothing: any other Transfer-Encoding is how requests get smuggled (issue 28).
    if (req.headers['transfer-encoding'] !== undefined) {
      const status = transferEncodingStatus(req);
      if (status !== 0) {
        refuseFraming(req, res, socket, status);
        return;
      }
    }
    // HTTP/2: the authority is `:authority` (RFC 9113 §8.3.1), put in `host`
    // for the steps after this one and the upstream request.
    const authority = req.headers[':authority'];
    if (authority !== undefined) req.headers.host = authority as string;
    else if (req.httpVersionMajor === 1 && req.httpVersionMinor === 1 && hostLines(req.rawHeaders) !== 1) {
      // RFC 9112 §3.2: an HTTP/1.1 request with no Host line, or more than one, is answered 400
      // (Node keeps only the first of several; which one a peer reads is how requests get smuggled).
      refuse(req, res, socket, 400, BAD_HOST);
      return;
    }
    const hostHeader = req.headers.host;
    const host = hostHeader === undefined ? '' : normalizeHost(hostHeader);
    let url = req.url ?? '/';
    if (url.charCodeAt(0) !== SLASH) {
      const origin = originForm(url, host);
      if (origin === null) {
        refuse(req, res, socket, 400);
        return;
      }
      req.url = url = origin;
    }
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const onRequest = res === null ? undefined : this.#hooks.onRequest;
    if (res !== null && this.#challenges !== undefined && isChallengePath(path)) {
      if (this.#answerChallenge(req, res, host, path, onRequest)) return;
    }
    const clientIp = this.#clientIp.enabled
      ? this.#clientIp.resolve(req.socket.remoteAddress, req.headers['x-forwarded-for'])
      : this.#peerIp(req);
    let route = this.#table.matchHost(host);
    // A catch-all (`:8080 {`) answers a plain-HTTP request that no named route of this listener serves.
    if (!secure && this.#table.hasFallbacks) route = this.#fallback(req, route);
    if (route === undefined) {
      if (onRequest !== undefined) this.#track(res as ServerResponse, onRequest, host, null, false, path, clientIp);
      refuse(req, res, socket, 404);
      return;
    }
    if (onRequest !== undefined) {
      const query = q < 0 ? undefined : url.slice(q + 1);
      this.#track(res as ServerResponse, onRequest, host, route.domain, route.site.analytics, path, clientIp, query);
    }
    // `route.httpsSite` first: the certificate lookup only for HTTPS sites.
    // Never for `/.well-known/acme-challenge/`, answered above or not: HTTP-01
    // is validated over plain HTTP (RFC 8555 §8.3), and a token the site itself
    // serves (another ACME client behind it) is reached there as it is.
    if (
      res !== null &&
      !secure &&
      route.httpsSite &&
      this.#redirectCertificates !== undefined &&
      !isChallengePath(path) &&
      wantsHttps(route, this.#redirectCertificates.has(host), this.#httpsOpen)
    ) {
      res.writeHead(308, { location: httpsLocation(host, this.#httpsSuffix, url), 'content-length': 0 });
      res.end();
      return;
    }
    const ctx: RequestContext = { domain: route.domain, host, path, clientIp, secure, site: route.site };
    if (res !== null) {
      const intercept = this.#hooks.intercept;
      if (intercept !== undefined) {
        try {
          if (intercept(req, res, ctx)) return;
        } catch {
          // A throwing hook is ignored (hooks.ts contract).
        }
      }
    }
    if (this.#pinning && !servedOn(route.sitePort, req.socket.localPort, this.#mainPorts)) {
      refuse(req, res, socket, 404);
      return;
    }
    const binds = this.#binds;
    if (binds?.restricted) {
      const own = route.site.bind;
      if (!answersOn(own.length > 0 ? own : binds.defaultBind, req.socket.localAddress)) {
        refuse(req, res, socket, 404);
        return;
      }
    }
    const compiled = route.compiled as CompiledSite;
    if (res !== null) {
      try {
        compiled.handle(req, res, ctx);
      } catch {
        if (!res.headersSent) res.writeHead(500, { 'content-type': TEXT }).end('internal error\n');
        else res.destroy();
      }
      return;
    }
    const upgradeSocket = socket as Duplex;
    const upgradeHead = head as Buffer;
    if (compiled.upgrade !== undefined) {
      compiled.upgrade(req, upgradeSocket, upgradeHead, ctx);
      return;
    }
    const site = route.site;
    if (site.handler?.kind === 'reverse_proxy' && site.basic_auth === null && !site.under_attack.enabled) {
      this.#forwarder.upgrade(req, upgradeSocket, upgradeHead, ctx, site.handler);
      return;
    }
    upgradeSocket.end('HTTP/1.1 403 Forbidden\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
  }

  /** `route` when this listener serves it, else the listener's catch-all (or `route`, refused later). */
  #fallback(req: IncomingMessage, route: Route | undefined): Route | undefined {
    const localPort = req.socket.localPort;
    if (route !== undefined && (!this.#pinning || servedOn(route.sitePort, localPort, this.#mainPorts))) return route;
    return this.#table.fallback(localPort, localPort !== undefined && this.#mainPorts.has(localPort)) ?? route;
  }

  /** Asks the challenge responder; true when it answered (200, the key authorization as text). */
  #answerChallenge(
    req: IncomingMessage,
    res: ServerResponse,
    host: string,
    path: string,
    onRequest: DataPlaneHooks['onRequest'],
  ): boolean {
    let answer: string | null;
    try {
      answer = (this.#challenges as ChallengeResponder).respond(path.slice(ACME_TOKEN_START), host);
    } catch {
      answer = null;
    }
    if (answer === null) return false;
    if (onRequest !== undefined) {
      const clientIp = this.#clientIp.enabled
        ? this.#clientIp.resolve(req.socket.remoteAddress, req.headers['x-forwarded-for'])
        : this.#peerIp(req);
      this.#track(res, onRequest, host, null, false, path, clientIp);
    }
    req.resume();
    res.writeHead(200, { 'content-type': TEXT, 'content-length': Buffer.byteLength(answer) });
    res.end(answer);
    return true;
  }

  #peerIp(req: IncomingMessage): string {
    const ip = req.socket.remoteAddress ?? '';
    return ip.startsWith('::ffff:') && ip.indexOf('.') > 0 ? ip.slice(7) : ip;
  }

  #track(
    res: ServerResponse,
    hook: NonNullable<DataPlaneHooks['onRequest']>,
    host: string,
    domain: string | null,
    analytics: boolean,
    path: string,
    clientIp: string,
    query?: string,
  ): void {
    const pending: PendingRecord = {
      hook,
      host,
      domain,
      analytics,
      path,
      query,
      clientIp,
      startedAt: Date.now(),
      startedMono: performance.now(),
      counts: this.#counts,
    };
    this.#counts.inFlight++;
    (res as ServerResponse & { [kRecord]?: PendingRecord })[kRecord] = pending;
    if ((res as { [kCloseOwned]?: boolean })[kCloseOwned] !== true) res.on('close', emitRecord);
  }
}

/**
 * A ServerResponse that counts the body bytes handed to `write`/`end` (a
 * prototype method, no per-request closure), for `RequestRecord.bytesSent`.
 */
class CountingResponse<Request extends IncomingMessage = IncomingMessage> extends http.ServerResponse<Request> {
  bodyBytes = 0;
  /** Content-Type seen by `writeHead` (a headers object passed there is not kept by Node). */
  contentType: string | undefined = undefined;
  [kExchange]: ExchangeSlot | undefined = undefined;
  [kRecord]: PendingRecord | undefined = undefined;
  [kEvents] = 0;
  /** The server listens for 'close' once per response (records and forwarder aborts). */
  readonly [kCloseOwned] = true;

  constructor(req: Request) {
    super(req);
    this.on('close', onResponseClose);
    const socket = req.socket as DrainSocket | null;
    if (socket !== null) socket[kOwed] = (socket[kOwed] ?? 0) + 1;
  }

  override writeHead(statusCode: number, reason?: unknown, headers?: unknown): this {
    // While the server drains, each response is its connection's last (`Connection: close`).
    if ((this.req.socket as DrainSocket | null)?.[kDraining] === true) this.shouldKeepAlive = false;
    const obj = typeof reason === 'string' ? headers : reason;
    if (obj !== null && typeof obj === 'object' && !Array.isArray(obj)) {
      const type = (obj as Record<string, unknown>)['content-type'];
      if (typeof type === 'string') this.contentType = type;
    }
    return (super.writeHead as (s: number, r: unknown, h: unknown) => this)(statusCode, reason, headers);
  }

  override write(chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
    this.bodyBytes += byteLength(chunk, encoding);
    return (super.write as (c: unknown, e: unknown, cb: unknown) => boolean)(chunk, encoding, callback);
  }

  override end(chunk?: unknown, encoding?: unknown, callback?: unknown): this {
    if (chunk !== undefined && chunk !== null && typeof chunk !== 'function') {
      this.bodyBytes += byteLength(chunk, encoding);
    }
    return (super.end as (c: unknown, e: unknown, cb: unknown) => this)(chunk, encoding, callback);
  }
}

/**
 * The HTTP/2 form of {@link CountingResponse} (Node's compat response):
 * the same counting and slots, plus the translation HTTP/2 needs from a data
 * plane written for HTTP/1.1 — the header fields HTTP/2 forbids
 * (`Connection`, `Transfer-Encoding`, `Upgrade`, …: `tls/http2.ts`) are
 * dropped by `setHeader` and `writeHead`, whatever an upstream or a step
 * set, and `destroyed` mirrors the stream's (the compat response has none).
 */
class CountingH2Response extends http2.Http2ServerResponse {
  bodyBytes = 0;
  contentType: string | undefined = undefined;
  [kExchange]: ExchangeSlot | undefined = undefined;
  [kRecord]: PendingRecord | undefined = undefined;
  [kEvents] = 0;
  readonly [kCloseOwned] = true;

  constructor(stream: http2.ServerHttp2Stream) {
    super(stream);
    this.on('close', onResponseClose);
  }

  override setHeader(name: string, value: number | string | readonly string[]): void {
    if (!isH2Forbidden(name, value)) super.setHeader(name, value);
  }

  override writeHead(statusCode: number, reason?: unknown, headers?: unknown): this {
    const message = typeof reason === 'string';
    const obj = h2Headers(message ? headers : reason);
    if (obj !== null && typeof obj === 'object' && !Array.isArray(obj)) {
      const type = (obj as Record<string, unknown>)['content-type'];
      if (typeof type === 'string') this.contentType = type;
    }
    const write = super.writeHead as (s: number, r: unknown, h?: unknown) => this;
    return message ? write.call(this, statusCode, reason, obj) : write.call(this, statusCode, obj);
  }

  override write(chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
    this.bodyBytes += byteLength(chunk, encoding);
    return (super.write as (c: unknown, e: unknown, cb: unknown) => boolean)(chunk, encoding, callback);
  }

  override end(chunk?: unknown, encoding?: unknown, callback?: unknown): this {
    if (chunk !== undefined && chunk !== null && typeof chunk !== 'function') {
      this.bodyBytes += byteLength(chunk, encoding);
    }
    return (super.end as (c: unknown, e: unknown, cb: unknown) => this)(chunk, encoding, callback);
  }
}

// The data plane checks `res.destroyed` as on an HTTP/1.1 response; the compat response has no such member.
Object.defineProperty(CountingH2Response.prototype, 'destroyed', {
  get(this: CountingH2Response): boolean {
    return this.stream.destroyed;
  },
});

function byteLength(chunk: unknown, encoding: unknown): number {
  if (typeof chunk === 'string') {
    return Buffer.byteLength(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  }
  return chunk instanceof Uint8Array ? chunk.byteLength : 0;
}

/** The one 'close' listener of every response: forwarder abort handling, then the request record. */
function onResponseClose(this: CountingResponse | CountingH2Response): void {
  this[kExchange]?.onResponseClose(this);
  if (this[kRecord] !== undefined) emitRecord.call(this as never);
  if (this instanceof CountingResponse) {
    const socket = this.req.socket as DrainSocket | null;
    if (socket !== null) {
      const active = (socket[kOwed] ?? 1) - 1;
      socket[kOwed] = active;
      // A request the parser refused after this one: its error answer goes out now (`client-errors.ts`).
      if (active === 0) sendOwedAnswer(socket);
      // Draining: the connection's last response is out; close it (an upgraded one stays).
      if (active === 0 && socket[kDraining] === true && !socket.destroyed) socket.end();
    }
  }
}

/** How many `Host` lines a request's raw header list holds. */
function hostLines(raw: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 4 && name.toLowerCase() === 'host') n++;
  }
  return n;
}

/**
 * How long a drain lets an idle HTTP/1 keep-alive connection be before it
 * ends it: a client that reuses it within this time gets its answer (and
 * `Connection: close`) instead of a reset (`ProxyServer.drain`).
 */
const DRAIN_IDLE_MS = 250;

/** Whether the server drains ({@link ProxyServer.drain}); `kOwed`: requests in flight on an HTTP/1 connection. */
const kDraining = Symbol('proxyd.draining');
/** Set on an HTTP/1 connection that closes after a refused request ({@link closesAfter}). */
const kRefused = Symbol('proxyd.refused');
type DrainSocket = Duplex & {
  [kOwed]?: number;
  [kDraining]?: boolean;
  [kRefused]?: boolean;
  alpnProtocol?: string | false | null;
};

/**
 * Emits the request record when the response closes: status 0 when no
 * header went out; `bytesSent` counts the body bytes written (0 for HEAD and
 * for a response that never sent its header).
 */
function emitRecord(
  this: ServerResponse & {
    [kRecord]?: PendingRecord | undefined;
    [kEvents]?: number;
    _header?: string | null;
    bodyBytes?: number;
    contentType?: string | undefined;
  },
): void {
  const pending = this[kRecord];
  if (pending === undefined) return;
  pending.counts.inFlight--;
  const req = this.req;
  const declared = req.headers['content-length'];
  const written = req.method === 'HEAD' || !this.headersSent ? 0 : (this.bodyBytes ?? 0);
  const contentType = this.contentType ?? this.getHeader('content-type') ?? contentTypeOf(this._header);
  const record: RequestRecord = {
    host: pending.host,
    domain: pending.domain,
    analytics: pending.analytics,
    method: req.method ?? 'GET',
    path: pending.path,
    query: pending.query,
    status: this.headersSent ? this.statusCode : 0,
    bytesSent: Math.max(written, 0),
    bytesReceived: declared === undefined ? 0 : Number(declared) || 0,
    durationMs: performance.now() - pending.startedMono,
    clientIp: pending.clientIp,
    referer: req.headers.referer,
    userAgent: req.headers['user-agent'],
    contentType: typeof contentType === 'string' ? contentType : undefined,
    startedAt: pending.startedAt,
    protocol: req.httpVersionMajor === 2 ? 'h2' : 'h1',
    events: this[kEvents] ?? 0,
  };
  try {
    pending.hook(record);
  } catch {
    // A throwing hook is ignored (hooks.ts contract).
  }
}

const CONTENT_TYPE_LINE = /\r\ncontent-type:[ \t]*([^\r]*)/i;

/** Content-Type from the written header block (writeHead with an object keeps no header map). */
function contentTypeOf(header: string | null | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  return CONTENT_TYPE_LINE.exec(header)?.[1];
}

/**
 * The origin form (`/path?query`) of an absolute-form request target
 * (`http://host/path`, RFC 9112 §3.2.2) whose authority names the same host
 * as the Host header; null for any other target (`*`, a different host,
 * garbage). Matching and access checks then see the path a client meant,
 * so `GET http://a.test/admin` cannot slip past `handle /admin/*`.
 */
function originForm(url: string, host: string): string | null {
  const match = ABSOLUTE_FORM.exec(url);
  if (match === null || normalizeHost(match[1] ?? '') !== host) return null;
  const rest = match[2] ?? '';
  return rest.startsWith('/') ? rest : `/${rest}`;
}

/**
 * Makes `server` accept connections paused and hand each to its own
 * 'connection' listeners (HTTP's, or TLS's, and the server's bookkeeping)
 * only once `limiter` admits it: what the client sent meanwhile waits in
 * the kernel, unread. TLS reads the server's `pauseOnConnect` when it wraps
 * the socket: it is off for that call, so the TLS socket reads.
 */
function holdUntilAdmitted(server: http.Server | http2.Http2SecureServer, limiter: ConnectionLimiter, secure: boolean) {
  const held = server as (http.Server | http2.Http2SecureServer) & { pauseOnConnect: boolean };
  held.pauseOnConnect = true;
  const listeners = server.listeners('connection') as ((socket: Duplex) => void)[];
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) =>
    limiter.admit(socket, () => {
      if (secure) held.pauseOnConnect = false;
      for (const listener of listeners) listener.call(server, socket);
      if (secure) held.pauseOnConnect = true;
      else socket.resume();
    }),
  );
}

/**
 * Turns a request or an upgrade away with 400 `bad request target` or 404
 * `no route for host`; an upgrade's socket gets the raw response and closes.
 */
function refuse(
  req: IncomingMessage,
  res: ServerResponse | null,
  socket: Duplex | null,
  status: 400 | 404,
  body400 = BAD_TARGET,
): void {
  if (res === null) {
    closesAfter(req);
    socket?.end(status === 404 ? RAW_NO_ROUTE : body400 === BAD_TARGET ? RAW_BAD_TARGET : RAW_BAD_HOST);
    return;
  }
  if (status === 400) {
    closesAfter(req);
    req.resume();
    res.writeHead(400, { 'content-type': TEXT, 'content-length': body400.length, connection: 'close' });
    res.end(body400);
    return;
  }
  res.writeHead(404, { 'content-type': TEXT, 'content-length': NO_ROUTE.length });
  res.end(NO_ROUTE);
}

/**
 * Turns away a request whose Transfer-Encoding proxyd does not accept
 * (`transfer-encoding.ts`): 400 or 501, `Connection: close`. Its body is
 * discarded and the connection closes after the answer; a request Node
 * still hands over on it is dropped ({@link closesAfter}).
 */
function refuseFraming(
  req: IncomingMessage,
  res: ServerResponse | null,
  socket: Duplex | null,
  status: 400 | 501,
): void {
  const body = status === 400 ? BAD_FRAMING : UNKNOWN_CODING;
  closesAfter(req);
  if (res === null) {
    const reason = status === 400 ? 'Bad Request' : 'Not Implemented';
    socket?.end(
      `HTTP/1.1 ${status} ${reason}\r\ncontent-type: ${TEXT}\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
    );
    return;
  }
  req.resume();
  res.writeHead(status, { 'content-type': TEXT, 'content-length': body.length, connection: 'close' });
  res.end(body);
}

/**
 * Marks a request's HTTP/1 connection as closing after a refusal: the
 * requests Node's parser still hands over on it (pipelined behind the
 * refused one, or sent while it closes) are dropped, never routed nor
 * forwarded ({@link refusedBefore}); their answers could not be sent.
 */
function closesAfter(req: IncomingMessage): void {
  if (req.httpVersionMajor === 1) (req.socket as DrainSocket)[kRefused] = true;
}

/** Whether a request came on a connection closing after a refusal ({@link closesAfter}): its body is discarded. */
function refusedBefore(req: IncomingMessage): boolean {
  if ((req.socket as DrainSocket | null)?.[kRefused] !== true) return false;
  req.resume();
  return true;
}

function safeClose(compiled: CompiledSite): void {
  try {
    compiled.close?.();
  } catch {
    // Closing a dropped site must not break the swap.
  }
}

function ignore(): void {}
