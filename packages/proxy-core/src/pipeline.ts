import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { RequestContext } from './hooks.js';
import type { ReverseProxyHandler } from './model/index.js';

/**
 * The seam between request routing/forwarding (proxy-server, forward/, pool/,
 * cache/) and the site middleware (middleware/, site-handler.ts).
 *
 * Flow: ProxyServer matches the host → builds the RequestContext (real client
 * IP) → runs `hooks.intercept` → calls the route's `CompiledSite.handle`. The
 * site runs its middleware in the documented order and, for `reverse_proxy`,
 * calls `Forwarder.forward`, which owns pools, health, caching, the response
 * transform hook and error statuses (502/503/504).
 */
export interface ForwardOptions {
  /** Path (with query) sent upstream; differs from req.url after `handle_path` strips a prefix. */
  path: string;
  /**
   * Edits the response headers (upstream's, or a cached copy's) just before
   * they are written to the client: security headers and `header` ops.
   */
  editResponseHeaders?: (headers: OutgoingHttpHeaders, status: number) => void;
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
}
