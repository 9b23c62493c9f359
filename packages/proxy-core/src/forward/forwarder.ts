import http, { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { Duplex, Transform } from 'node:stream';
import { ProxyServer as HttpProxy } from 'http-proxy-3';
import {
  type CacheEntry,
  CacheRegistry,
  cacheLifetimeMs,
  entrySize,
  isCacheableRequest,
  RequestCacheMode,
  type ResponseCache,
  requestCacheMode,
} from '../cache/response-cache.js';
import type { ClientIpResolver } from '../client-ip.js';
import { type DataPlaneHooks, type RequestContext, SMALL_BODY_BYTES } from '../hooks.js';
import type { HeaderOp, ReverseProxyHandler } from '../model/index.js';
import type { Forwarder, ForwardOptions } from '../pipeline.js';
import { type PoolMember, UpstreamPool } from '../pool/upstream-pool.js';
import { closeSlot, kCloseOwned, kExchange } from '../slots.js';
import { AgentPool } from './agents.js';
import { stripHopByHop } from './hop-by-hop.js';
import { responseHeaders } from './response-headers.js';
import { buildUpstreamHeaders, type UpstreamHeaderPlan, upstreamHeaderPlan } from './upstream-headers.js';

/** Options of {@link HttpForwarder}. */
export interface HttpForwarderOptions {
  /** Data-plane hooks; `transformResponse` is applied to upstream (and cached) bodies. */
  hooks?: DataPlaneHooks;
  /** Decides whether the peer's `X-Forwarded-*` headers are kept (trusted proxies) or replaced. */
  clientIp?: ClientIpResolver;
  /** Upstream connect timeout, ms (default 5000). Exceeded → 504. */
  connectTimeoutMs?: number;
  /** Upstream idle timeout (no byte while waiting for or reading the response), ms (default 60000). Exceeded → 504. */
  idleTimeoutMs?: number;
  /** Where site caches live; default a new registry. */
  caches?: CacheRegistry;
}

/** What the forwarder precomputes once per `reverse_proxy` handler object. */
interface CompiledHandler {
  readonly pool: UpstreamPool;
  readonly headers: UpstreamHeaderPlan;
}

/** The per-request state of one forwarded exchange, reached from emitters through a symbol. */
interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  ctx: RequestContext;
  options: ForwardOptions;
  pool: UpstreamPool;
  member: PoolMember;
  forwarder: HttpForwarder;
  /** The upstream request head, raw `[name, value, …]`. */
  headers: string[];
  /** The request has a body to stream (Content-Length or Transfer-Encoding). */
  hasBody: boolean;
  /** A request that failed on a reused keep-alive socket was sent again once. */
  retried: boolean;
  /** The site cache to fill on a MISS, or null. */
  cache: ResponseCache | null;
  cacheKey: string;
  proxyReq: http.ClientRequest | null;
  proxyRes: IncomingMessage | null;
  /** The response's 'drain' listener is attached (once, on the first backpressure). */
  drainHooked: boolean;
  /** The client went away before the response finished. */
  aborted: boolean;
  released: boolean;
  /** A small body being collected for `DataPlaneHooks.rewriteBody`, or null. */
  whole: WholeBody | null;
}

type Emitter = { [kExchange]?: Exchange };

const TEXT = 'text/plain; charset=utf-8';

/**
 * Forwards requests to `reverse_proxy` pools with http-proxy-3 on its native
 * (node:http) path. One lean web pass ({@link forwardPass}), put first with
 * the library's `before` hook, that reuses precomputed targets and agents and
 * allocates no closures per request; WebSockets use its own `ws` passes.
 *
 * Per request: cache lookup (site `cache`) → pool pick (503 + Retry-After
 * when no member is eligible) → hop-by-hop headers dropped, `X-Forwarded-*`
 * set, `header_up` applied → streamed both ways → response hop-by-hop headers
 * dropped → `editResponseHeaders` → `hooks.transformResponse` → written.
 * Upstream errors: connect failure 502 (the member leaves the rotation for
 * `fail_duration`), timeout 504.
 */
export class HttpForwarder implements Forwarder {
  /** The site caches (the admin API's `CachePort`: `{ enabled, purge }`). */
  readonly caches: CacheRegistry;
  readonly #proxy: HttpProxy;
  readonly #agents: AgentPool;
  readonly #handlers = new Map<ReverseProxyHandler, CompiledHandler>();
  readonly hooks: DataPlaneHooks;
  readonly #clientIp: ClientIpResolver | undefined;

