import {
  MAX_STATS_POINTS,
  type Parsed,
  parseStatsDimension,
  parseStatsDomain,
  parseStatsInterval,
  parseStatsLimit,
  parseStatsRange,
  type StatsQueryValue,
} from '@proxyd/model';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AdminContext } from '../endpoint.js';
import { AdminError, type AdminErrorCode, quote } from '../errors.js';
import type { StatsDimension, StatsInterval, StatsPort, StatsRange } from '../ports.js';

export { MAX_STATS_POINTS };
/** Content type of a CSV answer. */
export const CSV_CONTENT_TYPE = 'text/csv; charset=utf-8';

type Query = Record<string, StatsQueryValue>;

/** The value, or the model's problem as a 400 of `code`. */
function take<T>(parsed: Parsed<T>, code: AdminErrorCode): T {
  if (!parsed.ok) throw new AdminError(code, parsed.problem);
  return parsed.value;
}

/** `from` and `to` of the query: the model's stats-query rule (`parseStatsRange`). */
export function parseRange(query: Query, now: number): StatsRange {
  return take(parseStatsRange(query.from, query.to, now), 'ADMIN_INVALID_RANGE');
}

/** `interval` (default hour): the model's rule (`parseStatsInterval`, at most 1,500 buckets). */
export function parseInterval(query: Query, range: StatsRange): StatsInterval {
  return take(parseStatsInterval(query.interval, range), 'ADMIN_INVALID_INTERVAL');
}

/** `limit`: 1–100 (default `fallback`), the model's rule. */
export function parseLimit(query: Query, fallback: number): number {
  return take(parseStatsLimit(query.limit, fallback), 'ADMIN_INVALID_LIMIT');
}

/** A breakdown dimension, the model's rule. */
export function parseDimension(raw: string): StatsDimension {
  return take(parseStatsDimension(raw), 'ADMIN_INVALID_DIMENSION');
}

/** Whether the answer is CSV: `?format=csv`, or an `Accept` that names `text/csv` (`?format=json` wins over it). */
export function wantsCsv(request: FastifyRequest): boolean {
  const format = (request.query as Query).format;
  if (typeof format === 'object')
    throw new AdminError('ADMIN_INVALID_FORMAT', `format is given ${format.length} times`);
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
  const domain = take(parseStatsDomain(raw), 'ADMIN_INVALID_DOMAIN');
  const stats = statsPort(ctx);
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
