import { hasNonAscii, MAX_DOMAIN_BYTES, nonAsciiProblem } from '../domain.js';
import type { Endpoint } from '../endpoint.js';
import { AdminError } from '../errors.js';
import { DomainParams, RouteDeleted } from '../schemas.js';

/**
 * A path whose domain segment is empty but followed by another `/`
 * (`/routes//`, `/routes//x`). The router does not match it to
 * `/routes/:domain`; the app answers it like `/routes/` (DELETE: 400
 * `missing domain`; other methods: 405, `Allow: DELETE`).
 */
export const EMPTY_DOMAIN_PATH = /^\/routes\/\//;

/** `DELETE /routes/{domain}`: removes one route. */
export const deleteRoute: Endpoint = {
  method: 'DELETE',
  path: '/routes/{domain}',
  url: '/routes/:domain',
  tag: 'routes',
  operationId: 'deleteRoute',
  summary: 'Delete a route',
  description:
    'Removes the route of a domain (matched case-insensitively). An empty segment (/routes/, /routes//) is 400 missing domain. The segment is percent-decoded, then measured in UTF-8 bytes before any lowercasing: over 253 bytes is 414; a character outside ASCII is 400 invalid domain (so U+212A KELVIN SIGN never lowercases to "k"). Answers once the change is durable (one line of the route journal) and every data-plane worker routes it; a worker that has not confirmed within 2 s applies it in order when it catches up, and the answer does not wait for it (the change is saved). Audit action route_delete.',
  auth: true,
  params: DomainParams,
  responses: { 200: { description: 'Deleted', schema: RouteDeleted } },
  errors: {
    400: 'missing domain (empty segment), invalid domain (a character outside ASCII), invalid URL (malformed percent-encoding), invalid JSON (an invalid Content-Type header)',
    404: 'route not found',
    414: 'domain segment too long (over 253 bytes)',
    500: 'internal error: the route store could not write its journal (nothing of the write was applied; retrying is safe), never because a worker is slow',
    503: "storage unavailable: with `storage redis`, Redis does not answer (`storage unavailable: redis is unreachable (<error>); the write was not applied`); nothing of the write was applied on any node; `Retry-After: 2`. GET /routes still answers from this node's copy",
  },
  handler: (ctx) => async (request) => {
    const raw = (request.params as DomainParams).domain;
    if (raw.length === 0) throw new AdminError('ADMIN_MISSING_DOMAIN');
    const bytes = Buffer.byteLength(raw, 'utf8');
    if (bytes > MAX_DOMAIN_BYTES) {
      throw new AdminError('ADMIN_DOMAIN_TOO_LONG', `${bytes} bytes, the maximum is ${MAX_DOMAIN_BYTES}`);
    }
    // Before lowercasing: "\u212Aelvin.test".toLowerCase() is "kelvin.test" (issue 20).
    if (hasNonAscii(raw)) throw new AdminError('ADMIN_INVALID_DOMAIN', nonAsciiProblem(raw));
    const domain = raw.toLowerCase();
    if (!(await ctx.routes.remove(domain))) throw new AdminError('ADMIN_ROUTE_NOT_FOUND');
    ctx.audit('route_delete', domain);
    return { deleted: domain };
  },
};
