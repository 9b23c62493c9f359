import type { Endpoint } from '../endpoint.js';
import { AdminError } from '../errors.js';
import { PlainText } from '../schemas.js';

/** Content type of the Prometheus text exposition (spec §4). */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4';

/** `GET /metrics`: Prometheus text exposition; 404 when started with `--no-metrics`. */
export const getMetrics: Endpoint = {
  method: 'GET',
  path: '/metrics',
  url: '/metrics',
  tag: 'metrics',
  operationId: 'getMetrics',
  summary: 'Prometheus metrics',
  description: 'Prometheus text exposition format 0.0.4. 404 when metrics are disabled (--no-metrics).',
  auth: true,
  responses: {
    200: { description: 'The exposition', schema: PlainText, contentType: METRICS_CONTENT_TYPE },
  },
  errors: { 404: 'metrics disabled (--no-metrics)', 500: 'internal error: the metrics source failed to render' },
  handler: (ctx) => async (_request, reply) => {
    if (ctx.metrics === undefined) throw new AdminError('ADMIN_METRICS_DISABLED');
    const text = await ctx.metrics.render();
    return reply.type(METRICS_CONTENT_TYPE).send(text);
  },
};
