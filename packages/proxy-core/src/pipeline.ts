import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ReverseProxyHandler } from '@proxyd/model';
import type { CacheRegistry } from './cache/response-cache.js';
import type { RequestContext } from './hooks.js';
import type { BasicAuthenticator } from './middleware/basic-auth.js';
import type { ResponseEncoder } from './middleware/encode.js';
import type { HeaderPlan } from './middleware/header-plan.js';

/**
 * The seam between request routing/forwarding (proxy-server, forward/, pool/)
 * and the site steps (site/, site-handler.ts, middleware/, cache/).
 *
 * Flow: ProxyServer matches the host → builds the RequestContext (real client
 * IP) → runs `hooks.intercept` → calls the route's `CompiledSite.handle`. The
 * site walks its ordered steps (`SITE_STEP_ORDER`) and, for `reverse_proxy`,
 * the `cache` step answers a HIT through `Forwarder.deliver` or calls
 * `Forwarder.forward` with a {@link ResponseObserver} that fills the cache;
 * the forwarder owns pools, health, the response hooks and error statuses
 * (502/503/504).
 */
export interface ForwardOptions {
  /** Path (with query) sent upstream; differs from req.url after `handle_path` strips a prefix. */
  path: string;
  /**
   * Edits the response headers (upstream's, or a cached copy's) just before
   * they are written to the client: security headers and `header` ops.
   */
  editResponseHeaders?: (headers: OutgoingHttpHeaders, status: number) => void;
  /** Sees the upstream response before it is delivered (the cache step's fill); absent: none. */
  observer?: ResponseObserver;
  /**
   * `handle_errors`: may answer instead of the forwarder's own 502, 503 or
   * 504 (`status`, the forwarder's short `message`); true when it did.
   * Absent: the forwarder answers.
   */
  onError?: (status: number, message: string) => boolean;
}

/** Sees an upstream response once, before `editResponseHeaders` (e.g. to tee its body into a cache). */
export interface ResponseObserver {
  /**
   * Called with the upstream response (its body not read yet: listeners
   * attached now see every chunk), its status and its headers (hop-by-hop
   * removed). `headers` is what the client will get: a copy must be taken
   * to keep them unedited; edits show in the response. Never throws.
   */
  onUpstreamResponse(upstream: IncomingMessage, status: number, headers: IncomingHttpHeaders): void;
}

/** Forwards one request to a reverse_proxy handler's pool. */
export interface Forwarder {
  forward(
    req: IncomingMessage,
    res: ServerResponse,
    ctx: RequestContext,
    handler: ReverseProxyHandler,
    options: ForwardOptions,
  ): void;
  /**
   * Forwards a WebSocket (HTTP Upgrade) request to the handler's pool; the
   * client socket is closed with 503/502 when no member is eligible or reachable.
   */
  upgrade?(req: IncomingMessage, socket: Duplex, head: Buffer, ctx: RequestContext, handler: ReverseProxyHandler): void;
  /**
   * Answers with a response held whole in memory (a cache HIT) through the
   * forwarder's response path: `editResponseHeaders`, then the body hooks
   * (`rewriteBody`, `transformResponse`). `headers` is edited in place.
   * Absent: sites answer nothing from memory (the `cache` step is skipped).
   */
  deliver?(
    req: IncomingMessage,
    res: ServerResponse,
    ctx: RequestContext,
    options: ForwardOptions,
    status: number,
    headers: IncomingHttpHeaders,
    body: Buffer,
  ): void;
  /** Where the sites' `cache` steps keep their caches (absent: the step is skipped). */
  readonly caches?: CacheRegistry;
}

/** A site compiled once per Site object (shared by all its domains). */
export interface CompiledSite {
  /** Answers the request: middleware, then the terminal handler. Never throws. */
  handle(req: IncomingMessage, res: ServerResponse, ctx: RequestContext): void;
  /**
   * Answers an HTTP Upgrade (WebSocket) request: access checks, then
   * `Forwarder.upgrade`. Absent: the server forwards upgrades only for sites
   * whose top-level handler is `reverse_proxy` and that have no `basic_auth`
   * and no `under_attack`; other upgrades get 403.
   */
  upgrade?(req: IncomingMessage, socket: Duplex, head: Buffer, ctx: RequestContext): void;
  /** Releases timers (rate-limit sweepers, health checks owned by the site). */
  close?(): void;
  /**
   * Set when every request of the site goes straight to one
   * `reverse_proxy`, `encode`, `basic_auth` and `header` ops
   * (placeholders and matchers included) or not (no `forward_auth`,
   * rewrite, redirect, cache, rate limit, under_attack, `handle`,
   * `… @name` handlers, `handle_errors`): the
   * HTTP/1.1 fast path (`fast/`) may then serve its requests without
   * running {@link handle}. Absent: the site always goes through `handle`.
   */
  readonly fast?: FastPlan;
}

/** What the HTTP/1.1 fast path needs of a site it may serve (see {@link CompiledSite.fast}). */
export interface FastPlan {
  readonly handler: ReverseProxyHandler;
  /** The response header edit over plain HTTP and over TLS (the site's `header` ops and defaults). */
  readonly plain: (headers: OutgoingHttpHeaders, status: number) => void;
  readonly secure: (headers: OutgoingHttpHeaders, status: number) => void;
  /** A plan whose ops hold placeholders or matchers (`HeaderPlan.dynamic`): its edit is built per request; null: {@link plain} / {@link secure}. */
  readonly dynamic: HeaderPlan | null;
  /**
   * The site's `basic_auth` (null: none): the fast path serves a request
   * whose credentials it remembers (`BasicAuthenticator.remembered`) and
   * hands any other to node:http, which answers the 401, the 503 of a full
   * bcrypt gate, or verifies.
   */
  readonly auth: BasicAuthenticator | null;
  /** The site's `encode` (null: none), applied to every answer as the node:http path's `encode` step. */
  readonly encoder: ResponseEncoder | null;
}
