/**
 * The stats-query rule: what a query of the analytics history may ask
 * (`from`/`to`, `interval`, a breakdown dimension, `limit`, the domain of
 * the path), the same for the admin API's `GET /stats…` and the
 * dashboard's `/api/stats…`. Like the value rules, each function returns
 * the value or a problem and never throws; each caller words the problem
 * with its own error code (`ADMIN_INVALID_RANGE`, `DASHBOARD_INVALID_RANGE`…).
 * The admin API's OpenAPI document describes this rule.
 */
import type { Parsed } from './values.js';

/** The bucket sizes of a time series. */
export const STATS_INTERVALS = ['minute', 'hour', 'day'] as const;
/** One of {@link STATS_INTERVALS}. */
export type StatsInterval = (typeof STATS_INTERVALS)[number];

/** Width of one bucket of each interval, ms. Buckets are UTC-aligned (a day bucket is a UTC day). */
export const STATS_INTERVAL_MS: Readonly<Record<StatsInterval, number>> = Object.freeze({
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
});

/** The dimensions a breakdown is kept for. */
export const STATS_DIMENSIONS = [
  'pages',
  'entry_pages',
  'referrers',
  'countries',
  'browsers',
  'os',
  'devices',
  'utm_source',
  'utm_medium',
  'utm_campaign',
] as const;
/** One of {@link STATS_DIMENSIONS}. */
export type StatsDimension = (typeof STATS_DIMENSIONS)[number];

/** A time range, epoch ms: `from` inclusive, `to` exclusive. */
export interface StatsRange {
  from: number;
  to: number;
}

/** The range when none is asked: the 24 hours before `to`. */
export const DEFAULT_STATS_RANGE_MS = 24 * 3_600_000;
/** The longest range, ms: 3,660 days (about ten years). */
export const MAX_STATS_RANGE_MS = 3660 * 86_400_000;
/** Buckets a time series has at most. */
export const MAX_STATS_POINTS = 1500;
/** The latest time a JavaScript date holds, ms (ECMA-262 §21.4.1.22). */
const MAX_TIME_MS = 8.64e15;
/** `limit`: 1 to this many items. */
export const MAX_STATS_LIMIT = 100;

/** RFC 3339 (§5.6) date-time: `T` (any case), a zone (`Z` or `±hh:mm`), an optional fraction of 1-9 digits. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;
/** What a host in a path segment may hold, checked as sent, before lowercasing (U+212A KELVIN SIGN lowercases to "k"). */
const HOST_CHARS = /^[A-Za-z0-9._:[\]-]+$/;
/** Longest domain segment, UTF-8 bytes (RFC 1035). */
const MAX_DOMAIN_SEGMENT_BYTES = 253;

const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
const fail = <T>(problem: string): Parsed<T> => ({ ok: false, problem });
/** Quotes input inside a problem, cut to 80 characters so echoes stay short. */
const q = (text: string) => JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);

/**
 * A query parameter as an HTTP query-string parser gives it: absent, once
 * (a string), or repeated (an array: refused, as nobody can tell which one
 * was meant).
 */
export type StatsQueryValue = string | readonly string[] | undefined;

/** The one value of a query parameter, or the problem of a repeated one. */
function single(name: string, value: StatsQueryValue): Parsed<string | undefined> {
  if (typeof value === 'string' || value === undefined) return ok(value);
  return fail(`${name} is given ${value.length} times`);
}

/**
 * One `from` / `to` value: epoch ms (1-16 digits, at most 8.64e15) or an
 * RFC 3339 date-time with a zone; null when absent or empty.
 */
export function parseStatsTime(name: 'from' | 'to', value: string | undefined): Parsed<number | null> {
  if (value === undefined || value === '') return ok(null);
  let ms = Number.NaN;
  if (/^\d{1,16}$/.test(value)) ms = Number(value);
  else if (RFC3339.test(value)) ms = Date.parse(value.toUpperCase());
  if (!Number.isSafeInteger(ms) || ms > MAX_TIME_MS)
    return fail(`${name} ${q(value)} is neither RFC 3339 nor epoch ms`);
  return ok(ms);
}