  constructor(options: HttpForwarderOptions = {}) {
    this.hooks = options.hooks ?? {};
    this.#clientIp = options.clientIp;
    this.caches = options.caches ?? new CacheRegistry();
    this.#agents = new AgentPool({
      connectTimeoutMs: options.connectTimeoutMs ?? 5000,
      idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
    });
    this.#proxy = new HttpProxy({});
    // The library's web passes re-parse the target, copy every header and set
    // up closures per request. One pass over precomputed state goes first
    // (the public `before` hook) and returns true, so theirs never run.
    this.#proxy.before('web', 'deleteLength', forwardPass as never);
    this.#proxy.on('error', onProxyError);
    this.#proxy.on('proxyReqWs', onProxyReqWs);
  }

  /** The pool of a handler, created (with its health checks) on first use. */
  poolOf(handler: ReverseProxyHandler): UpstreamPool {
    return this.#compile(handler).pool;
  }

  /**
   * Every pool member of the live pools: `host:port` (IPv6 in brackets) and
   * whether it is in rotation now. A member in several pools appears once
   * per pool.
   */
  *upstreamHealth(): Iterable<{ upstream: string; healthy: boolean }> {
    const now = Date.now();
    for (const { pool } of this.#handlers.values()) {
      for (const m of pool.members) yield { upstream: m.label, healthy: m.healthy && m.downUntil <= now };
    }
  }

  /** Sockets held by the upstream agents, in use or idle (for leak tests and metrics). */
  upstreamSocketCount(): number {
    return this.#agents.socketCount();
  }

  /**
   * Keeps the pools of these handlers and closes the others (their health
   * checks stop). Called on every route-table swap.
   */
  retain(handlers: ReadonlySet<ReverseProxyHandler>): void {
    for (const [handler, compiled] of this.#handlers) {
      if (!handlers.has(handler)) {
        compiled.pool.close();
        this.#handlers.delete(handler);
      }
    }
  }

  /** Stops health checks and destroys every upstream socket. */
  close(): void {
    for (const compiled of this.#handlers.values()) compiled.pool.close();
    this.#handlers.clear();
    this.#agents.destroy();
  }

  forward(
    req: IncomingMessage,
    res: ServerResponse,
    ctx: RequestContext,
    handler: ReverseProxyHandler,
    options: ForwardOptions,
  ): void {
    const compiled = this.#compile(handler);
    let cache: ResponseCache | null = null;
    let cacheKey = '';
    const cacheConfig = ctx.site.cache;
    if (cacheConfig !== null && isCacheableRequest(req)) {
      cache = this.caches.forSite(ctx.site, cacheConfig);
      cacheKey = ctx.host + (req.url ?? '/');
      const mode = requestCacheMode(req);
      if ((mode & RequestCacheMode.Refresh) === 0) {
        const entry = cache.get(cacheKey);
        if (entry !== undefined) {
          this.#serveHit(req, res, ctx, options, entry);
          return;
        }
      }
      if (req.method !== 'GET' || (mode & RequestCacheMode.NoStore) !== 0) cache = null;
      res.setHeader('x-cache', 'MISS');
    }
    const pool = compiled.pool;
    const member = pool.pick(ctx.clientIp);
    if (member === null) {
      res.writeHead(503, { 'content-type': TEXT, 'retry-after': String(pool.retryAfterSeconds()) });
      res.end('no healthy upstream\n');
      return;
    }
    const headers = req.headers;
    const peer = req.socket.remoteAddress ?? '';
    const trusted = this.#clientIp?.enabled === true && this.#clientIp.isTrusted(peer);
    const xff = headers['x-forwarded-for'];
    const forwarded = {
      forwardedFor: trusted && xff !== undefined ? `${xff}, ${unmapIpv4(peer)}` : ctx.clientIp,
      trusted,
      proto: ctx.secure ? 'https' : 'http',
      host: headers.host ?? ctx.host,
    };
    member.active++;
    const exchange: Exchange = {
      req,
      res,
      ctx,
      options,
      pool,
      member,
      forwarder: this,
      headers: buildUpstreamHeaders(req, forwarded, compiled.headers),
      hasBody: headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined,
      retried: false,
      cache,
      cacheKey,
      proxyReq: null,
      proxyRes: null,
      drainHooked: false,
      aborted: false,
      released: false,
      whole: null,
    };
    this.#proxy.web(req, res, { target: member.target, exchange } as never);
  }

  /**
   * Forwards a WebSocket upgrade to the pool (http-proxy-3's `ws` passes).
   * No eligible member → `503` on the raw socket.
   */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, ctx: RequestContext, handler: ReverseProxyHandler): void {
    const compiled = this.#compile(handler);
    const member = compiled.pool.pick(ctx.clientIp);
    if (member === null) {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    const connection = req.headers.connection;
    const upgrade = req.headers.upgrade;
    this.#prepareHeaders(req, ctx, compiled.headers.ops);
    if (connection !== undefined) req.headers.connection = connection;
    if (upgrade !== undefined) req.headers.upgrade = upgrade;
    const tls = handler.tls;
    this.#proxy.ws(req, socket, head, {
      target: member.target,
      agent: member.agent,
      secure: !tls.insecure_skip_verify,
      prependPath: false,
    } as never);
  }

  /** The 502/504 answer of a failed exchange (or a destroyed response once headers went out). */
  fail(exchange: Exchange, err: NodeJS.ErrnoException): void {
    const { res } = exchange;
    const code = err.code ?? '';
    if (!exchange.aborted && retriable(exchange, code)) {
      // The upstream closed a pooled connection as we reused it (its idle
      // close raced our request): nothing was processed, send it again once.
      exchange.retried = true;
      forwardPass(exchange.req, res, { exchange });
      return;
    }
    release(exchange);
    if (exchange.aborted) return;
    const timeout = code === 'PROXY_CONNECT_TIMEOUT' || code === 'PROXY_IDLE_TIMEOUT';
    if (code === 'PROXY_CONNECT_TIMEOUT' || CONNECT_FAILURES.has(code)) exchange.pool.markFailed(exchange.member);
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const status = timeout ? 504 : 502;
    res.removeHeader('x-cache');
    res.writeHead(status, { 'content-type': TEXT, connection: 'close' });
    res.end(timeout ? 'gateway timeout\n' : 'bad gateway\n');
  }

  #compile(handler: ReverseProxyHandler): CompiledHandler {
    let compiled = this.#handlers.get(handler);
    if (compiled === undefined) {
      const agents = this.#agents;
      const headers = upstreamHeaderPlan(handler.header_up);
      compiled = {
        pool: new UpstreamPool(handler, (address) => agents.agentFor(address, handler.tls)),
        headers,
      };
      this.#handlers.set(handler, compiled);
    }
    return compiled;
  }

  /**
   * Edits the request headers in place (the WebSocket path, where
   * http-proxy-3 copies `req.headers`): hop-by-hop out, X-Forwarded-* in,
   * then `header_up`.
   */
  #prepareHeaders(req: IncomingMessage, ctx: RequestContext, headerUp: readonly HeaderOp[]): void {
    const headers = req.headers;
    const chunked = headers['transfer-encoding'] !== undefined;
    stripHopByHop(headers, req.rawHeaders);
    // Without Content-Length a streamed body must stay chunked on the upstream hop.
    if (chunked && headers['content-length'] === undefined) headers['transfer-encoding'] = 'chunked';
    const peer = req.socket.remoteAddress ?? '';
    const trusted = this.#clientIp?.enabled === true && this.#clientIp.isTrusted(peer);
    const xff = headers['x-forwarded-for'];
    headers['x-forwarded-for'] = trusted && xff !== undefined ? `${xff}, ${unmapIpv4(peer)}` : ctx.clientIp;
    if (!trusted || headers['x-forwarded-proto'] === undefined) {
      headers['x-forwarded-proto'] = ctx.secure ? 'https' : 'http';
    }
    if (!trusted || headers['x-forwarded-host'] === undefined) {
      headers['x-forwarded-host'] = headers.host ?? ctx.host;
    }
    for (const op of headerUp) {
      if (op.op === 'delete') delete headers[op.name];
      else if (op.op === 'set') headers[op.name] = op.value ?? '';
      else {
        const prev = headers[op.name];
        headers[op.name] = prev === undefined ? (op.value ?? '') : `${prev}, ${op.value ?? ''}`;
      }
    }
  }

  #serveHit(
    req: IncomingMessage,
    res: ServerResponse,
    ctx: RequestContext,
    options: ForwardOptions,
    entry: CacheEntry,
  ): void {
    const headers: IncomingHttpHeaders = { ...entry.headers };
    headers.age = String(entry.baseAge + Math.floor((Date.now() - entry.storedAt) / 1000));
    headers['x-cache'] = 'HIT';
    options.editResponseHeaders?.(headers, entry.status);
    const rewrite =
      entry.body.length <= SMALL_BODY_BYTES ? rewriteFor(this.hooks, ctx, req, entry.status, headers) : null;
    if (rewrite !== null) {
      const body = applyRewrite(rewrite, entry.body);
      headers['content-length'] = String(body.length);
      res.writeHead(entry.status, headers);
      res.end(req.method === 'HEAD' ? undefined : body);
      return;
    }
    const transform = transformFor(this.hooks, ctx, req, entry.status, headers);
    res.writeHead(entry.status, headers);
    if (req.method === 'HEAD') {
      transform?.destroy();
      res.end();
    } else if (transform !== null) {
      transform.on('error', destroyPipedTarget);
      (transform as Emitter & Transform)[kExchange] = { res } as Exchange;
      transform.pipe(res);
      transform.end(entry.body);
    } else {
      res.end(entry.body);
    }
  }
}

