import type { Endpoint } from '../endpoint.js';
import { csv, sendCsv, statsPort, wantsCsv } from './stats-query.js';
import { StatsCsv, StatsDomains, StatsListQuery } from './stats-schemas.js';

/** `GET /stats`: the domains with history. */
export const listStats: Endpoint = {
  method: 'GET',
  path: '/stats',
  url: '/stats',
  tag: 'stats',
  operationId: 'listStatsDomains',
  summary: 'Domains with analytics history',
  description:
    "The domains the history database holds rows for, sorted; with storage redis, every node's minutes are in every node's history, so each node answers for the fleet. CSV (?format=csv or Accept: text/csv): a \"domain\" column. 501 when history is off (the Proxyfile's history off).",
  auth: true,
  query: StatsListQuery,
  responses: {
    200: {
      description: 'The domains',
      schema: StatsDomains,
      alternatives: [{ contentType: 'text/csv', schema: StatsCsv, description: 'The domains as CSV' }],
    },
  },
  errors: {
    400: 'invalid format: not json or csv',
    500: 'internal error: the history database failed to answer',
    501: 'history not enabled',
  },
  handler: (ctx) => async (request, reply) => {
    const asCsv = wantsCsv(request);
    const domains = await statsPort(ctx).domains();
    if (asCsv)
      return sendCsv(
        reply,
        csv(
          ['domain'],
          domains.map((d) => [d]),
        ),
      );
    return { domains };
  },
};
