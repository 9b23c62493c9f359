import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Transform } from 'node:stream';
import type { Site } from './model/index.js';

/** What the data plane knows about a request once its route is matched. */
export interface RequestContext {
  /** The matched route's domain (lowercase; may be a `*.x` wildcard pattern). */
  readonly domain: string;
  /** The request's host, lowercase, without port. */
  readonly host: string;
  /** Path without the query string. */
  readonly path: string;
  /** The real client IP (after `trusted_proxies`). */
  readonly clientIp: string;
  /** Whether the client connection is TLS. */
  readonly secure: boolean;
  /** The site behaviour of the matched route. */
  readonly site: Site;
}

/** One finished request, handed to {@link DataPlaneHooks.onRequest}. */
export interface RequestRecord {
  /** Lowercase host without port (the analytics domain). */
  readonly host: string;
  /** The matched route's domain, or null when no route matched. */
  readonly domain: string | null;
  /** Whether the matched site has analytics on (`analytics off` → false; false when no route matched). */
  readonly analytics: boolean;
  readonly method: string;
  /** Path without the query string. */
  readonly path: string;
  /** Status sent to the client (0 when the client went away before headers). */
  readonly status: number;
  /** Body bytes actually written to the client. */
  readonly bytesSent: number;
  /** Time from request start to the last byte, ms. */
  readonly durationMs: number;
  readonly clientIp: string;
  readonly referer: string | undefined;
  readonly userAgent: string | undefined;
  /** The response's Content-Type, if any. */
  readonly contentType: string | undefined;
  /** When the request started, ms since the epoch. */
  readonly startedAt: number;
}

/**
 * Extension points of the data plane. Every hook runs on the hot path: O(1),
 * never throws (the data plane catches and ignores a throw), never blocks.
 */
export interface DataPlaneHooks {
  /** Called once per finished request, routed or not. */
  onRequest?(record: RequestRecord): void;
  /**
   * May answer a request itself before the site's middleware runs (e.g.
   * analytics' reserved `/_proxyd/*` paths). Returns true when it answered.
   */
  intercept?(req: IncomingMessage, res: ServerResponse, ctx: RequestContext): boolean;
  /**
   * Returns a transform for a response body (e.g. HTML script injection), or
   * null to pass it through untouched. `headers` may be edited in place
   * (e.g. drop Content-Length) before they are written.
   */
  transformResponse?(
    ctx: RequestContext,
    req: IncomingMessage,
    status: number,
    headers: OutgoingHttpHeaders,
  ): Transform | null;
  /**
   * The whole-body form of `transformResponse`, for small bodies: asked
   * first when the response's size is known and at most
   * {@link SMALL_BODY_BYTES} (an upstream's Content-Length, a cached
   * entry). A function returned gets the whole body once it has arrived;
   * its result goes out with an exact Content-Length in one write, with no
   * stream in between. A throwing function sends the original body. Null:
   * `transformResponse` decides. `headers` may be edited in place.
   */
  rewriteBody?(
    ctx: RequestContext,
    req: IncomingMessage,
    status: number,
    headers: OutgoingHttpHeaders,
  ): ((body: Buffer) => Buffer) | null;
}

/** The largest body `DataPlaneHooks.rewriteBody` is offered: 64 KiB. */
export const SMALL_BODY_BYTES = 64 * 1024;
