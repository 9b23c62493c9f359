import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Transform } from 'node:stream';
import type { RequestRecord, Site } from '@proxyd/model';
import { RequestEvent } from '@proxyd/model/rules';
import { kEvents } from './slots.js';

// The request record and its event bits are the model's (the data plane hands them to telemetry and
// analytics, which do not load this package); re-exported for this package's users.
export { RequestEvent, type RequestRecord };

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
   * A path prefix outside of which `intercept` never answers (analytics:
   * `/_proxyd/`): requests elsewhere may skip it (the HTTP/1.1 fast path).
   * Absent: every request is offered to `intercept`.
   */
  interceptPrefix?: string;
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

type HookName = Exclude<keyof DataPlaneHooks, 'interceptPrefix'>;

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
  // One prefix when every set that intercepts declares the same one; else none (every path is offered).
  const prefixes = sets.filter((set) => set.intercept !== undefined).map((set) => set.interceptPrefix);
  const prefix = prefixes[0];
  if (prefix !== undefined && prefixes.every((p) => p === prefix)) composed.interceptPrefix = prefix;
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
