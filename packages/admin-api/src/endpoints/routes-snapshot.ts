import { normalizeDomain } from '../domain.js';
import type { Endpoint } from '../endpoint.js';
import { AdminError, quote } from '../errors.js';
import type { SnapshotWrite } from '../ports.js';
import { SnapshotRequest, SnapshotResponse } from '../schemas.js';
import { checkSource } from '../source.js';
import { checkUpstream } from '../upstream.js';

/** `PUT /routes/snapshot`: replaces the complete route set of one source. */
export const putSnapshot: Endpoint = {
  method: 'PUT',
  path: '/routes/snapshot',
  url: '/routes/snapshot',
  tag: 'routes',
  operationId: 'putRouteSnapshot',
  summary: 'Reconcile the routes of one source',
  description:
    'Writes every listed route with owner source and removes the routes source owned that are absent from the list; routes of other sources are untouched. The whole list is validated before anything changes. Answers once the change is durable (one line of the route journal) and every data-plane worker routes it; a worker that has not confirmed within 2 s applies it in order when it catches up, and the answer does not wait for it (the change is saved). Audit action routes_snapshot, resource the source.',
  auth: true,
  body: SnapshotRequest,
  responses: { 200: { description: 'Reconciled', schema: SnapshotResponse } },
  errors: {
    400: 'invalid JSON, invalid source, invalid domain, invalid upstream address or duplicate domain',
    409: 'route limit reached: the snapshot would take the table past its limit (100,000 routes); nothing of it was applied',
    413: 'request body too large (over 64 KB)',
    500: 'internal error: the route store could not write its journal (nothing of the write was applied; retrying is safe), never because a worker is slow',
    503: "storage unavailable: with `storage redis`, Redis does not answer (`storage unavailable: redis is unreachable (<error>); the write was not applied`); nothing of the write was applied on any node; `Retry-After: 2`. GET /routes still answers from this node's copy",
  },
  handler: (ctx) => async (request) => {
    const body = request.body as SnapshotRequest;
    const source = checkSource(body.source);
    const seen = new Set<string>();
    const routes: SnapshotWrite['routes'] = [];
    for (const entry of body.routes ?? []) {
      const domain = normalizeDomain(entry.domain);
      if (seen.has(domain))
        throw new AdminError('ADMIN_DUPLICATE_DOMAIN', `${quote(domain)} appears more than once in routes`);
      seen.add(domain);
      routes.push({ domain, upstream: checkUpstream(entry.upstream), tls: entry.tls });
    }
    const result = await ctx.routes.applySnapshot({ source, routes });
    ctx.audit('routes_snapshot', source);
    return result;
  },
};
