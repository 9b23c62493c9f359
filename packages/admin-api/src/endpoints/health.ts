import type { Endpoint } from '../endpoint.js';
import { HealthResponse } from '../schemas.js';

/** `GET /health`: liveness, no auth, exempt from the rate limit. */
export const health: Endpoint = {
  method: 'GET',
  path: '/health',
  url: '/health',
  tag: 'health',
  operationId: 'getHealth',
  summary: 'Liveness',
  description:
    'Always 200 while the process serves (with `storage redis`, also whether Redis answers). No authentication on either transport; exempt from the global rate limit. HEAD /health answers the same without a body (as HEAD does on every GET path).',
  auth: false,
  responses: { 200: { description: 'The process is up', schema: HealthResponse } },
  handler: (ctx) => async () => ({
    status: 'ok' as const,
    uptime_secs: Math.max(0, Math.floor((ctx.now() - ctx.startedAt) / 1000)),
    // Liveness stays "ok" while Redis is down: the node still serves what it holds.
    ...(ctx.storage === undefined ? {} : { storage: ctx.storage.state() }),
  }),
};
