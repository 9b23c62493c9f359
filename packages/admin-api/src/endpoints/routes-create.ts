import { normalizeDomain } from '../domain.js';
import type { Endpoint } from '../endpoint.js';
import { Route, RouteCreate } from '../schemas.js';
import { checkSource } from '../source.js';
import { checkUpstream } from '../upstream.js';

/** `POST /routes`: adds a route or replaces the one with the same domain. */
export const createRoute: Endpoint = {
  method: 'POST',
  path: '/routes',
  url: '/routes',
  tag: 'routes',
  operationId: 'createRoute',
  summary: 'Add or replace a route',
  description:
    'Adds a route, or replaces the route with the same domain (compared case-insensitively) whoever owned it. Answers once the change is durable (one line of the route journal) and every data-plane worker routes it; a worker that has not confirmed within 2 s applies it in order when it catches up, and the answer does not wait for it (the change is saved). Audit action route_add.',
  auth: true,
  body: RouteCreate,
  responses: { 201: { description: 'Created or replaced', schema: Route } },
  errors: {
    400: 'invalid JSON, invalid domain, invalid upstream address or invalid source',
    409: 'route limit reached: the table is full (100,000 routes); replacing a route is still accepted',
    413: 'request body too large (over 64 KB)',
    500: 'internal error: the route store could not write its journal (nothing of the write was applied; retrying is safe), never because a worker is slow',
    503: "storage unavailable: with `storage redis`, Redis does not answer (`storage unavailable: redis is unreachable (<error>); the write was not applied`); nothing of the write was applied on any node; `Retry-After: 2`. GET /routes still answers from this node's copy",
  },
  handler: (ctx) => async (request, reply) => {
    const body = request.body as RouteCreate;
    const domain = normalizeDomain(body.domain);
    const upstream = checkUpstream(body.upstream);
    const source = body.source === undefined || body.source === null ? null : checkSource(body.source);
    const route = await ctx.routes.upsert({ domain, upstream, tls: body.tls, source });
    ctx.audit('route_add', domain);
    return reply.code(201).send(route);
  },
};