/**
 * Error codes that mean "could not connect to this member" (passive health).
 * A reset on a reused keep-alive socket is not one: it is a race with the
 * upstream's idle close, not a sign the member is down.
 */
const CONNECT_FAILURES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** Methods that may be sent twice (RFC 9110 §9.2.2) and carry no body here. */
const RETRIABLE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Whether a failed exchange may be sent again: the first try went out on a
 * reused keep-alive socket that the upstream reset or closed before any
 * response byte, the request has no body, and its method is idempotent.
 */
function retriable(exchange: Exchange, code: string): boolean {
  return (
    !exchange.retried &&
    (code === 'ECONNRESET' || code === 'EPIPE') &&
    exchange.proxyRes === null &&
    !exchange.res.headersSent &&
    !exchange.hasBody &&
    (exchange.proxyReq as (http.ClientRequest & { reusedSocket?: boolean }) | null)?.reusedSocket === true &&
    RETRIABLE_METHODS.has(exchange.req.method ?? '')
  );
}

function unmapIpv4(ip: string): string {
  return ip.startsWith('::ffff:') && ip.indexOf('.') > 0 ? ip.slice(7) : ip;
}

function rewriteFor(
  hooks: DataPlaneHooks,
  ctx: RequestContext,
  req: IncomingMessage,
  status: number,
  headers: IncomingHttpHeaders,
): ((body: Buffer) => Buffer) | null {
  if (hooks.rewriteBody === undefined) return null;
  try {
    return hooks.rewriteBody(ctx, req, status, headers);
  } catch {
    return null;
  }
}

