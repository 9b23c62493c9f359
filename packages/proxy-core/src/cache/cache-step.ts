import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { ReverseProxyHandler } from '@proxyd/model';
import { markRequest, type RequestContext, RequestEvent } from '../hooks.js';
import { acceptsCoding } from '../middleware/encode-negotiate.js';
import type { Forwarder, ForwardOptions, ResponseObserver } from '../pipeline.js';
import {
  type CacheEntry,
  type CacheRegistry,
  cacheKeyFor,
  cacheLifetimeMs,
  entrySize,
  isCacheableRequest,
  RequestCacheMode,
  requestCacheMode,
  type SiteCache,
  STORED_CODINGS,
} from './response-cache.js';

/**
 * The site `cache` step, in front of `reverse_proxy`: a cacheable request
 * (see {@link isCacheableRequest}) is answered from the site's cache when a
 * fresh entry is there (`X-Cache: HIT`, `Age`, through
 * `Forwarder.deliver`), else forwarded with `X-Cache: MISS` and, for a GET
 * that may be stored, a {@link CacheFill} observing the upstream response.
 * Other requests, and sites without `cache`, go straight to the forwarder.
 */
export function forwardThroughCache(
  forwarder: Forwarder,
  caches: CacheRegistry,
  req: IncomingMessage,
  res: ServerResponse,
  ctx: RequestContext,
  handler: ReverseProxyHandler,
  options: ForwardOptions,
): void {
  const config = ctx.site.cache;
  if (config === null || !isCacheableRequest(req)) {
    forwarder.forward(req, res, ctx, handler, options);
    return;
  }
  const cache = caches.forSite(ctx.site, config);
  const key = ctx.host + (req.url ?? '/');
  const mode = requestCacheMode(req);
  if ((mode & RequestCacheMode.Refresh) === 0) {
    const entry = lookup(cache, key, req.headers['accept-encoding']);
    if (entry !== undefined && forwarder.deliver !== undefined) {
      const body = entry.body ?? cache.body(entry);
      if (body !== null && body !== undefined) {
        hit(forwarder, req, res, ctx, options, entry, body);
        return;
      }
      if (body === undefined) {
        // A big body of the node's shared cache, read asynchronously: a miss if its file is gone meanwhile.
        cache.readBody(entry, (read) => {
          if (read === null) forwardMiss(forwarder, cache, key, mode, req, res, ctx, handler, options);
          else hit(forwarder, req, res, ctx, options, entry, read);
        });
        return;
      }
    }
  }
  forwardMiss(forwarder, cache, key, mode, req, res, ctx, handler, options);
}

function hit(
  forwarder: Forwarder,
  req: IncomingMessage,
  res: ServerResponse,
  ctx: RequestContext,
  options: ForwardOptions,
  entry: CacheEntry,
  body: Buffer,
): void {
  markRequest(res, RequestEvent.CacheHit);
  forwarder.deliver?.(req, res, ctx, options, entry.status, hitHeaders(entry), body);
}

/** Forwards a request the cache did not answer (`X-Cache: MISS`), filling the cache when it may. */
function forwardMiss(
  forwarder: Forwarder,
  cache: SiteCache,
  key: string,
  mode: number,
  req: IncomingMessage,
  res: ServerResponse,
  ctx: RequestContext,
  handler: ReverseProxyHandler,
  options: ForwardOptions,
): void {
  res.setHeader('x-cache', 'MISS');
  markRequest(res, RequestEvent.CacheMiss);
  if (req.method !== 'GET' || (mode & RequestCacheMode.NoStore) !== 0) {
    forwarder.forward(req, res, ctx, handler, options);
    return;
  }
  forwarder.forward(req, res, ctx, handler, {
    path: options.path,
    ...(options.editResponseHeaders === undefined ? {} : { editResponseHeaders: options.editResponseHeaders }),
    ...(options.onError === undefined ? {} : { onError: options.onError }),
    observer: new CacheFill(cache, key),
  });
}

