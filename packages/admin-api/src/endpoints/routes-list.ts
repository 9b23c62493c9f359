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
  handler: (ctx) => async () =>
    [...ctx.routes.list()].sort((a, b) => (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0)),
};