/** The rewritten body, or the original when the rewrite throws (a page never breaks). */
function applyRewrite(rewrite: (body: Buffer) => Buffer, body: Buffer): Buffer {
  try {
    return rewrite(body);
  } catch {
    return body;
  }
}

function transformFor(
  hooks: DataPlaneHooks,
  ctx: RequestContext,
  req: IncomingMessage,
  status: number,
  headers: IncomingHttpHeaders,
): Transform | null {
  if (hooks.transformResponse === undefined) return null;
  try {
    return hooks.transformResponse(ctx, req, status, headers);
  } catch {
    return null;
  }
}

/**
 * The one web pass: sends the request upstream on the member's keep-alive
 * agent. Returns true so no other pass runs.
 */
function forwardPass(req: IncomingMessage, _res: ServerResponse, options: { exchange: Exchange }): boolean {
  const exchange = options.exchange;
  const { member } = exchange;
  const address = member.address;
  const proxyReq = (member.target.protocol === 'https:' ? https : http).request({
    agent: member.agent,
    host: address.host,
    port: address.port,
    method: req.method,
    path: exchange.options.path,
    headers: exchange.headers,
  });
  exchange.proxyReq = proxyReq;
  (proxyReq as Emitter & http.ClientRequest)[kExchange] = exchange;
  (exchange.res as Emitter & ServerResponse)[kExchange] = exchange;
  proxyReq.on('response', onUpstreamResponse);
  proxyReq.on('error', onUpstreamError);
  const res = exchange.res as Emitter & ServerResponse & { [kCloseOwned]?: boolean };
  if (res[kCloseOwned] !== true) res.on('close', onClientClose);
  if (!exchange.hasBody) {
    // No body (the common GET): end now instead of piping an empty stream;
    // Node dumps the unread request when the response finishes.
    proxyReq.end();
  } else {
    // The client waits for `100 Continue` before sending its body: the
    // access checks have passed, so ask for it now (Expect is not forwarded).
    if (req.headers.expect !== undefined && !exchange.res.headersSent) exchange.res.writeContinue();
    req.pipe(proxyReq);
  }
  return true;
}

