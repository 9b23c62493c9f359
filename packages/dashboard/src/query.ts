import {
  type Parsed,
  parseStatsDimension,
  parseStatsDomain,
  parseStatsInterval,
  parseStatsLimit,
  parseStatsRange,
  type StatsQueryValue,
} from '@proxyd/model';
import { DashboardError, type DashboardErrorCode } from './errors.js';
import type { Dimension, Interval, Range } from './source.js';

/**
 * The query parameters of the stats routes: the model's stats-query rule,
 * the one the admin API's `GET /stats…` applies, with the dashboard's
 * error codes.
 */

/** The value, or the model's problem as a 400 of `code`. */
function take<T>(parsed: Parsed<T>, code: DashboardErrorCode): T {
  if (!parsed.ok) throw new DashboardError(code, parsed.problem);
  return parsed.value;
}

/** `from` and `to` of a query (default: the last 24 hours before `now`); `from` must be before `to`. */
export function parseRange(query: { from?: StatsQueryValue; to?: StatsQueryValue }, now: number): Range {
  return take(parseStatsRange(query.from, query.to, now), 'DASHBOARD_INVALID_RANGE');
}

/** `interval` (default `hour`); a range of more than 1,500 buckets of it is refused. */
export function parseInterval(value: StatsQueryValue, range: Range): Interval {
  return take(parseStatsInterval(value, range), 'DASHBOARD_INVALID_INTERVAL');
}

/** A breakdown dimension of the path. */
export function parseDimension(value: string): Dimension {
  return take(parseStatsDimension(value), 'DASHBOARD_INVALID_DIMENSION');
}

/** `limit`: a whole number 1–100 (default `fallback`). */
export function parseLimit(value: StatsQueryValue, fallback: number): number {
  return take(parseStatsLimit(value, fallback), 'DASHBOARD_INVALID_LIMIT');
}

/** The domain of a path segment, lowercase; 400 when empty, over 253 bytes or with characters a host cannot have. */
export function parseDomain(raw: string): string {
  return take(parseStatsDomain(raw), 'DASHBOARD_INVALID_DOMAIN');
}
