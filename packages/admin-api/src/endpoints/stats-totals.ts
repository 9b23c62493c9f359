import type { Endpoint } from '../endpoint.js';
import { csv, parseRange, rfc3339, sendCsv, statsDomain, wantsCsv } from './stats-query.js';
import { StatsCsv, StatsDomainParams, StatsTotals, StatsTotalsQuery } from './stats-schemas.js';

/** `GET /stats/{domain}/totals`: what one domain did over a range. */
export const getStatsTotals: Endpoint = {
  method: 'GET',
  path: '/stats/{domain}/totals',
  url: '/stats/:domain/totals',
  tag: 'stats',
  operationId: 'getStatsTotals',
  summary: 'Totals of one domain',
  description:
    "Page views, visitors, requests, bot requests, bytes and status classes over the range (default: the last 24 hours), widened to whole minutes; parts older than the minute or hour tier keeps are counted by the hour or day that holds them. Visitors: each UTC day's unique visitors (the daily salt rotates), summed over the days. CSV: one row, domain, from, to (RFC 3339) and the counts.",
  auth: true,
  params: StatsDomainParams,
  query: StatsTotalsQuery,
  responses: {
    200: {
      description: 'The totals',
      schema: StatsTotals,
      alternatives: [{ contentType: 'text/csv', schema: StatsCsv, description: 'The totals as CSV' }],
    },
  },
  errors: {
    400: 'invalid domain (empty, too long or invalid characters), invalid range, invalid format, invalid URL',
    404: 'no history for domain',
    500: 'internal error: the history database failed to answer',
    501: 'history not enabled',
  },
  handler: (ctx) => async (request, reply) => {
    const asCsv = wantsCsv(request);
    const range = parseRange(request.query as Record<string, string>, ctx.now());
    const { stats, domain } = await statsDomain(ctx, (request.params as StatsDomainParams).domain);
    const t = await stats.totals(domain, range);
    if (asCsv) {
      const s = t.status;
      return sendCsv(
        reply,
        csv(
          ['domain', 'from', 'to', 'page_views', 'visitors', 'requests', 'bot_requests', 'bytes_sent'].concat([
            's1xx',
            's2xx',
            's3xx',
            's4xx',
            's5xx',
            'other',
          ]),
          [
            [
              domain,
              rfc3339(range.from),
              rfc3339(range.to),
              t.page_views,
              t.visitors,
              t.requests,
              t.bot_requests,
            ].concat([t.bytes_sent, s.s1xx, s.s2xx, s.s3xx, s.s4xx, s.s5xx, s.other]),
          ],
        ),
      );
    }
    return {
      domain,
      from: range.from,
      to: range.to,
      page_views: t.page_views,
      visitors: t.visitors,
      requests: t.requests,
      bot_requests: t.bot_requests,
      bytes_sent: t.bytes_sent,
      status: t.status,
    };
  },
};
