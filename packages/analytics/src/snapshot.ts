import { type Static, Type } from 'typebox';

const Percentiles = Type.Object(
  { p50: Type.Number(), p75: Type.Number(), p95: Type.Number(), p99: Type.Number() },
  { additionalProperties: false },
);

/** The TypeBox schema of one analytics snapshot (spec §2.4). */
export const AnalyticsSnapshotSchema = Type.Object(
  {
    domain: Type.String({ description: 'Hostname, lowercase' }),
    page_views_1m: Type.Integer({ minimum: 0, description: 'Requests in the last 1 minute' }),
    page_views_60m: Type.Integer({ minimum: 0, description: 'Requests in the last 60 minutes' }),
    unique_visitors: Type.Integer({ minimum: 0, description: 'Distinct client IPs seen since start' }),
    top_pages: Type.Array(
      Type.Object({ path: Type.String(), views: Type.Integer({ minimum: 0 }) }, { additionalProperties: false }),
      { maxItems: 10 },
    ),
    referrers: Type.Array(
      Type.Object({ domain: Type.String(), count: Type.Integer({ minimum: 0 }) }, { additionalProperties: false }),
      { maxItems: 10 },
    ),
    countries: Type.Array(
      Type.Object(
        { country: Type.String({ pattern: '^[A-Z]{2}$' }), count: Type.Integer({ minimum: 0 }) },
        { additionalProperties: false },
      ),
      { maxItems: 10 },
    ),
    status_codes: Type.Object(
      {
        s1xx: Type.Integer({ minimum: 0 }),
        s2xx: Type.Integer({ minimum: 0 }),
        s3xx: Type.Integer({ minimum: 0 }),
        s4xx: Type.Integer({ minimum: 0 }),
        s5xx: Type.Integer({ minimum: 0 }),
        other: Type.Integer({ minimum: 0 }),
      },
      { additionalProperties: false },
    ),
    bytes_sent: Type.Integer({ minimum: 0, description: 'Response body bytes sent since start' }),
    web_vitals: Type.Object({ lcp: Percentiles, cls: Percentiles, inp: Percentiles }, { additionalProperties: false }),
    timestamp: Type.String({
      pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$',
      description: 'RFC 3339 time the snapshot was taken (UTC)',
    }),
  },
  { additionalProperties: false },
);

/** One analytics snapshot (spec §2.4). */
export type AnalyticsSnapshot = Static<typeof AnalyticsSnapshotSchema>;
