import type { RollupDimension, VitalCounts } from '@proxyd/analytics';

/** Status classes, as the analytics count them. */
export interface StatusTotals {
  s1xx: number;
  s2xx: number;
  s3xx: number;
  s4xx: number;
  s5xx: number;
  other: number;
}

/** One bucket of a time series. */
export interface SeriesPoint {
  /** The bucket's start, epoch ms. */
  t: number;
  page_views: number;
  /** Unique visitors in the bucket (a day's at most: salts rotate daily). */
  visitors: number;
  requests: number;
  bot_requests: number;
  bytes_sent: number;
}

/** What a domain did over a range. */
export interface Totals {
  page_views: number;
  /** The sum of each UTC day's unique visitors (the same person on two days counts twice). */
  visitors: number;
  requests: number;
  bot_requests: number;
  bytes_sent: number;
  status: StatusTotals;
}

/** One key of a breakdown. */
export interface BreakdownItem {
  key: string;
  page_views: number;
}

/** Counts of one Web Vital of a page, and their sum. */
export type VitalTotals = VitalCounts & { samples: number };

/** The Web Vitals of one page over a range. */
export interface PageVitalsItem {
  path: string;
  lcp: VitalTotals;
  cls: VitalTotals;
  inp: VitalTotals;
}

/** How long each tier's rows are kept, ms; `day: null` keeps days until the size bound trims them. */
export interface Retention {
  minute: number;
  hour: number;
  day: number | null;
}

/** What one flush did. */
export interface WriteResult {
  /** Rollups written (after merging those of the same domain and minute). */
  rollups: number;
  /** Time the write held the thread, ms (the transaction, retention and any trimming). */
  ms: number;
  /** Rows deleted by retention and the size bound. */
  deleted: number;
  /** Whether the size bound trimmed old data. */
  trimmed: boolean;
}

export type { RollupDimension };
