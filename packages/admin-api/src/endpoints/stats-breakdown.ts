import type { Endpoint } from '../endpoint.js';
import { csv, parseDimension, parseLimit, parseRange, sendCsv, statsDomain, wantsCsv } from './stats-query.js';
import {
  STATS_DIMENSIONS,
  StatsBreakdown,
  StatsBreakdownParams,
  StatsBreakdownQuery,
  StatsCsv,
} from './stats-schemas.js';

/** `GET /stats/{domain}/breakdown/{dimension}`: the top keys of one dimension over a range. */
export const getStatsBreakdown: Endpoint = {
  method: 'GET',
  path: '/stats/{domain}/breakdown/{dimension}',
  url: '/stats/:domain/breakdown/:dimension',
  tag: 'stats',
  operationId: 'getStatsBreakdown',
  summary: 'Top keys of one dimension',
  description: `Page views by key of one dimension (${STATS_DIMENSIONS.join(', ')}) over the range (default: the last 24 hours), the limit (1-100, default 10) largest, descending. Finished hours keep their top 100 keys per dimension, days their top 500; what is beyond is counted in the totals, not listed. CSV: key, page_views.`,
  auth: true,
  params: StatsBreakdownParams,
  query: StatsBreakdownQuery,
  responses: {
    200: {
      description: 'The breakdown',
      schema: StatsBreakdown,
      alternatives: [{ contentType: 'text/csv', schema: StatsCsv, description: 'The breakdown as CSV' }],
    },
  },
  errors: {
    400: 'invalid domain, invalid dimension, invalid range, invalid limit (not 1-100), invalid format, invalid URL',
    404: 'no history for domain',
    500: 'internal error: the history database failed to answer',
    501: 'history not enabled',
  },
  handler: (ctx) => async (request, reply) => {
    const params = request.params as StatsBreakdownParams;
    const query = request.query as Record<string, string>;
    const asCsv = wantsCsv(request);
    const { stats, domain } = await statsDomain(ctx, params.domain);
    const dimension = parseDimension(params.dimension);
    const range = parseRange(query, ctx.now());
    const limit = parseLimit(query, 10);
    const items = await stats.breakdown(domain, dimension, range, limit);
    if (asCsv)
      return sendCsv(
        reply,
        csv(
          ['key', 'page_views'],
          items.map((i) => [i.key, i.page_views]),
        ),
      );
    return { domain, dimension, items };
  },
};
