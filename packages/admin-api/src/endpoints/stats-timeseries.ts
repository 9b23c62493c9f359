import type { Endpoint } from '../endpoint.js';
import { csv, parseInterval, parseRange, rfc3339, sendCsv, statsDomain, wantsCsv } from './stats-query.js';
import { StatsCsv, StatsDomainParams, StatsTimeseries, StatsTimeseriesQuery } from './stats-schemas.js';

/** `GET /stats/{domain}/timeseries`: one domain's buckets over a range. */
export const getStatsTimeseries: Endpoint = {
  method: 'GET',
  path: '/stats/{domain}/timeseries',
  url: '/stats/:domain/timeseries',
  tag: 'stats',
  operationId: 'getStatsTimeseries',
  summary: 'Time series of one domain',
  description:
    "Every bucket of interval (minute, hour or day, UTC) from the one holding from up to to, zeros where nothing is kept: minutes are kept 48 hours, hours 90 days, days until the size bound (the Proxyfile's history option). Default: the last 24 hours by hour. More than 1,500 buckets is 400 invalid interval. CSV: time (RFC 3339), page_views, visitors, requests, bot_requests, bytes_sent.",
  auth: true,
  params: StatsDomainParams,
  query: StatsTimeseriesQuery,
  responses: {
    200: {
      description: 'The time series',
      schema: StatsTimeseries,
      alternatives: [{ contentType: 'text/csv', schema: StatsCsv, description: 'The time series as CSV' }],
    },
  },
  errors: {
    400: 'invalid domain (empty, too long or invalid characters), invalid range (from or to neither RFC 3339 nor epoch ms, from not before to, over 3,660 days), invalid interval (not minute, hour or day; over 1,500 buckets), invalid format, invalid URL',
    404: 'no history for domain',
    500: 'internal error: the history database failed to answer',
    501: 'history not enabled',
  },
  handler: (ctx) => async (request, reply) => {
    const query = request.query as Record<string, string>;
    const asCsv = wantsCsv(request);
    const range = parseRange(query, ctx.now());
    const interval = parseInterval(query, range);
    const { stats, domain } = await statsDomain(ctx, (request.params as StatsDomainParams).domain);
    const points = await stats.timeseries(domain, range, interval);
    if (asCsv) {
      return sendCsv(
        reply,
        csv(
          ['time', 'page_views', 'visitors', 'requests', 'bot_requests', 'bytes_sent'],
          points.map((p) => [rfc3339(p.t), p.page_views, p.visitors, p.requests, p.bot_requests, p.bytes_sent]),
        ),
      );
    }
    return { domain, from: range.from, to: range.to, interval, points };
  },
};
