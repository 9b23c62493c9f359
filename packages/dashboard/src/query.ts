import { DashboardError } from './errors.js';
import { bucketCount, MAX_BUCKETS } from './shared/range.js';
import type { Dimension, Interval, Range } from './source.js';
import { DIMENSIONS, INTERVALS } from './source.js';

/** The default range of the stats routes: the last 24 hours. */
export const DEFAULT_RANGE_MS = 24 * 3_600_000;

/** RFC 3339 with a time zone (`Z` or `±hh:mm`), optional fraction. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
/** A host as the admin API accepts it in a path segment: checked before lowercasing. */
const HOST_CHARS = /^[A-Za-z0-9._:[\]-]+$/;

/** One `from` / `to` value: RFC 3339 or epoch ms; null when absent. */
export function parseTime(name: string, value: string | undefined): number | null {
  if (value === undefined || value === '') return null;
  if (/^\d{1,15}$/.test(value)) return Number(value);
  if (RFC3339.test(value)) {
    const ms = Date.parse(value);
    if (Number.isFinite(ms)) return ms;
  }
  throw new DashboardError('DASHBOARD_INVALID_RANGE', `${name} is not RFC 3339 or epoch ms: ${JSON.stringify(value)}`);
}

/** `from` and `to` of a query (default: the last 24 hours before `now`); `from` must be before `to`. */
export function parseRange(query: { from?: string; to?: string }, now: number): Range {
  const to = parseTime('to', query.to) ?? now;
  const from = parseTime('from', query.from) ?? to - DEFAULT_RANGE_MS;
  if (from >= to) throw new DashboardError('DASHBOARD_INVALID_RANGE', 'from must be before to');
  return { from, to };
}

/** `interval` (default `hour`); a range of more than {@link MAX_BUCKETS} buckets of it is refused. */
export function parseInterval(value: string | undefined, range: Range): Interval {
  const interval = value === undefined || value === '' ? 'hour' : INTERVALS.find((i) => i === value);
  if (interval === undefined) {
    throw new DashboardError('DASHBOARD_INVALID_INTERVAL', `${JSON.stringify(value)}: minute, hour or day`);
  }
  const buckets = bucketCount(range, interval);
  if (buckets > MAX_BUCKETS) {
    throw new DashboardError(
      'DASHBOARD_INVALID_INTERVAL',
      `${buckets} ${interval} buckets in the range, at most ${MAX_BUCKETS}: choose a wider interval`,
    );
  }
  return interval;
}

/** A breakdown dimension of the path. */
export function parseDimension(value: string): Dimension {
  const dimension = DIMENSIONS.find((d) => d === value);
  if (dimension === undefined) {
    throw new DashboardError('DASHBOARD_INVALID_DIMENSION', `${JSON.stringify(value)}: ${DIMENSIONS.join(', ')}`);
  }
  return dimension;
}

/** `limit`: a whole number 1–100 (default `fallback`). */
export function parseLimit(value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const n = /^\d{1,3}$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= 1 && n <= 100)) throw new DashboardError('DASHBOARD_INVALID_LIMIT', `${JSON.stringify(value)}: 1 to 100`);
  return n;
}

/** The domain of a path segment, lowercase; 400 when empty, over 253 bytes or with characters a host cannot have. */
export function parseDomain(raw: string): string {
  if (raw.length === 0) throw new DashboardError('DASHBOARD_INVALID_DOMAIN', 'domain segment is empty');
  if (Buffer.byteLength(raw, 'utf8') > 253)
    throw new DashboardError('DASHBOARD_INVALID_DOMAIN', 'longer than 253 bytes');
  if (!HOST_CHARS.test(raw)) {
    throw new DashboardError('DASHBOARD_INVALID_DOMAIN', `${JSON.stringify(raw)} contains invalid characters`);
  }
  return raw.toLowerCase();
}
