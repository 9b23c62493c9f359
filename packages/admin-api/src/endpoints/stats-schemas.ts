/**
 * TypeBox schemas of the stats endpoints (`GET /stats…`): analytics history
 * as time series, totals, breakdowns and Web Vitals, in JSON or CSV.
 */
import { STATS_DIMENSIONS, STATS_INTERVALS } from '@proxyd/model';
import { type Static, Type } from 'typebox';

const count = (description: string) => Type.Integer({ minimum: 0, description });
const epochMs = (description: string) => Type.Integer({ description: `${description}, epoch ms` });

/** The dimensions a breakdown is kept for, and the intervals of a time series: the model's stats-query rule. */
export { STATS_DIMENSIONS, STATS_INTERVALS };

const Dimension = Type.Union(
  STATS_DIMENSIONS.map((d) => Type.Literal(d)),
  { description: 'Breakdown dimension' },
);

/** Path parameters of `/stats/{domain}/…`. */
export const StatsDomainParams = Type.Object(
  {
    domain: Type.String({
      description:
        'Hostname, case-insensitive: 1-253 bytes of letters, digits and . _ : [ ] - (checked before lowercasing)',
    }),
  },
  { additionalProperties: false },
);
export type StatsDomainParams = Static<typeof StatsDomainParams>;

/** Path parameters of `/stats/{domain}/breakdown/{dimension}`. */
export const StatsBreakdownParams = Type.Object(
  {
    domain: StatsDomainParams.properties.domain,
    dimension: Type.String({ description: `Breakdown dimension: ${STATS_DIMENSIONS.join(', ')}` }),
  },
  { additionalProperties: false },
);
export type StatsBreakdownParams = Static<typeof StatsBreakdownParams>;

const FROM = Type.Optional(
  Type.String({ description: 'Start of the range (inclusive): RFC 3339 or epoch ms; default: 24 hours before to' }),
);
const TO = Type.Optional(
  Type.String({ description: 'End of the range (exclusive): RFC 3339 or epoch ms; default: now' }),
);
const FORMAT = Type.Optional(
  Type.Union([Type.Literal('json'), Type.Literal('csv')], {
    description: 'json (default) or csv (text/csv with a header row); "Accept: text/csv" also asks for CSV',
  }),
);
const limit = (fallback: number) =>
  Type.Optional(Type.String({ pattern: '^[0-9]{1,3}$', description: `Items at most, 1-100 (default ${fallback})` }));

/** Query of `GET /stats`. */
export const StatsListQuery = Type.Object({ format: FORMAT });
/** Query of `GET /stats/{domain}/timeseries`. */
export const StatsTimeseriesQuery = Type.Object({
  from: FROM,
  to: TO,
  interval: Type.Optional(
    Type.Union(
      STATS_INTERVALS.map((i) => Type.Literal(i)),
      { description: 'Bucket size (default hour); at most 1,500 buckets in the range' },
    ),
  ),
  format: FORMAT,
});
/** Query of `GET /stats/{domain}/totals`. */
export const StatsTotalsQuery = Type.Object({ from: FROM, to: TO, format: FORMAT });
/** Query of `GET /stats/{domain}/breakdown/{dimension}`. */
export const StatsBreakdownQuery = Type.Object({ from: FROM, to: TO, limit: limit(10), format: FORMAT });
/** Query of `GET /stats/{domain}/vitals`. */
export const StatsVitalsQuery = Type.Object({ from: FROM, to: TO, limit: limit(20), format: FORMAT });

/** Body of `GET /stats`. */
export const StatsDomains = Type.Object(
  { domains: Type.Array(Type.String(), { description: 'Domains with history, sorted' }) },
  { additionalProperties: false, description: 'The domains with history' },
);
export type StatsDomains = Static<typeof StatsDomains>;