function onUpstreamError(this: Emitter & http.ClientRequest, err: NodeJS.ErrnoException): void {
  const exchange = this[kExchange];
  if (exchange !== undefined) exchange.forwarder.fail(exchange, err);
}

/** The client went away: abort the upstream request so its socket is destroyed, not leaked. */
function onClientClose(this: Emitter & ServerResponse): void {
  closeExchange(this);
}

function closeExchange(res: Emitter & ServerResponse): void {
  const exchange = res[kExchange];
  if (exchange === undefined) return;
  if (!res.writableFinished) {
    exchange.aborted = true;
    exchange.proxyReq?.destroy();
  }
  release(exchange);
}

closeSlot.onClose = closeExchange as (res: object) => void;

function release(exchange: Exchange): void {
  if (!exchange.released) {
    exchange.released = true;
    exchange.member.active--;
  }
}

function onUpstreamResponse(this: Emitter & http.ClientRequest, proxyRes: IncomingMessage): void {
  const exchange = this[kExchange];
  if (exchange === undefined) return;
  const { res, req, ctx, options } = exchange;
  if (exchange.aborted || res.destroyed) {
    proxyRes.resume();
    return;
  }
  exchange.proxyRes = proxyRes;
  const status = proxyRes.statusCode ?? 502;
  const headers = responseHeaders(proxyRes.rawHeaders, proxyRes.socket);
  // Node emits 'error' (after 'aborted') when the upstream resets mid-body.
  proxyRes.on('error', onUpstreamBodyError);
  const cache = exchange.cache;
  if (cache !== null) {
    const lifetime = cacheLifetimeMs(status, headers, cache.ttlMs);
    if (lifetime > 0) collectForCache(exchange, cache, proxyRes, { ...headers }, status, lifetime);
    headers['x-cache'] = 'MISS';
  }
  options.editResponseHeaders?.(headers, status);
  const hooks = exchange.forwarder.hooks;
  if (hooks.rewriteBody !== undefined) {
    const declared = headers['content-length'];
    if (declared !== undefined && Number(declared) <= SMALL_BODY_BYTES) {
      const rewrite = rewriteFor(hooks, ctx, req, status, headers);
      if (rewrite !== null) {
        rewriteWhole(exchange, proxyRes, status, headers, rewrite);
        return;
      }
    }
  }
  const transform = transformFor(hooks, ctx, req, status, headers);
  res.writeHead(status, headers);
  if (transform !== null) {
    (transform as Emitter & Transform)[kExchange] = exchange;
    transform.on('error', destroyPipedTarget);
    proxyRes.pipe(transform).pipe(res);
  } else {
    // A two-listener pump instead of pipe() (which adds seven listeners and
    // removes them again); backpressure through 'drain'.
    proxyRes.on('data', pumpData);
    proxyRes.on('end', pumpEnd);
  }
}

/** A small upstream body being collected for `DataPlaneHooks.rewriteBody`. */
class WholeBody {
  readonly chunks: Buffer[] = [];

  constructor(
    readonly status: number,
    readonly headers: IncomingHttpHeaders,
    readonly rewrite: (body: Buffer) => Buffer,
  ) {}
}

/**
 * Collects a small upstream body (its Content-Length is at most
 * {@link SMALL_BODY_BYTES}), rewrites it whole and sends head and body in
 * one write with the new Content-Length. Listeners are module functions (no
 * closure per response) that reach the state through the exchange, as the
 * pump does, so no property is added to Node's IncomingMessage. A one-chunk
 * body is not copied before the rewrite.
 */
function rewriteWhole(
  exchange: Exchange,
  proxyRes: IncomingMessage,
  status: number,
  headers: IncomingHttpHeaders,
  rewrite: (body: Buffer) => Buffer,
): void {
  exchange.whole = new WholeBody(status, headers, rewrite);
  proxyRes.on('data', collectWholeBody);
  proxyRes.on('end', sendWholeBody);
}

function collectWholeBody(this: IncomingMessage & { req?: Emitter }, chunk: Buffer): void {
  this.req?.[kExchange]?.whole?.chunks.push(chunk);
}

