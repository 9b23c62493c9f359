import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ReverseProxyHandler } from '@proxyd/model';
import { ProxyServer as HttpProxy } from 'http-proxy-3';
import { CacheRegistry } from '../cache/response-cache.js';
import type { ClientIpResolver } from '../client-ip.js';
import { FastUpstreams } from '../fast/upstream-conn.js';
import type { DataPlaneHooks, RequestContext } from '../hooks.js';
import type { Forwarder, ForwardOptions } from '../pipeline.js';
import { type HealthEvent, type HealthSharing, UpstreamPool } from '../pool/upstream-pool.js';
import { AgentPool } from './agents.js';
import { deliverBuffered } from './buffered-response.js';
import type { RetryPolicy, StreamTiming } from './exchange.js';
import { Exchange, TEXT } from './exchange.js';
import { forwardedFor } from './forwarded-headers.js';
import { forwardHttp2, Http2Upstreams } from './http2-upstream.js';
import { forwardPass } from './send.js';
import {
  buildUpstreamHeaders,
  requestHasBody,
  type UpstreamHeaderPlan,
  upstreamHeaderPlan,
} from './upstream-headers.js';
import { forwardUpgrade, onProxyError, onProxyReqWs } from './websocket.js';

/** Options of {@link HttpForwarder}. */
export interface HttpForwarderOptions {
  /** Data-plane hooks; `rewriteBody`/`transformResponse` are applied to every body delivered. */
  hooks?: DataPlaneHooks;
  /** Decides whether the peer's `X-Forwarded-*` headers are kept (trusted proxies) or replaced. */
  clientIp?: ClientIpResolver;
  /** Upstream connect timeout, ms (default 5000). Exceeded → 504. */
  connectTimeoutMs?: number;
  /** Upstream idle timeout (no byte while waiting for or reading the response), ms (default 60000). Exceeded → 504. */
  idleTimeoutMs?: number;
  /** Where the sites' `cache` steps keep their caches; default a new registry. */
  caches?: CacheRegistry;
  /** Upstream health shared with other processes (see `HealthSharing`); default: kept here. */
  health?: HealthSharing;
}

/** What the forwarder precomputes once per `reverse_proxy` handler object. */
interface CompiledHandler {
  readonly pool: UpstreamPool;
  readonly headers: UpstreamHeaderPlan;
  /** Its read and stream timeouts (null: the defaults). */
  readonly timing: StreamTiming | null;
  /** Its retry policy (null: none). */
  readonly retry: RetryPolicy | null;
  /** `versions h2c|2`: requests go as HTTP/2 streams. */
  readonly http2: boolean;
  /** Whether the HTTP/1.1 fast path may forward to it ({@link HttpForwarder.fastUpstream}). */
  readonly fast: boolean;
}

/** What the HTTP/1.1 fast path (`fast/`) forwards with: the handler's pool and upstream header plan. */
export interface FastUpstream {
  readonly pool: UpstreamPool;
  readonly headers: UpstreamHeaderPlan;
}

/** Whether the Cookie header already holds `name=value` (the client sticks to that member). */
function hasCookie(header: string | undefined, name: string, value: string): boolean {
  return header?.includes(`${name}=${value}`) === true;
}

/**
 * Forwards requests to `reverse_proxy` pools with http-proxy-3 on its native
 * (node:http) path. One lean web pass ({@link forwardPass}), put first with
 * the library's `before` hook, that reuses precomputed targets and agents and
 * allocates no closures per request; WebSockets use its own `ws` passes.
 *
 * Per request: pool pick (503 + Retry-After when no member is eligible) →
 * hop-by-hop headers dropped, `X-Forwarded-*` set, `header_up` applied →
 * streamed both ways (send.ts) → response hop-by-hop headers dropped → the
 * caller's observer → `editResponseHeaders` → `hooks.rewriteBody` or
 * `hooks.transformResponse` → written (response-pump.ts). Upstream errors:
 * connect failure 502 (the member leaves the rotation for `fail_duration`),
 * timeout 504; a bodyless idempotent request that met a reset on a reused
 * socket is sent once more (retry.ts).
 *
 * The response cache is a site step in front of this (cache/cache-step.ts):
 * the forwarder only holds the registry the steps share ({@link caches}).
 */