/** One bucket of a time series. */
export const StatsPoint = Type.Object(
  {
    t: epochMs("The bucket's start"),
    page_views: count('Page views by humans'),
    visitors: count('Unique visitors in the bucket (salted daily: a day at most)'),
    requests: count('Every request, assets, beacons and bots included'),
    bot_requests: count('Requests whose user agent is a known bot'),
    bytes_sent: count('Response body bytes sent'),
  },
  { additionalProperties: false, description: 'One bucket of a time series' },
);
export type StatsPoint = Static<typeof StatsPoint>;

/** Body of `GET /stats/{domain}/timeseries`. */
export const StatsTimeseries = Type.Object(
  {
    domain: Type.String({ description: 'The domain, lowercase' }),
    from: epochMs('Start of the range'),
    to: epochMs('End of the range (exclusive)'),
    interval: Type.Union(
      STATS_INTERVALS.map((i) => Type.Literal(i)),
      { description: 'Bucket size' },
    ),
    points: Type.Array(StatsPoint, {
      description:
        "Every bucket from the one holding from up to to, zeros where nothing is kept (no traffic, or past the tier's retention)",
    }),
  },
  { additionalProperties: false, description: 'A time series of one domain' },
);
export type StatsTimeseries = Static<typeof StatsTimeseries>;

const StatusCounts = Type.Object(
  {
    s1xx: count('1xx responses'),
    s2xx: count('2xx responses'),
    s3xx: count('3xx responses'),
    s4xx: count('4xx responses'),
    s5xx: count('5xx responses'),
    other: count('Other statuses'),
  },
  { additionalProperties: false, description: 'Requests by status class' },
);

/** Body of `GET /stats/{domain}/totals`. */
export const StatsTotals = Type.Object(
  {
    domain: Type.String({ description: 'The domain, lowercase' }),
    from: epochMs('Start of the range'),
    to: epochMs('End of the range (exclusive)'),
    page_views: count('Page views by humans'),
    visitors: count("Each UTC day's unique visitors, summed over the days of the range"),
    requests: count('Every request'),
    bot_requests: count('Requests by known bots'),
    bytes_sent: count('Response body bytes sent'),
    status: StatusCounts,
  },
  { additionalProperties: false, description: 'What one domain did over the range' },
);
export type StatsTotals = Static<typeof StatsTotals>;

/** Body of `GET /stats/{domain}/breakdown/{dimension}`. */
export const StatsBreakdown = Type.Object(
  {
    domain: Type.String({ description: 'The domain, lowercase' }),
    dimension: Dimension,
    items: Type.Array(
      Type.Object(
        {
          key: Type.String({ description: 'Page path, referrer domain, country code, browser…' }),
          page_views: count('Page views'),
        },
        { additionalProperties: false },
      ),
      { description: 'The keys with the most page views, descending (ties by key)' },
    ),
  },
  { additionalProperties: false, description: 'Page views of one domain by one dimension' },
);
export type StatsBreakdown = Static<typeof StatsBreakdown>;

const VitalCounts = Type.Object(
  {
    good: count('Samples rated good'),
    needs_improvement: count('Samples rated needs improvement'),
    poor: count('Samples rated poor'),
    samples: count('Samples in all'),
  },
  { additionalProperties: false, description: 'Ratings by the spec §2.4 thresholds' },
);

/** Body of `GET /stats/{domain}/vitals`. */
export const StatsVitals = Type.Object(
  {
    domain: Type.String({ description: 'The domain, lowercase' }),
    pages: Type.Array(
      Type.Object(
        { path: Type.String({ description: 'Page path' }), lcp: VitalCounts, cls: VitalCounts, inp: VitalCounts },
        { additionalProperties: false },
      ),
      { description: 'The pages with the most samples, descending' },
    ),
  },
  { additionalProperties: false, description: 'Web Vitals ratings per page of one domain' },
);
export type StatsVitals = Static<typeof StatsVitals>;

/** A CSV answer. */
export const StatsCsv = Type.String({
  description: 'RFC 4180 CSV, a header row first; a text cell that starts with = + - @ is prefixed with a quote',
});