/**
 * `from` and `to` (see {@link parseStatsTime}): default `to` now, `from`
 * {@link DEFAULT_STATS_RANGE_MS} before `to` (not before the epoch);
 * `from` before `to`, at most {@link MAX_STATS_RANGE_MS} apart.
 */
export function parseStatsRange(from: StatsQueryValue, to: StatsQueryValue, now: number): Parsed<StatsRange> {
  const toText = single('to', to);
  if (!toText.ok) return toText;
  const toMs = parseStatsTime('to', toText.value);
  if (!toMs.ok) return toMs;
  const end = toMs.value ?? now;
  const fromText = single('from', from);
  if (!fromText.ok) return fromText;
  const fromMs = parseStatsTime('from', fromText.value);
  if (!fromMs.ok) return fromMs;
  const start = fromMs.value ?? Math.max(0, end - DEFAULT_STATS_RANGE_MS);
  if (start >= end) return fail(`from (${start}) must be before to (${end})`);
  if (end - start > MAX_STATS_RANGE_MS) return fail('longer than 3,660 days');
  return ok({ from: start, to: end });
}

/** How many buckets of `interval` a range spans, partial buckets at either end included. */
export function statsBucketCount(range: StatsRange, interval: StatsInterval): number {
  if (range.to <= range.from) return 0;
  const width = STATS_INTERVAL_MS[interval];
  return Math.ceil(range.to / width) - Math.floor(range.from / width);
}

/** `interval` (default `hour`); more than {@link MAX_STATS_POINTS} buckets of it in the range is refused. */
export function parseStatsInterval(value: StatsQueryValue, range: StatsRange): Parsed<StatsInterval> {
  const text = single('interval', value);
  if (!text.ok) return text;
  const raw = text.value;
  const interval = raw === undefined || raw === '' ? 'hour' : STATS_INTERVALS.find((i) => i === raw);
  if (interval === undefined) return fail(`${q(String(raw))}: minute, hour or day`);
  const buckets = statsBucketCount(range, interval);
  if (buckets > MAX_STATS_POINTS) {
    return fail(
      `${buckets} ${interval} buckets in the range, at most ${MAX_STATS_POINTS}: ask for a coarser interval or a shorter range`,
    );
  }
  return ok(interval);
}

/** A breakdown dimension, one of {@link STATS_DIMENSIONS}. */
export function parseStatsDimension(value: string): Parsed<StatsDimension> {
  const dimension = STATS_DIMENSIONS.find((d) => d === value);
  return dimension === undefined ? fail(`${q(value)}: ${STATS_DIMENSIONS.join(', ')}`) : ok(dimension);
}

/** `limit`: a whole number 1-100 (default `fallback`). */
export function parseStatsLimit(value: StatsQueryValue, fallback: number): Parsed<number> {
  const text = single('limit', value);
  if (!text.ok) return text;
  const raw = text.value;
  if (raw === undefined || raw === '') return ok(fallback);
  const n = /^\d{1,3}$/.test(raw) ? Number(raw) : Number.NaN;
  return n >= 1 && n <= MAX_STATS_LIMIT ? ok(n) : fail(`${q(raw)}: a whole number 1 to ${MAX_STATS_LIMIT}`);
}

/**
 * The domain of a stats path segment (percent-decoded), lowercase: 1-253
 * UTF-8 bytes of letters, digits and `. _ : [ ] -`, checked before
 * lowercasing. Not the route-domain rule (`parseDomain`): history keeps
 * whatever host a request named, an IP address or a `host:port` included.
 */
export function parseStatsDomain(raw: string): Parsed<string> {
  if (raw.length === 0) return fail('domain segment is empty');
  if (new TextEncoder().encode(raw).length > MAX_DOMAIN_SEGMENT_BYTES) return fail('longer than 253 bytes');
  if (!HOST_CHARS.test(raw)) return fail(`${q(raw)} contains invalid characters`);
  return ok(raw.toLowerCase());
}