export class HttpForwarder implements Forwarder {
  /** The site caches (the admin API's `CachePort`: `{ enabled, purge }`); the forwarder never reads them. */
  readonly caches: CacheRegistry;
  readonly hooks: DataPlaneHooks;
  readonly #proxy: HttpProxy;
  readonly #agents: AgentPool;
  /** HTTP/2 sessions of handlers with `versions h2c|2`. */
  readonly #http2: Http2Upstreams;
  /** The upstream read timeout of handlers without their own, ms. */
  readonly #idleTimeoutMs: number;
  readonly #fastUpstreams: FastUpstreams;
  readonly #handlers = new Map<ReverseProxyHandler, CompiledHandler>();
  readonly #clientIp: ClientIpResolver | undefined;
  readonly #health: HealthSharing | undefined;
  /** The latest shared observation per upstream ({@link applyHealth}), for pools made after it. */
  readonly #healthSeen = new Map<string, HealthEvent>();

  constructor(options: HttpForwarderOptions = {}) {
    this.#health = options.health;
    this.hooks = options.hooks ?? {};
    this.#clientIp = options.clientIp;
    this.caches = options.caches ?? new CacheRegistry();
    this.#agents = new AgentPool({
      connectTimeoutMs: options.connectTimeoutMs ?? 5000,
      idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
    });
    this.#idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
    this.#fastUpstreams = new FastUpstreams(options.connectTimeoutMs ?? 5000, this.#idleTimeoutMs);
    this.#http2 = new Http2Upstreams(options.connectTimeoutMs ?? 5000);
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

  /**
   * Applies another process's observation of an upstream to every pool that
   * has it, and keeps the latest per upstream for pools made later.
   */
  applyHealth(event: HealthEvent): void {
    const known = this.#healthSeen.get(event.upstream);
    this.#healthSeen.set(event.upstream, {
      upstream: event.upstream,
      ...(event.healthy !== undefined
        ? { healthy: event.healthy }
        : known?.healthy !== undefined
          ? { healthy: known.healthy }
          : {}),
      downUntil: Math.max(event.downUntil ?? 0, known?.downUntil ?? 0),
    });
    for (const { pool } of this.#handlers.values()) pool.apply(event);
  }

  /**
   * Makes the handler's pool now instead of at its first request, so its
   * active health checks run from the start (called for handlers with a
   * `health_uri` when their route is published).
   */
  prepare(handler: ReverseProxyHandler): void {
    this.#compile(handler);
  }

  /**
   * The pool and header plan of a handler the HTTP/1.1 fast path may
   * forward to itself: plain-HTTP HTTP/1.1 members, no retry policy, no
   * read or stream timeout of its own, no cookie stickiness (`header_up`
   * placeholders are filled from the fast path's request as from node:http's).
   * Null: the handler needs {@link forward}.
   */
  fastUpstream(handler: ReverseProxyHandler): FastUpstream | null {
    const compiled = this.#compile(handler);
    return compiled.fast ? compiled : null;
  }

  /** The HTTP/1.1 fast path's upstream connections (same connect and idle timeouts as the agents'). */
  get fastUpstreams(): FastUpstreams {
    return this.#fastUpstreams;
  }

  /** Sockets held by the upstream agents, in use or idle (for leak tests and metrics). */
  upstreamSocketCount(): number {
    return this.#agents.socketCount() + this.#fastUpstreams.count();
  }

  /** Closes the pools of these handlers (gone from the table): what a route change dropped, O(changes). */
  release(handlers: Iterable<ReverseProxyHandler>): void {
    for (const handler of handlers) {
      const compiled = this.#handlers.get(handler);
      if (compiled === undefined) continue;
      compiled.pool.close();
      this.#handlers.delete(handler);
    }
  }

  /**
   * Keeps the pools of these handlers and closes the others (their health
   * checks stop). Called when the whole table is replaced.
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
    this.#fastUpstreams.closeAll();
    this.#http2.close();
  }

  forward(
    req: IncomingMessage,
    res: ServerResponse,
    ctx: RequestContext,
    handler: ReverseProxyHandler,
    options: ForwardOptions,
  ): void {
    const compiled = this.#compile(handler);
    const pool = compiled.pool;
    const member = pool.pick(ctx.clientIp, pool.sticky ? req.headers.cookie : undefined);
    if (member === null) {
      if (options.onError?.(503, 'no healthy upstream') === true) return;
      res.writeHead(503, { 'content-type': TEXT, 'retry-after': String(pool.retryAfterSeconds()) });
      res.end('no healthy upstream\n');
      return;
    }
    if (compiled.http2) {
      forwardHttp2(
        this.#http2,
        pool,
        member,
        handler,
        compiled.headers,
        forwardedFor(req, ctx, this.#clientIp),
        req,
        res,
        ctx,
        options,
        handler.read_timeout_ms ?? this.#idleTimeoutMs,
      );
      return;
    }
    member.active++;
    const exchange = new Exchange(
      req,
      res,
      ctx,
      options,
      pool,
      member,
      this.hooks,
      buildUpstreamHeaders(req, forwardedFor(req, ctx, this.#clientIp), compiled.headers, ctx),
      requestHasBody(req),
      options.observer ?? null,
    );
    exchange.timing = compiled.timing;
    const retry = compiled.retry;
    if (retry !== null) {
      exchange.retry = retry;
      if (retry.durationMs > 0) exchange.deadline = Date.now() + retry.durationMs;
    }
    if (pool.sticky && !hasCookie(req.headers.cookie, pool.cookieName, member.sticky)) {
      exchange.setCookie = pool.stickyCookie(member);
    }
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
    const forwarded = forwardedFor(req, ctx, this.#clientIp);
    forwardUpgrade(this.#proxy, req, socket, head, member, handler, compiled.headers, forwarded, ctx);
  }

  deliver(
    req: IncomingMessage,
    res: ServerResponse,
    ctx: RequestContext,
    options: ForwardOptions,
    status: number,
    headers: IncomingHttpHeaders,
    body: Buffer,
  ): void {
    deliverBuffered(this.hooks, req, res, ctx, options, status, headers, body);
  }

  #compile(handler: ReverseProxyHandler): CompiledHandler {
    let compiled = this.#handlers.get(handler);
    if (compiled === undefined) {
      const agents = this.#agents;
      const headers = upstreamHeaderPlan(handler.header_up);
      const pool = new UpstreamPool(handler, (address) => agents.agentFor(address, handler.tls), this.#health);
      const http2 = handler.versions?.some((v) => v === '2' || v === 'h2c') === true;
      compiled = {
        pool,
        headers,
        http2,
        fast:
          !http2 &&
          !pool.sticky &&
          (handler.lb_retries ?? 0) === 0 &&
          (handler.lb_try_duration_ms ?? 0) === 0 &&
          handler.read_timeout_ms === undefined &&
          handler.stream_timeout_ms === undefined &&
          handler.flush_interval_ms !== -1 &&
          pool.members.every((m) => m.target.protocol === 'http:'),
        retry:
          (handler.lb_retries ?? 0) > 0 || (handler.lb_try_duration_ms ?? 0) > 0
            ? {
                retries: handler.lb_retries ?? null,
                durationMs: handler.lb_try_duration_ms ?? 0,
                intervalMs: handler.lb_try_interval_ms ?? 250,
              }
            : null,
        timing:
          handler.read_timeout_ms === undefined &&
          handler.stream_timeout_ms === undefined &&
          handler.flush_interval_ms !== -1
            ? null
            : {
                readTimeoutMs: handler.read_timeout_ms ?? null,
                streamAll: handler.flush_interval_ms === -1,
                streamTimeoutMs: handler.stream_timeout_ms ?? 0,
              },
      };
      for (const member of compiled.pool.members) {
        const seen = this.#healthSeen.get(member.label);
        if (seen !== undefined) compiled.pool.apply(seen);
      }
      this.#handlers.set(handler, compiled);
    }
    return compiled;
  }
}
