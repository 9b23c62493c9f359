import { hasNonAscii, nonAsciiProblem } from '../domain.js';
import type { Endpoint } from '../endpoint.js';
import { AdminError } from '../errors.js';
import { CacheNotFound, CachePurged, CachePurgeParams } from '../schemas.js';

const PREFIX = '/cache/';

/**
 * The cache key of a purge URL, from the raw request target (not
 * percent-decoded, query string kept): `/cache/<host>/<path>` → `<host>/<path>`
 * with the host lowercased and exactly one `/` added when the path lacks it.
 * A host with a character outside ASCII is `ADMIN_INVALID_DOMAIN`, checked
 * before lowercasing.
 */
export function cacheKeyOf(rawUrl: string): string {
  const rest = rawUrl.startsWith(PREFIX) ? rawUrl.slice(PREFIX.length) : '';
  const slash = rest.indexOf('/');
  const host = slash < 0 ? rest : rest.slice(0, slash);
  const path = slash < 0 ? '' : rest.slice(slash + 1);
  if (host.length === 0 || host.startsWith('?')) throw new AdminError('ADMIN_INVALID_CACHE_KEY', 'empty host segment');
  if (path.length === 0 || path.startsWith('?')) {
    throw new AdminError('ADMIN_INVALID_CACHE_KEY', 'empty path segment (purge the root page with /cache/<host>//)');
  }
  if (hasNonAscii(host)) throw new AdminError('ADMIN_INVALID_DOMAIN', nonAsciiProblem(host));
  return `${host.toLowerCase()}${path.startsWith('/') ? '' : '/'}${path}`;
}

/** `PURGE /cache/{host}/{path}`: invalidates one cache entry. */
export const purgeCache: Endpoint = {
  method: 'PURGE',
  path: '/cache/{host}/{path}',
  url: '/cache/*',
  operationId: 'purgeCache',
  summary: 'Purge one cache entry',
  description:
    'Invalidates the entry with key {host}/{path} (path beginning with "/"; a missing leading "/" is added, so /cache/h/p and /cache/h//p both purge "h/p"). The key uses the path as sent, not percent-decoded, with its query string. Audit action cache_purge, resource the key.',
  auth: true,
  openApiParams: CachePurgeParams,
  responses: {
    200: { description: 'Invalidated', schema: CachePurged },
    404: { description: 'The entry is not in the cache (not the error envelope)', schema: CacheNotFound },
  },
  errors: {
    400: 'invalid cache key (empty host or path segment), invalid domain (a host with a character outside ASCII)',
    501: 'cache not enabled',
  },
  handler: (ctx) => async (request, reply) => {
    const key = cacheKeyOf(request.raw.url ?? '');
    if (ctx.cache === undefined || !ctx.cache.enabled) throw new AdminError('ADMIN_CACHE_NOT_ENABLED');
    if (!(await ctx.cache.purge(key))) return reply.code(404).send({ purged: false, reason: 'not found' });
    ctx.audit('cache_purge', key);
    return { purged: true };
  },
};
