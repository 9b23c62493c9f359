/**
 * The key under which the data plane (proxy-core's `markRequest`) and the
 * analytics beacon mark what happened to a request on its response object:
 * `RequestEvent` bits, read into the request record when the response
 * closes. Defined once here, so analytics marks its beacons without
 * proxy-core's runtime; a registered symbol, so two copies of this module
 * (two installs of the package) still agree.
 */
export const REQUEST_EVENTS_KEY: unique symbol = Symbol.for('proxyd.requestEvents');

/** One finished request, handed to proxy-core's `DataPlaneHooks.onRequest`. */
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
