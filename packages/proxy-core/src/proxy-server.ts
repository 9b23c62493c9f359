import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { SecureContext } from 'node:tls';
import { ClientIpResolver } from './client-ip.js';
import { compileFallbackSite } from './fallback-site.js';
import { HttpForwarder } from './forward/forwarder.js';
import type { DataPlaneHooks, RequestContext, RequestRecord } from './hooks.js';
import type { ReverseProxyHandler, RouteSpec, Site } from './model/index.js';
import type { CompiledSite, Forwarder } from './pipeline.js';
import { normalizeHost, type Route, RouteTable } from './route-table.js';
import { type ExchangeSlot, kCloseOwned, kExchange, kRecord } from './slots.js';
import type { CertificateStore } from './tls/certificate-store.js';

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
  /** Certificates of the HTTPS listener, by SNI. Absent: no HTTPS listener and no redirects. */
  certificates?: CertificateStore;
  /** The HTTPS port named in redirects (default 443: no port in the Location). */
  httpsPort?: number;
  /** Upstream connect timeout, ms (default 5000). */
  connectTimeoutMs?: number;
  /** Upstream idle timeout, ms (default 60000). */
  idleTimeoutMs?: number;
}

const TEXT = 'text/plain; charset=utf-8';
const NO_ROUTE = 'no route for host\n';
const BAD_TARGET = 'bad request target\n';
const SLASH = 0x2f;
const ABSOLUTE_FORM = /^https?:\/\/([^/?#]*)([^#]*)/i;
const ACME_PREFIX = '/.well-known/acme-challenge/';

/** What the server keeps per request for its `onRequest` record. */
interface PendingRecord {
  readonly hook: NonNullable<DataPlaneHooks['onRequest']>;
  readonly host: string;
  readonly domain: string | null;
  readonly analytics: boolean;
  readonly path: string;
  readonly clientIp: string;
  readonly startedAt: number;
}

/**
 * The data-plane listeners. Per request: match the host in the current
 * {@link RouteTable} (unknown host → `404 no route for host`, no upstream
 * contacted) → HTTP→HTTPS redirect for HTTPS sites that have a certificate →
 * RequestContext with the real client IP → `hooks.intercept` → the route's
 * CompiledSite. `hooks.onRequest` gets one record per finished request.
 */
export class ProxyServer {
  #table: RouteTable;
  readonly #forwarder: HttpForwarder;
  readonly #hooks: DataPlaneHooks;
  readonly #clientIp: ClientIpResolver;
  readonly #compile: (site: Site) => CompiledSite;
  readonly #certificates: CertificateStore | undefined;
  readonly #httpsSuffix: string;
  readonly #servers: (http.Server | https.Server)[] = [];
  /** Upgraded (WebSocket) client sockets: the HTTP server no longer tracks them. */
  readonly #upgraded = new Set<Duplex>();

  constructor(options: ProxyServerOptions = {}) {
    this.#hooks = options.hooks ?? {};
    this.#clientIp = new ClientIpResolver(options.trustedProxies ?? []);
    this.#forwarder = new HttpForwarder({
      hooks: this.#hooks,
      clientIp: this.#clientIp,
      ...(options.connectTimeoutMs !== undefined ? { connectTimeoutMs: options.connectTimeoutMs } : {}),
      ...(options.idleTimeoutMs !== undefined ? { idleTimeoutMs: options.idleTimeoutMs } : {}),
    });
    const compileSite = options.compileSite ?? compileFallbackSite;
    const forwarder = this.#forwarder;
    this.#compile = (site) => compileSite(site, forwarder);
    this.#certificates = options.certificates;
    this.#httpsSuffix = options.httpsPort === undefined || options.httpsPort === 443 ? '' : `:${options.httpsPort}`;
    this.#table = new RouteTable(options.routes ?? [], options.version ?? 0, this.#compile);
    this.#retain();
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
   * Publishes a new route set: one reference swap, so a request in flight
   * finishes on the table it started with. Compiled sites are reused for
   * unchanged Site objects; dropped ones are closed, their pools and caches released.
   */
  setRoutes(routes: readonly RouteSpec[], version: number): void {
    const previous = this.#table;
    const next = new RouteTable(routes, version, this.#compile, previous);
    this.#table = next;
    this.#retain();
    for (const compiled of previous.compiledSites()) if (!next.holds(compiled)) safeClose(compiled);
  }

  /** Listens for plain HTTP on host:port (port 0 picks a free one). */
  listen(port: number, host = '127.0.0.1'): Promise<AddressInfo> {
    const handler = (req: IncomingMessage, res: ServerResponse) => this.#handle(req, res, false);
    const server = http.createServer({ ServerResponse: CountingResponse }, handler);
    // No automatic `100 Continue`: the forwarder asks for the body only
    // after the access checks passed (a 401/429 goes out without it).
    server.on('checkContinue', handler);
    return this.#start(server, port, host);
  }

  /**
   * Listens for HTTPS on host:port with SNI: each handshake takes its
   * certificate from the {@link CertificateStore}; an unknown name fails the handshake.
   */
  listenHttps(port: number, host = '127.0.0.1'): Promise<AddressInfo> {
    const certificates = this.#certificates;
    if (certificates === undefined) return Promise.reject(new Error('no certificate store configured'));
    const server = https.createServer(
      {
        ServerResponse: CountingResponse,
        SNICallback: (name, callback) => {
          let result: SecureContext | null | Promise<SecureContext | null>;
          try {
            result = certificates.contextFor(name.toLowerCase());
          } catch (err) {
            callback(err as Error);
            return;
          }
          if (result instanceof Promise) {
            result.then(
              (ctx) => (ctx ? callback(null, ctx) : callback(new Error(`no certificate for ${name}`))),
              (err: Error) => callback(err),
            );
          } else if (result === null) callback(new Error(`no certificate for ${name}`));
          else callback(null, result);
        },
      },
      (req, res) => this.#handle(req, res, true),
    );
    server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => this.#handle(req, res, true));
    server.on('tlsClientError', (_err, socket) => socket.destroy());
    return this.#start(server, port, host);
  }

  /** Stops every listener, closes connections, health checks and upstream sockets. */
  async close(): Promise<void> {
    for (const socket of this.#upgraded) socket.destroy();
    await Promise.all(
      this.#servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeAllConnections();
          }),
      ),
    );
    for (const compiled of this.#table.compiledSites()) safeClose(compiled);
    this.#forwarder.close();
  }

  #start(server: http.Server | https.Server, port: number, host: string): Promise<AddressInfo> {
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
      this.#upgrade(req, socket, head, server instanceof https.Server),
    );
    server.on('clientError', onClientError);
    this.#servers.push(server);
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve(server.address() as AddressInfo);
      });
    });
  }

  #retain(): void {
    const handlers = new Set<ReverseProxyHandler>();
    const sites = new Set<Site>();
    for (const site of this.#table.sites()) {
      sites.add(site);
      if (site.handler?.kind === 'reverse_proxy') handlers.add(site.handler);
      for (const block of site.handles) if (block.handler?.kind === 'reverse_proxy') handlers.add(block.handler);
    }
    this.#forwarder.retain(handlers);
    this.#forwarder.caches.retain(sites);
  }

  #handle(req: IncomingMessage, res: ServerResponse, secure: boolean): void {
    const hostHeader = req.headers.host;
    const host = hostHeader === undefined ? '' : normalizeHost(hostHeader);
    let url = req.url ?? '/';
    if (url.charCodeAt(0) !== SLASH) {
      const origin = originForm(url, host);
      if (origin === null) {
        req.resume();
        res.writeHead(400, { 'content-type': TEXT, 'content-length': BAD_TARGET.length, connection: 'close' });
        res.end(BAD_TARGET);
        return;
      }
      req.url = url = origin;
    }
    const route = this.#table.matchHost(host);
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const onRequest = this.#hooks.onRequest;
    const clientIp = this.#clientIp.enabled
      ? this.#clientIp.resolve(req.socket.remoteAddress, req.headers['x-forwarded-for'])
      : this.#peerIp(req);
    if (route === undefined) {
      if (onRequest !== undefined) this.#track(res, onRequest, host, null, false, path, clientIp);
      res.writeHead(404, { 'content-type': TEXT, 'content-length': NO_ROUTE.length });
      res.end(NO_ROUTE);
      return;
    }
    if (onRequest !== undefined) this.#track(res, onRequest, host, route.domain, route.site.analytics, path, clientIp);
    if (!secure && route.httpsSite && this.#redirects(host, path)) {
      res.writeHead(308, { location: `https://${hostForUrl(host)}${this.#httpsSuffix}${url}`, 'content-length': 0 });
      res.end();
      return;
    }
    const ctx: RequestContext = { domain: route.domain, host, path, clientIp, secure, site: route.site };
    const intercept = this.#hooks.intercept;
    if (intercept !== undefined) {
      try {
        if (intercept(req, res, ctx)) return;
      } catch {
        // A throwing hook is ignored (hooks.ts contract).
      }
    }
    const compiled = route.compiled as CompiledSite;
    try {
      compiled.handle(req, res, ctx);
    } catch {
      if (!res.headersSent) res.writeHead(500, { 'content-type': TEXT }).end('internal error\n');
      else res.destroy();
    }
  }

  #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, secure: boolean): void {
    socket.on('error', () => socket.destroy());
    this.#upgraded.add(socket);
    socket.once('close', () => this.#upgraded.delete(socket));
    const host = req.headers.host === undefined ? '' : normalizeHost(req.headers.host);
    const route: Route | undefined = this.#table.matchHost(host);
    if (route === undefined) {
      socket.end(
        `HTTP/1.1 404 Not Found\r\ncontent-type: ${TEXT}\r\ncontent-length: ${NO_ROUTE.length}\r\nconnection: close\r\n\r\n${NO_ROUTE}`,
      );
      return;
    }
    let url = req.url ?? '/';
    if (url.charCodeAt(0) !== SLASH) {
      const origin = originForm(url, host);
      if (origin === null) {
        socket.end(
          `HTTP/1.1 400 Bad Request\r\ncontent-type: ${TEXT}\r\ncontent-length: ${BAD_TARGET.length}\r\nconnection: close\r\n\r\n${BAD_TARGET}`,
        );
        return;
      }
      req.url = url = origin;
    }
    const q = url.indexOf('?');
    const clientIp = this.#clientIp.enabled
      ? this.#clientIp.resolve(req.socket.remoteAddress, req.headers['x-forwarded-for'])
      : this.#peerIp(req);
    const ctx: RequestContext = {
      domain: route.domain,
      host,
      path: q < 0 ? url : url.slice(0, q),
      clientIp,
      secure,
      site: route.site,
    };
    const compiled = route.compiled;
    if (compiled?.upgrade !== undefined) {
      compiled.upgrade(req, socket, head, ctx);
      return;
    }
    const site = route.site;
    if (site.handler?.kind === 'reverse_proxy' && site.basic_auth === null && !site.under_attack.enabled) {
      this.#forwarder.upgrade(req, socket, head, ctx, site.handler);
      return;
    }
    socket.end('HTTP/1.1 403 Forbidden\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
  }

  #redirects(host: string, path: string): boolean {
    return this.#certificates !== undefined && !path.startsWith(ACME_PREFIX) && this.#certificates.has(host);
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
  ): void {
    const pending: PendingRecord = {
      hook,
      host,
      domain,
      analytics,
      path,
      clientIp,
      startedAt: Date.now(),
    };
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
  /** The server listens for 'close' once per response (records and forwarder aborts). */
  readonly [kCloseOwned] = true;

  constructor(req: Request) {
    super(req);
    this.on('close', onResponseClose);
  }

  override writeHead(statusCode: number, reason?: unknown, headers?: unknown): this {
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

function byteLength(chunk: unknown, encoding: unknown): number {
  if (typeof chunk === 'string') {
    return Buffer.byteLength(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  }
  return chunk instanceof Uint8Array ? chunk.byteLength : 0;
}

/** The one 'close' listener of every response: forwarder abort handling, then the request record. */
function onResponseClose(this: CountingResponse): void {
  this[kExchange]?.onResponseClose(this);
  if (this[kRecord] !== undefined) emitRecord.call(this);
}

/**
 * Emits the request record when the response closes: status 0 when no
 * header went out; `bytesSent` counts the body bytes written (0 for HEAD and
 * for a response that never sent its header).
 */
function emitRecord(
  this: ServerResponse & {
    [kRecord]?: PendingRecord | undefined;
    _header?: string | null;
    bodyBytes?: number;
    contentType?: string | undefined;
  },
): void {
  const pending = this[kRecord];
  if (pending === undefined) return;
  const req = this.req;
  const written = req.method === 'HEAD' || !this.headersSent ? 0 : (this.bodyBytes ?? 0);
  const contentType = this.contentType ?? this.getHeader('content-type') ?? contentTypeOf(this._header);
  const record: RequestRecord = {
    host: pending.host,
    domain: pending.domain,
    analytics: pending.analytics,
    method: req.method ?? 'GET',
    path: pending.path,
    status: this.headersSent ? this.statusCode : 0,
    bytesSent: Math.max(written, 0),
    durationMs: Date.now() - pending.startedAt,
    clientIp: pending.clientIp,
    referer: req.headers.referer,
    userAgent: req.headers['user-agent'],
    contentType: typeof contentType === 'string' ? contentType : undefined,
    startedAt: pending.startedAt,
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

/** Bad requests the HTTP parser refuses: a short answer (as Node's default handler gives), then close. */
function onClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  const writable =
    socket.writable && !(socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
  if (writable) {
    const status =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? '431 Request Header Fields Too Large'
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? '408 Request Timeout'
          : '400 Bad Request';
    socket.end(`HTTP/1.1 ${status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`);
  }
  socket.destroy();
}

function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

function safeClose(compiled: CompiledSite): void {
  try {
    compiled.close?.();
  } catch {
    // Closing a dropped site must not break the swap.
  }
}
