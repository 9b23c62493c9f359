import type { Endpoint } from '../endpoint.js';
import { RouteList } from '../schemas.js';

/** `GET /routes`: the whole route table. */
export const listRoutes: Endpoint = {
  method: 'GET',
  path: '/routes',
  url: '/routes',
  tag: 'routes',
  operationId: 'listRoutes',
  summary: 'List routes',
  description: 'Every route of the table (Proxyfile, container labels and API routes), sorted by domain.',
  auth: true,
  responses: { 200: { description: 'The route table', schema: RouteList } },
  errors: {
    500: 'internal error: the route store failed to answer; serialize error: the table could not be serialized',
  },
  // The port lists in domain order (the route store keeps it per write): no sort per call.
  handler: (ctx) => async () => ctx.routes.list(),
};
