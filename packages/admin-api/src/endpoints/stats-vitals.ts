import type { Endpoint } from '../endpoint.js';
import type { StatsVitalCounts } from '../ports.js';
import { csv, parseLimit, parseRange, sendCsv, statsDomain, wantsCsv } from './stats-query.js';
import { StatsCsv, StatsDomainParams, StatsVitals, StatsVitalsQuery } from './stats-schemas.js';

const METRICS = ['lcp', 'cls', 'inp'] as const;
const COLUMNS = ['good', 'needs_improvement', 'poor', 'samples'] as const;

/** `GET /stats/{domain}/vitals`: Web Vitals ratings per page over a range. */
export const getStatsVitals: Endpoint = {
  method: 'GET',
  path: '/stats/{domain}/vitals',
  url: '/stats/:domain/vitals',
  tag: 'stats',
  operationId: 'getStatsVitals',
  summary: 'Web Vitals per page',
  description:
    'For each page, the LCP, CLS and INP samples rated good, needs improvement or poor by the spec §2.4 thresholds (LCP 2500/4000 ms, CLS 0.1/0.25, INP 200/500 ms) over the range (default: the last 24 hours); the limit (1-100, default 20) pages with the most samples. CSV: path, then good, needs_improvement, poor, samples of each metric.',
  auth: true,
  params: StatsDomainParams,
  query: StatsVitalsQuery,
  responses: {
    200: {
      description: 'The pages',
      schema: StatsVitals,
      alternatives: [{ contentType: 'text/csv', schema: StatsCsv, description: 'The pages as CSV' }],
    },
  },
  errors: {
    400: 'invalid domain, invalid range, invalid limit (not 1-100), invalid format, invalid URL',
    404: 'no history for domain',
    500: 'internal error: the history database failed to answer',
    501: 'history not enabled',
  },
  handler: (ctx) => async (request, reply) => {
    const query = request.query as Record<string, string>;
    const asCsv = wantsCsv(request);
    const range = parseRange(query, ctx.now());
    const limit = parseLimit(query, 20);
    const { stats, domain } = await statsDomain(ctx, (request.params as StatsDomainParams).domain);
    const pages = await stats.vitals(domain, range, limit);
    if (asCsv) {
      const header = ['path', ...METRICS.flatMap((m) => COLUMNS.map((c) => `${m}_${c}`))];
      const rows = pages.map((p) => [
        p.path,
        ...METRICS.flatMap((m) => COLUMNS.map((c) => (p[m] as StatsVitalCounts)[c])),
      ]);
      return sendCsv(reply, csv(header, rows));
    }
    return { domain, pages };
  },
};