function sendWholeBody(this: IncomingMessage & { req?: Emitter }): void {
  const exchange = this.req?.[kExchange];
  const whole = exchange?.whole;
  if (exchange === undefined || !whole) return;
  const { headers } = whole;
  const res = exchange.res;
  if (exchange.aborted || res.destroyed) return;
  // A small body usually comes in one chunk: rewritten as it is, not copied first.
  const chunks = whole.chunks;
  const body = applyRewrite(whole.rewrite, chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
  headers['content-length'] = String(body.length);
  res.writeHead(whole.status, headers);
  res.end(body);
}

function pumpData(this: IncomingMessage & { req?: Emitter }, chunk: Buffer): void {
  const exchange = this.req?.[kExchange];
  if (exchange === undefined) return;
  const res = exchange.res;
  if (res.destroyed) return;
  if (!res.write(chunk)) {
    this.pause();
    if (!exchange.drainHooked) {
      exchange.drainHooked = true;
      res.on('drain', resumeUpstream);
    }
  }
}

function resumeUpstream(this: Emitter & ServerResponse): void {
  this[kExchange]?.proxyRes?.resume();
}

function pumpEnd(this: IncomingMessage & { req?: Emitter }): void {
  const exchange = this.req?.[kExchange];
  if (exchange !== undefined && !exchange.res.destroyed) exchange.res.end();
}

/** The upstream reset mid-body: the client's response cannot be completed, so it is destroyed. */
function onUpstreamBodyError(this: IncomingMessage & { req?: Emitter }): void {
  // A client-side IncomingMessage keeps its ClientRequest in `req`.
  const exchange = this.req?.[kExchange];
  if (exchange !== undefined && !exchange.res.writableFinished) exchange.res.destroy();
}

function destroyPipedTarget(this: Emitter & Transform): void {
  this[kExchange]?.res.destroy();
}

/**
 * Buffers an upstream body for the cache while it streams to the client.
 * Not stored: a body over the cache's entry limit (declared or counted), a
 * key another response is already filling, a fill that would take the bytes
 * buffered by all fills past `max_size`, an incomplete body, or a response
 * the upstream's `Age` already made stale.
 */
function collectForCache(
  exchange: Exchange,
  cache: ResponseCache,
  proxyRes: IncomingMessage,
  headers: IncomingHttpHeaders,
  status: number,
  lifetimeMs: number,
): void {
  const declared = Number(headers['content-length'] ?? 0);
  const ageHeader = Number.parseInt(String(headers.age ?? '0'), 10);
  const age = Number.isFinite(ageHeader) && ageHeader > 0 ? ageHeader : 0;
  const freshMs = lifetimeMs - age * 1000;
  const key = exchange.cacheKey;
  if (declared > cache.maxEntryBytes || freshMs <= 0 || !cache.beginFill(key)) return;
  const chunks: Buffer[] = [];
  let bytes = 0;
  let abandoned = false;
  const abandon = () => {
    abandoned = true;
    chunks.length = 0;
  };
  proxyRes.on('data', (chunk: Buffer) => {
    if (abandoned) return;
    if (bytes + chunk.length > cache.maxEntryBytes || !cache.reserveFill(chunk.length)) {
      abandon();
      return;
    }
    bytes += chunk.length;
    chunks.push(chunk);
  });
  proxyRes.on('end', () => {
    if (abandoned || !proxyRes.complete) return;
    const body = Buffer.concat(chunks, bytes);
    headers['content-length'] = String(body.length);
    const now = Date.now();
    delete headers.age;
    cache.set(key, {
      status,
      headers,
      body,
      storedAt: now,
      baseAge: age,
      expiresAt: now + freshMs,
      size: entrySize(headers, body, key),
    });
  });
  proxyRes.on('close', () => {
    abandon();
    cache.endFill(key, bytes);
  });
}

/**
 * http-proxy-3's WebSocket pass never aborts its upstream request when the
 * client goes away before the upgrade (or while an upstream that answered
 * with plain HTTP streams its body): destroy it with the client socket, so
 * its upstream socket is not leaked. After an upgrade the request is
 * already finished and this does nothing.
 */
function onProxyReqWs(proxyReq: http.ClientRequest, _req: IncomingMessage, socket: Duplex): void {
  socket.once('close', () => proxyReq.destroy());
}

/** http-proxy-3's `error` event (WebSocket path): close the client socket or answer 502. */
function onProxyError(_err: Error, _req: IncomingMessage, target: ServerResponse | Duplex): void {
  if (target instanceof http.ServerResponse) {
    if (target.headersSent) target.destroy();
    else target.writeHead(502, { 'content-type': TEXT }).end('bad gateway\n');
    return;
  }
  if (!target.destroyed) {
    target.end('HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    target.destroy();
  }
}
