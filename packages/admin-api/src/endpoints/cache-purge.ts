import { hasNonAscii, nonAsciiProblem } from '../domain.js';
import type { Endpoint } from '../endpoint.js';
import { AdminError } from '../errors.js';
import { CacheNotFound, CachePurged, CachePurgeParams } from '../schemas.js';

const PREFIX = '/cache/';

function keyOf(host: string, path: string): string {
  // Before lowercasing: "\u212Aelvin.test".toLowerCase() is "kelvin.test" (issue 20).
  if (hasNonAscii(host)) throw new AdminError('ADMIN_INVALID_DOMAIN', nonAsciiProblem(host));
  return `${host.toLowerCase()}${path.startsWith('/') ? '' : '/'}${path}`;
}

function decoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/**
 * The cache keys a purge URL names, from the raw request target (query string
 * kept), in the order they are tried: `/cache/<host>/<path>` →
 * `<host>/<path>` as sent (not percent-decoded), host lowercased and exactly
 * one `/` added when the path lacks it — the data plane keys its entries by
 * the request target as sent; then, when it differs, the same with host and
 * path each percent-decoded once: what a generated client sends, since
 * OpenAPI clients percent-encode a path parameter (`a/b?v=1` becomes
 * `a%2Fb%3Fv%3D1`). A host with a character outside ASCII, as sent or
 * decoded, is `ADMIN_INVALID_DOMAIN`, checked before lowercasing.
 */
export function cacheKeysOf(rawUrl: string): string[] {
  const rest = rawUrl.startsWith(PREFIX) ? rawUrl.slice(PREFIX.length) : '';
  const slash = rest.indexOf('/');
  const host = slash < 0 ? rest : rest.slice(0, slash);
  const path = slash < 0 ? '' : rest.slice(slash + 1);
  if (host.length === 0 || host.startsWith('?')) throw new AdminError('ADMIN_INVALID_CACHE_KEY', 'empty host segment');
  if (path.length === 0 || path.startsWith('?')) {
    throw new AdminError('ADMIN_INVALID_CACHE_KEY', 'empty path segment (purge the root page with /cache/<host>//)');
  }
  const asSent = keyOf(host, path);
  const [decodedHost, decodedPath] = [decoded(host), decoded(path)];
  if (decodedHost === undefined || decodedPath === undefined) return [asSent];
  const decodedKey = keyOf(decodedHost, decodedPath);
  return decodedKey === asSent ? [asSent] : [asSent, decodedKey];
}

const DESCRIPTION =
  'Invalidates the entry with key {host}/{path} (path beginning with "/"; a missing leading "/" is added, so /cache/h/p and /cache/h//p both purge "h/p"). The key is first the path as sent, not percent-decoded, with its query string (the data plane keys entries by the request target as sent); when no entry has it, host and path percent-decoded once (what a generated client sends: it encodes "/" as %2F and "?" as %3F, so path "assets/app.js?v=2" arrives as assets%2Fapp.js%3Fv%3D2 and purges "host/assets/app.js?v=2"). Audit action cache_purge, resource the key purged.';

const handler: Endpoint['handler'] = (ctx) => async (request, reply) => {
  const keys = cacheKeysOf(request.raw.url ?? '');
  if (ctx.cache === undefined || !ctx.cache.enabled) throw new AdminError('ADMIN_CACHE_NOT_ENABLED');
  for (const key of keys) {
    if (await ctx.cache.purge(key)) {
      ctx.audit('cache_purge', key);
      return { purged: true };
    }
  }
  return reply.code(404).send({ purged: false, reason: 'not found' });
};

const responses: Endpoint['responses'] = {
  200: { description: 'Invalidated', schema: CachePurged },
  404: { description: 'The entry is not in the cache (not the error envelope)', schema: CacheNotFound },
};

const errors = {
  400: 'invalid cache key (empty host or path segment), invalid domain (a host with a character outside ASCII), invalid URL (malformed percent-encoding)',
  500: 'internal error: the cache failed to answer',
  501: 'cache not enabled',
};

/** `PURGE /cache/{host}/{path}`: invalidates one cache entry (spec §4). */
export const purgeCache: Endpoint = {
  method: 'PURGE',
  path: '/cache/{host}/{path}',
  url: '/cache/*',
  tag: 'cache',
  operationId: 'purgeCache',
  summary: 'Purge one cache entry',
  description: DESCRIPTION,
  auth: true,
  openApiParams: CachePurgeParams,
  responses,
  errors,
  handler,
};

/**
 * `DELETE /cache/{host}/{path}`: the same purge under a method OpenAPI 3.1
 * can declare, so that generated clients can call it (OpenAPI 3.1 path items
 * have no slot for PURGE). Same keys, statuses, bodies and audit event;
 * being a DELETE, its body is read (and ignored): over 64 KB is 413, an
 * invalid Content-Type header 400.
 */
export const deleteCacheEntry: Endpoint = {
  method: 'DELETE',
  path: '/cache/{host}/{path}',
  url: '/cache/*',
  tag: 'cache',
  operationId: 'deleteCacheEntry',
  summary: 'Purge one cache entry (DELETE alias of PURGE)',
  description: `The PURGE of this path under a method generated clients can send: same key, statuses, bodies and audit event. ${DESCRIPTION}`,
  auth: true,
  openApiParams: CachePurgeParams,
  responses,
  errors: {
    ...errors,
    400: `${errors[400]}, invalid JSON (an invalid Content-Type header)`,
    413: 'request body too large (over 64 KB)',
  },
  handler,
};
