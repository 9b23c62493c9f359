import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AdminContext } from '../endpoint.js';
import { AdminError, quote } from '../errors.js';
import type { StatsDimension, StatsInterval, StatsPort, StatsRange } from '../ports.js';
import { STATS_DIMENSIONS, STATS_INTERVALS } from './stats-schemas.js';

/** The range when none is asked: the last 24 hours. */
export const DEFAULT_STATS_RANGE_MS = 24 * 3_600_000;
/** Buckets a time series answers at most. */
export const MAX_STATS_POINTS = 1500;
/** The longest range, ms (about ten years). */
export const MAX_STATS_RANGE_MS = 3660 * 86_400_000;
/** Content type of a CSV answer. */
export const CSV_CONTENT_TYPE = 'text/csv; charset=utf-8';

const INTERVAL_MS: Record<StatsInterval, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };
/** RFC 3339 with a zone (`Z` or `±hh:mm`), an optional fraction. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;
// Checked on the segment as sent, before lowercasing (U+212A KELVIN SIGN lowercases to "k").
const HOST_CHARS = /^[A-Za-z0-9._:[\]-]+$/;

type Query = Record<string, string | string[] | undefined>;

/** A query parameter given once, or undefined; twice is a 400 of `code`. */
function one(
  query: Query,
  name: string,
  code: 'ADMIN_INVALID_RANGE' | 'ADMIN_INVALID_INTERVAL' | 'ADMIN_INVALID_LIMIT' | 'ADMIN_INVALID_FORMAT',
): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) throw new AdminError(code, `${name} is given ${value.length} times`);
  return value;
}

/** One `from`/`to` value: epoch ms (digits) or RFC 3339; null when absent. */
function parseTime(name: string, value: string | undefined): number | null {
  if (value === undefined || value === '') return null;
  let ms = Number.NaN;
  if (/^\d{1,16}$/.test(value)) ms = Number(value);
  else if (RFC3339.test(value)) ms = Date.parse(value.toUpperCase());
  if (!Number.isSafeInteger(ms) || ms > 8.64e15) {
    throw new AdminError('ADMIN_INVALID_RANGE', `${name} ${quote(value)} is neither RFC 3339 nor epoch ms`);
  }
  return ms;
}

/** `from` and `to` of the query (default: the last 24 hours); `from` before `to`, at most about ten years apart. */
export function parseRange(query: Query, now: number): StatsRange {
  const to = parseTime('to', one(query, 'to', 'ADMIN_INVALID_RANGE')) ?? now;
  const from = parseTime('from', one(query, 'from', 'ADMIN_INVALID_RANGE')) ?? Math.max(0, to - DEFAULT_STATS_RANGE_MS);
  if (from >= to) throw new AdminError('ADMIN_INVALID_RANGE', `from (${from}) must be before to (${to})`);
  if (to - from > MAX_STATS_RANGE_MS) throw new AdminError('ADMIN_INVALID_RANGE', 'longer than 3,660 days');
  return { from, to };
}

/** `interval` (default hour); more than {@link MAX_STATS_POINTS} buckets in the range is a 400. */
export function parseInterval(query: Query, range: StatsRange): StatsInterval {
  const raw = one(query, 'interval', 'ADMIN_INVALID_INTERVAL');
  const interval = raw === undefined || raw === '' ? 'hour' : STATS_INTERVALS.find((i) => i === raw);
  if (interval === undefined) {
    throw new AdminError('ADMIN_INVALID_INTERVAL', `${quote(String(raw))}: minute, hour or day`);
  }
  const ms = INTERVAL_MS[interval];
  const buckets = Math.ceil((range.to - Math.floor(range.from / ms) * ms) / ms);
  if (buckets > MAX_STATS_POINTS) {
    throw new AdminError(
      'ADMIN_INVALID_INTERVAL',
      `${buckets} ${interval} buckets in the range, at most ${MAX_STATS_POINTS}: ask for a coarser interval or a shorter range`,
    );
  }
  return interval;
}

/** `limit`: 1–100 (default `fallback`). */
export function parseLimit(query: Query, fallback: number): number {
  const raw = one(query, 'limit', 'ADMIN_INVALID_LIMIT');
  if (raw === undefined || raw === '') return fallback;
  const n = /^\d{1,3}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(n >= 1 && n <= 100)) throw new AdminError('ADMIN_INVALID_LIMIT', `${quote(raw)}: a whole number 1 to 100`);
  return n;
}

/** A breakdown dimension. */
export function parseDimension(raw: string): StatsDimension {
  const dimension = STATS_DIMENSIONS.find((d) => d === raw);
  if (dimension === undefined) {
    throw new AdminError('ADMIN_INVALID_DIMENSION', `${quote(raw)}: ${STATS_DIMENSIONS.join(', ')}`);
  }
  return dimension;
}

/** Whether the answer is CSV: `?format=csv`, or an `Accept` that names `text/csv` (`?format=json` wins over it). */
export function wantsCsv(request: FastifyRequest): boolean {
  const format = one(request.query as Query, 'format', 'ADMIN_INVALID_FORMAT');
  if (format === 'csv') return true;
  if (format === 'json') return false;
  if (format !== undefined) throw new AdminError('ADMIN_INVALID_FORMAT', `${quote(format)}: json or csv`);
  return /(^|,)\s*text\/csv\s*(;|,|$)/i.test(request.headers.accept ?? '');
}

/**
 * The port and the domain of a `/stats/{domain}/…` request, in the order a
 * client can act on: the segment (400), history on (501), the domain known
 * (404).
 */
export async function statsDomain(ctx: AdminContext, raw: string): Promise<{ stats: StatsPort; domain: string }> {
  if (raw.length === 0) throw new AdminError('ADMIN_INVALID_DOMAIN', 'domain segment is empty');
  if (Buffer.byteLength(raw, 'utf8') > 253) throw new AdminError('ADMIN_INVALID_DOMAIN', 'longer than 253 bytes');
  if (!HOST_CHARS.test(raw)) throw new AdminError('ADMIN_INVALID_DOMAIN', `${quote(raw)} contains invalid characters`);
  const stats = statsPort(ctx);
  const domain = raw.toLowerCase();
  if (!(await stats.hasDomain(domain))) throw new AdminError('ADMIN_STATS_NOT_FOUND', quote(domain));
  return { stats, domain };
}

/** The stats port, or 501 when history is off. */
export function statsPort(ctx: AdminContext): StatsPort {
  if (ctx.stats === undefined) throw new AdminError('ADMIN_HISTORY_NOT_ENABLED');
  return ctx.stats;
}

type Cell = string | number;

/**
 * One CSV cell (RFC 4180): quoted when it holds a comma, a quote or a line
 * break. A text cell that a spreadsheet would run as a formula (it starts
 * with = + - @, a tab or a CR: referrers and UTM tags come from visitors) is
 * prefixed with `'`.
 */
export function csvCell(value: Cell): string {
  if (typeof value === 'number') return String(value);
  const text = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** A CSV document: the header row, then the rows, CRLF line ends. */
export function csv(header: readonly string[], rows: ReadonlyArray<readonly Cell[]>): string {
  return [header, ...rows].map((row) => `${row.map(csvCell).join(',')}\r\n`).join('');
}

/** Sends CSV. */
export function sendCsv(reply: FastifyReply, body: string): FastifyReply {
  return reply.type(CSV_CONTENT_TYPE).send(body);
}

/** RFC 3339 (UTC, ms) of an epoch ms time. */
export const rfc3339 = (ms: number): string => new Date(ms).toISOString();