/**
 * The entry for a request: the identity one (which `encode` compresses for
 * the client), else one the upstream encoded in a coding the client
 * accepts, in {@link STORED_CODINGS} order.
 */
function lookup(cache: SiteCache, key: string, acceptEncoding: string | undefined): CacheEntry | undefined {
  const identity = cache.get(key);
  if (identity !== undefined || acceptEncoding === undefined) return identity;
  for (const coding of STORED_CODINGS) {
    if (!acceptsCoding(acceptEncoding, coding)) continue;
    const entry = cache.get(cacheKeyFor(key, coding));
    if (entry !== undefined) return entry;
  }
  return undefined;
}

/** A copy of a stored entry's headers with `Age` and `X-Cache: HIT`. */
function hitHeaders(entry: CacheEntry): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = { ...entry.headers };
  headers.age = String(entry.baseAge + Math.floor((Date.now() - entry.storedAt) / 1000));
  headers['x-cache'] = 'HIT';
  return headers;
}

/**
 * Tees an upstream body into the cache while it streams to the client.
 * Not stored: a response the cache rules refuse ({@link cacheLifetimeMs}),
 * a body over the cache's entry limit (declared or counted), a key another
 * response is already filling, a fill that would take the bytes buffered by
 * all fills past `max_size`, an incomplete body, or a response the
 * upstream's `Age` already made stale. An upstream-encoded body is stored
 * under its coding's key ({@link cacheKeyFor}).
 */
export class CacheFill implements ResponseObserver {
  constructor(
    readonly cache: SiteCache,
    readonly key: string,
  ) {}

  onUpstreamResponse(upstream: IncomingMessage, status: number, headers: IncomingHttpHeaders): void {
    const lifetime = cacheLifetimeMs(status, headers, this.cache.ttlMs);
    if (lifetime > 0) {
      const key = cacheKeyFor(this.key, headers['content-encoding']);
      collectForCache(this.cache, key, upstream, headers, status, lifetime);
    }
    headers['x-cache'] = 'MISS';
  }
}

function collectForCache(
  cache: SiteCache,
  key: string,
  proxyRes: IncomingMessage,
  upstreamHeaders: IncomingHttpHeaders,
  status: number,
  lifetimeMs: number,
): void {
  const declared = Number(upstreamHeaders['content-length'] ?? 0);
  const ageHeader = Number.parseInt(String(upstreamHeaders.age ?? '0'), 10);
  const age = Number.isFinite(ageHeader) && ageHeader > 0 ? ageHeader : 0;
  const freshMs = lifetimeMs - age * 1000;
  if (declared > cache.maxEntryBytes || freshMs <= 0 || !cache.beginFill(key)) return;
  // A copy before the site edits the response's headers; without `Age` (a
  // HIT computes its own), built without `delete`, which would turn the
  // stored object into a bigger dictionary-mode one.
  const headers: IncomingHttpHeaders = {};
  for (const name in upstreamHeaders) if (name !== 'age') headers[name] = upstreamHeaders[name];
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
    const body = ownedBody(chunks, bytes);
    headers['content-length'] = String(body.length);
    const now = Date.now();
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
 * The body as one buffer that owns its memory exactly. `Buffer.concat`
 * would put a body under 4 KiB in a slice of Node's shared 8 KiB pool slab,
 * which the entry then keeps alive whole, whatever else the slab held; a
 * chunk that is a view into a bigger buffer would keep that one alive. A
 * single chunk that already owns exactly its bytes is kept as it is.
 */
function ownedBody(chunks: readonly Buffer[], bytes: number): Buffer {
  const only = chunks.length === 1 ? (chunks[0] as Buffer) : null;
  if (only !== null && only.byteOffset === 0 && only.buffer.byteLength === bytes) return only;
  const body = Buffer.allocUnsafeSlow(bytes);
  let at = 0;
  for (const chunk of chunks) at += chunk.copy(body, at);
  return body;
}
