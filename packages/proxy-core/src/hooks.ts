import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Transform } from 'node:stream';
import type { Site } from '@proxyd/model';
import { kEvents } from './slots.js';

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
  /**
   * The request target's query string, without the `?`, as the client sent
   * it (before any rewrite); undefined without one. Set by the data plane
   * for routed requests; absent reads as none.
   */
  readonly query?: string | undefined;
  /** Status sent to the client (0 when the client went away before headers). */
  readonly status: number;
  /** Body bytes actually written to the client. */
  readonly bytesSent: number;
  /**
   * Request body bytes as its `Content-Length` declares them (0 without
   * one, a chunked body included: counting it would mean reading it).
   * Always set by the data plane; absent reads as 0.
   */
  readonly bytesReceived?: number;
  /** Time from request start to the response's close, ms, by the monotonic clock (`performance.now()`). */
  readonly durationMs: number;
  readonly clientIp: string;
  readonly referer: string | undefined;
  readonly userAgent: string | undefined;
  /** The response's Content-Type, if any. */
  readonly contentType: string | undefined;
  /** When the request started, ms since the epoch. */
  readonly startedAt: number;
  /**
   * The client's protocol: `h1` (HTTP/1.x) or `h2` (HTTP/2, on the HTTPS
   * listeners). Always set by the data plane; optional for records built
   * elsewhere (absent reads as `h1`).
   */
  readonly protocol?: 'h1' | 'h2';
  /**
   * What the data plane did to the request, as {@link RequestEvent} bits
   * (0: none). Always set by the data plane; absent reads as 0.
   */
  readonly events?: number;
}

/**
 * The bits of {@link RequestRecord.events}: what the site's steps and the
 * hooks did to a request, so that one record carries it to the metrics.
 */
export const RequestEvent = Object.freeze({
  /** Answered from the site's cache (`X-Cache: HIT`). */
  CacheHit: 1,
  /** A cacheable request the cache did not hold, forwarded (`X-Cache: MISS`). */
  CacheMiss: 2,
  /** Refused by the site's `rate_limit` (429). */
  RateLimited: 4,
  /** `under_attack`: answered with the challenge page. */
  ChallengeIssued: 8,
  /** `under_attack`: a solution accepted, the clearance cookie set. */
  ChallengePassed: 16,
  /** `under_attack`: a solution refused (wrong, expired, or for another client). */
  ChallengeFailed: 32,
  /** Analytics: a beacon counted. */
  BeaconAccepted: 64,
  /** Analytics: a beacon refused (method, rate, size, syntax or token). */
  BeaconRejected: 128,
});

/**
 * Adds `event` (a {@link RequestEvent} bit) to the record of the request
 * `res` answers. O(1), no allocation; a response the data plane does not
 * record keeps the bit unread.
 */
export function markRequest(res: ServerResponse, event: number): void {
  const marked = res as ServerResponse & { [kEvents]?: number };
  marked[kEvents] = (marked[kEvents] ?? 0) | event;
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

type HookName = keyof DataPlaneHooks;

/** The hooks of kind `name` of every set that has one, bound to their set, in order. */
function hooksOf<K extends HookName>(sets: readonly DataPlaneHooks[], name: K): NonNullable<DataPlaneHooks[K]>[] {
  const found: NonNullable<DataPlaneHooks[K]>[] = [];
  for (const set of sets) {
    const hook = set[name];
    if (hook !== undefined)
      found.push((hook as (...args: never[]) => unknown).bind(set) as NonNullable<DataPlaneHooks[K]>);
  }
  return found;
}

/**
 * One set of hooks made of several, composed once (at start, not per
 * request). Each kind composes as follows, the sets taken in argument order:
 *
 * - `onRequest`: every set's hook is called with the same record; one that
 *   throws does not keep the later ones from being called.
 * - `intercept`: asked in turn until one answers (returns true); a throw
 *   counts as not answering.
 * - `rewriteBody`, `transformResponse`: the first set whose hook returns a
 *   non-null function (or stream) decides, the later ones are not asked;
 *   a throw counts as null. (`rewriteBody` of every set is asked before any
 *   `transformResponse`, as the data plane asks one set.)
 *
 * A kind that only one set has is that set's own function (bound to it),
 * so composing costs nothing per request then; a kind no set has stays
 * absent, and the data plane skips it as before.
 */
export function composeHooks(...sets: DataPlaneHooks[]): DataPlaneHooks {
  const composed: DataPlaneHooks = {};
  const onRequest = hooksOf(sets, 'onRequest');
  if (onRequest.length === 1) composed.onRequest = onRequest[0] as NonNullable<DataPlaneHooks['onRequest']>;
  else if (onRequest.length > 1) {
    composed.onRequest = (record) => {
      for (let i = 0; i < onRequest.length; i++) {
        try {
          (onRequest[i] as NonNullable<DataPlaneHooks['onRequest']>)(record);
        } catch {
          // A throwing hook is ignored (the DataPlaneHooks contract); the next still runs.
        }
      }
    };
  }
  const intercept = hooksOf(sets, 'intercept');
  if (intercept.length === 1) composed.intercept = intercept[0] as NonNullable<DataPlaneHooks['intercept']>;
  else if (intercept.length > 1) {
    composed.intercept = (req, res, ctx) => {
      for (let i = 0; i < intercept.length; i++) {
        try {
          if ((intercept[i] as NonNullable<DataPlaneHooks['intercept']>)(req, res, ctx)) return true;
        } catch {
          // Not answered: the next hook is asked.
        }
      }
      return false;
    };
  }
  const rewrite = hooksOf(sets, 'rewriteBody');
  if (rewrite.length === 1) composed.rewriteBody = rewrite[0] as NonNullable<DataPlaneHooks['rewriteBody']>;
  else if (rewrite.length > 1) {
    composed.rewriteBody = (ctx, req, status, headers) => {
      for (let i = 0; i < rewrite.length; i++) {
        try {
          const fn = (rewrite[i] as NonNullable<DataPlaneHooks['rewriteBody']>)(ctx, req, status, headers);
          if (fn !== null) return fn;
        } catch {
          // Counts as null: the next hook is asked.
        }
      }
      return null;
    };
  }
  const transform = hooksOf(sets, 'transformResponse');
  if (transform.length === 1) {
    composed.transformResponse = transform[0] as NonNullable<DataPlaneHooks['transformResponse']>;
  } else if (transform.length > 1) {
    composed.transformResponse = (ctx, req, status, headers) => {
      for (let i = 0; i < transform.length; i++) {
        try {
          const stream = (transform[i] as NonNullable<DataPlaneHooks['transformResponse']>)(ctx, req, status, headers);
          if (stream !== null) return stream;
        } catch {
          // Counts as null: the next hook is asked.
        }
      }
      return null;
    };
  }
  return composed;
}
