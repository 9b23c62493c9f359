import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { type ChallengeResponder, isChallengePath } from '../challenge.js';
import type { ClientIpResolver } from '../client-ip.js';
import type { HttpForwarder } from '../forward/forwarder.js';
import type { DataPlaneHooks, RequestContext } from '../hooks.js';
import type { CompiledSite } from '../pipeline.js';
import { httpsLocation, wantsHttps } from '../redirect.js';
import { normalizeHost, type Route, type RouteTable } from '../route-table.js';
import { kCloseOwned, kRecord } from '../slots.js';
import type { CertificateStore } from '../tls/certificate-store.js';
import { transferEncodingStatus } from '../transfer-encoding.js';
import { answersOn, type ListenerBinds } from './binds.js';
import { closesAfter } from './client-connections.js';
import { emitRecord, type PendingRecord, type RequestCounts } from './request-record.js';
import { servedOn } from './site-ports.js';

/** What the front door reads, shared with its {@link ProxyServer}. */
export interface FrontDoorOptions {
  readonly table: RouteTable;
  readonly forwarder: HttpForwarder;
  readonly hooks: DataPlaneHooks;
  readonly clientIp: ClientIpResolver;
  /** The store the redirect rule asks; undefined when redirects are off or there is no store. */
  readonly redirectCertificates: CertificateStore | undefined;
  readonly challenges: ChallengeResponder | undefined;
  readonly binds: ListenerBinds | undefined;
  /** Bound ports of the main listeners (the server adds to it as they open). */
  readonly mainPorts: ReadonlySet<number>;
  /** The server's request counts. */
  readonly counts: RequestCounts;
  /** The redirect's port suffix until the HTTPS listener binds (`httpsPortSuffix`). */
  readonly httpsSuffix: string;
}

/**
 * The front door of a {@link ProxyServer}'s listeners, one path for requests
 * and upgrades ({@link FrontDoor.enter}): what it refuses (framing, target,
 * Host), the ACME challenge, host matching, the request record, the
 * redirect, `hooks.intercept`, the listener check, then the route's
 * CompiledSite. The server sets `httpsSuffix`, `httpsOpen` and `pinning` as
 * its listeners open and its routes change.
 */
export class FrontDoor {
  readonly #table: RouteTable;
  readonly #forwarder: HttpForwarder;
  readonly #hooks: DataPlaneHooks;
  readonly #clientIp: ClientIpResolver;
  readonly #redirectCertificates: CertificateStore | undefined;
  readonly #challenges: ChallengeResponder | undefined;
  readonly #binds: ListenerBinds | undefined;
  readonly #mainPorts: ReadonlySet<number>;
  readonly #counts: RequestCounts;
  /** The port part of a redirect's Location (`httpsPortSuffix`). */
  httpsSuffix: string;
  /** Whether a main HTTPS listener is open (redirects lead somewhere). */
  httpsOpen = false;
  /** Whether any listener may refuse a route: some route is pinned or a site port is open. */
  pinning = false;

  constructor(options: FrontDoorOptions) {
    this.#table = options.table;
    this.#forwarder = options.forwarder;
    this.#hooks = options.hooks;
    this.#clientIp = options.clientIp;
    this.#redirectCertificates = options.redirectCertificates;
    this.#challenges = options.challenges;
    this.#binds = options.binds;
    this.#mainPorts = options.mainPorts;
    this.#counts = options.counts;
    this.httpsSuffix = options.httpsSuffix;
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
   * 404) → the route's CompiledSite. The listeners call it, and
   * `ProxyServer.enter` (tests and benchmarks drive it without a socket).
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
      wantsHttps(route, this.#redirectCertificates.has(host), this.httpsOpen)
    ) {
      res.writeHead(308, { location: httpsLocation(host, this.httpsSuffix, url), 'content-length': 0 });
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
    if (this.pinning && !servedOn(route.sitePort, req.socket.localPort, this.#mainPorts)) {
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

  /**
   * The route whose site the HTTP/1.1 fast path may serve this request on,
   * or null when {@link enter} would do anything for it besides calling
   * that site's handler: an ACME challenge path, a catch-all listener, no
   * route, the HTTP→HTTPS redirect, `hooks.intercept` (unless it declares
   * an `interceptPrefix` the path is outside of), a pinned route or a
   * `bind` restriction, or a site without a `fast` plan. The caller has
   * checked framing, the single Host line and the origin-form target.
   */
  fastRoute(host: string, path: string, secure: boolean): Route | null {
    if (this.#challenges !== undefined && isChallengePath(path)) return null;
    if ((!secure && this.#table.hasFallbacks) || this.pinning || this.#binds?.restricted === true) return null;
    const route = this.#table.matchHost(host);
    if (route === undefined || (route.compiled as CompiledSite).fast === undefined) return null;
    if (
      !secure &&
      route.httpsSite &&
      this.#redirectCertificates !== undefined &&
      wantsHttps(route, this.#redirectCertificates.has(host), this.httpsOpen)
    ) {
      return null;
    }
    const hooks = this.#hooks;
    if (hooks.intercept !== undefined) {
      const prefix = hooks.interceptPrefix;
      if (prefix === undefined || path.startsWith(prefix)) return null;
    }
    return route;
  }

  /** `route` when this listener serves it, else the listener's catch-all (or `route`, refused later). */
  #fallback(req: IncomingMessage, route: Route | undefined): Route | undefined {
    const localPort = req.socket.localPort;
    if (route !== undefined && (!this.pinning || servedOn(route.sitePort, localPort, this.#mainPorts))) return route;
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
