/**
 * What the dashboard reads, in-process: the history store's queries
 * (`@proxyd/history`, issue 22 contract §2) and the live analytics snapshots
 * (spec §2.4, the admin API's `/analytics` reader). The dashboard defines
 * these ports and imports no implementation: the daemon hands it the store
 * and the reader it already has, so a page never goes through the admin API
 * and never spends its rate limit.
 */

import {
  STATS_DIMENSIONS,
  STATS_INTERVALS,
  type StatsDimension,
  type StatsInterval,
  type StatsRange,
} from '@proxyd/model';

/** Bucket width of a time series (the model's stats-query rule). */
export type Interval = StatsInterval;

/** The intervals, narrowest first. */
export const INTERVALS: readonly Interval[] = STATS_INTERVALS;

/** A time range, epoch ms, `[from, to)`. */
export type Range = StatsRange;

/** Good / needs-improvement / poor counts of one Web Vital (spec §2.4 thresholds). */
export interface VitalCounts {
  good: number;
  needs_improvement: number;
  poor: number;
}

/** The dimensions a breakdown is kept for (contract §1, `ROLLUP_DIMENSIONS`; the model's stats-query rule). */
export const DIMENSIONS = STATS_DIMENSIONS;

/** One dimension of {@link DIMENSIONS}. */
export type Dimension = StatsDimension;

/** One bucket of a time series; every bucket of the range is present, zeros included. */
export interface TimeseriesPoint {
  /** Bucket start, epoch ms. */
  t: number;
  page_views: number;
  visitors: number;
  requests: number;
  bot_requests: number;
  bytes_sent: number;
}

/** Status classes, as in the spec's snapshots. */
export interface StatusCounts {
  s1xx: number;
  s2xx: number;
  s3xx: number;
  s4xx: number;
  s5xx: number;
  other: number;
}

/** The sums of a range. */
export interface Totals {
  page_views: number;
  visitors: number;
  requests: number;
  bot_requests: number;
  bytes_sent: number;
  status: StatusCounts;
}

/** One row of a breakdown: a key (a path, a referrer domain, a country code…) and its page views. */
export interface BreakdownItem {
  key: string;
  page_views: number;
}

/** One metric of one page: its rating counts and their sum. */
export type VitalSamples = VitalCounts & { samples: number };

/** Web Vitals of one page over a range. */
export interface VitalsPage {
  path: string;
  lcp: VitalSamples;
  cls: VitalSamples;
  inp: VitalSamples;
}

/**
 * The history store's queries (contract §2), synchronous reads on the
 * control plane. `@proxyd/history`'s `HistoryStore` is one structurally.
 */
export interface HistoryReader {
  /** Every domain with stored rows. */
  domains(): string[];
  timeseries(domain: string, range: Range, interval: Interval): TimeseriesPoint[];
  totals(domain: string, range: Range): Totals;
  /** Descending by page views, at most `limit` (default 10). */
  breakdown(domain: string, dimension: Dimension, range: Range, limit?: number): BreakdownItem[];
  /** Pages with the most samples first, at most `limit` (default 20). */
  vitals(domain: string, range: Range, limit?: number): VitalsPage[];
}

/** Percentiles of one Web Vital in a snapshot. */
export interface Percentiles {
  p50: number;
  p75: number;
  p95: number;
  p99: number;
}

/** One live analytics snapshot (spec §2.4), as the admin API's `/analytics` answers it. */
export interface LiveSnapshot {
  domain: string;
  page_views_1m: number;
  page_views_60m: number;
  unique_visitors: number;
  top_pages: { path: string; views: number }[];
  referrers: { domain: string; count: number }[];
  countries: { country: string; count: number }[];
  status_codes: StatusCounts;
  bytes_sent: number;
  web_vitals: { lcp: Percentiles; cls: Percentiles; inp: Percentiles };
  timestamp: string;
}

/**
 * The live snapshots: this process's collectors, or with workers the
 * merged snapshots the admin API's `/analytics` answers (structurally its
 * `AnalyticsPort`). Reads never flush.
 */
export interface LiveReader {
  list(): LiveSnapshot[] | Promise<LiveSnapshot[]>;
  get(domain: string): LiveSnapshot | undefined | Promise<LiveSnapshot | undefined>;
}

/** Everything the dashboard reads. */
export interface DashboardSource {
  /** The history store; null when history is off (the range views answer 501, the real-time view stays). */
  history: HistoryReader | null;
  live: LiveReader;
}
