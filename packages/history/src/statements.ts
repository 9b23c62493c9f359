import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { ROLLUP_OTHER_KEY } from '@proxyd/analytics';

/** A row as node:sqlite returns it. */
export type Row = Record<string, number | bigint | string | null | Uint8Array>;
/** A column's number (NULL: 0). */
export const num = (v: unknown): number => Number(v ?? 0);

/** The count columns of `series`, in the order a bucket adds them. */
export const COUNTS = ['requests', 'page_views', 'bot_requests', 'bytes_sent'] as const;
/** The status-class columns of `series`, after {@link COUNTS}. */
export const STATUS = ['s1xx', 's2xx', 's3xx', 's4xx', 's5xx', 'other'] as const;
/** The columns of `vitals`: good, needs improvement, poor, per metric (LCP, CLS, INP). */
export const VITAL_COLUMNS = [
  'lcp_good',
  'lcp_ni',
  'lcp_poor',
  'cls_good',
  'cls_ni',
  'cls_poor',
  'inp_good',
  'inp_ni',
  'inp_poor',
] as const;
/** A `vitals` row's samples, as SQL. */
export const SAMPLES_SQL = VITAL_COLUMNS.join(' + ');

/** Every statement the store runs, prepared once per database, by name. */
export function prepareStatements(db: DatabaseSync): Record<string, StatementSync> {
  const p = (sql: string) => db.prepare(sql);
  return {
    domainId: p('SELECT id FROM domains WHERE name = ?'),
    addDomain: p('INSERT INTO domains (name) VALUES (?) ON CONFLICT (name) DO NOTHING'),
    getSketch: p('SELECT registers FROM sketches WHERE domain = ? AND tier = ? AND t = ?'),
    putSketch: p('INSERT OR REPLACE INTO sketches (domain, tier, t, registers) VALUES (?, ?, ?, ?)'),
    upsertSeries: p(
      `INSERT INTO series (domain, tier, t, ${[...COUNTS, ...STATUS].join(', ')}, visitors)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (domain, tier, t) DO UPDATE SET
         ${[...COUNTS, ...STATUS].map((c) => `${c} = ${c} + excluded.${c}`).join(', ')}, visitors = excluded.visitors`,
    ),
    upsertBreakdown: p(
      `INSERT INTO breakdowns (domain, tier, dimension, t, key, page_views) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (domain, tier, dimension, t, key) DO UPDATE SET page_views = page_views + excluded.page_views`,
    ),
    upsertVitals: p(
      `INSERT INTO vitals (domain, tier, t, path, ${VITAL_COLUMNS.join(', ')})
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (domain, tier, t, path) DO UPDATE SET
         ${VITAL_COLUMNS.map((c) => `${c} = ${c} + excluded.${c}`).join(', ')}`,
    ),
    series: p(
      `SELECT t, ${COUNTS.join(', ')}, visitors FROM series WHERE domain = ? AND tier = ? AND t >= ? AND t < ? ORDER BY t`,
    ),
    sums: p(
      `SELECT ${[...COUNTS, ...STATUS].map((c) => `SUM(${c}) AS ${c}`).join(', ')}, SUM(visitors) AS visitors
         FROM series WHERE domain = ? AND tier = ? AND t >= ? AND t < ?`,
    ),
    sketches: p('SELECT registers FROM sketches WHERE domain = ? AND tier = ? AND t >= ? AND t < ?'),
    breakdown: p(
      `SELECT key, SUM(page_views) AS n FROM breakdowns
         WHERE domain = ? AND tier = ? AND dimension = ? AND t >= ? AND t < ? GROUP BY key`,
    ),
    vitals: p(
      `SELECT path, ${VITAL_COLUMNS.map((c) => `SUM(${c}) AS ${c}`).join(', ')} FROM vitals
         WHERE domain = ? AND tier = ? AND t >= ? AND t < ? GROUP BY path`,
    ),
    domains: p(
      'SELECT name FROM domains WHERE EXISTS (SELECT 1 FROM series WHERE series.domain = domains.id) ORDER BY name',
    ),
    hasSeries: p('SELECT 1 AS x FROM series WHERE domain = ? LIMIT 1'),
    allIds: p('SELECT id FROM domains'),
    bucketsIn: p('SELECT t FROM series WHERE domain = ? AND tier = ? AND t >= ? AND t < ?'),
    oldestBucket: p('SELECT t FROM series WHERE domain = ? AND tier = ? ORDER BY t LIMIT 1'),
    breakdownTail: p(
      `SELECT key, page_views FROM breakdowns WHERE domain = ? AND tier = ? AND dimension = ? AND t = ? AND key <> '${ROLLUP_OTHER_KEY}'
         ORDER BY page_views DESC, key LIMIT -1 OFFSET ?`,
    ),
    deleteBreakdownKey: p(
      'DELETE FROM breakdowns WHERE domain = ? AND tier = ? AND dimension = ? AND t = ? AND key = ?',
    ),
    vitalsTail: p(
      `SELECT path, ${VITAL_COLUMNS.join(', ')} FROM vitals WHERE domain = ? AND tier = ? AND t = ? AND path <> '${ROLLUP_OTHER_KEY}'
         ORDER BY ${SAMPLES_SQL} DESC, path LIMIT -1 OFFSET ?`,
    ),
    deleteVitalsPath: p('DELETE FROM vitals WHERE domain = ? AND tier = ? AND t = ? AND path = ?'),
    deleteSeries: p('DELETE FROM series WHERE domain = ? AND tier = ? AND t >= ? AND t < ?'),
    deleteSketches: p('DELETE FROM sketches WHERE domain = ? AND tier = ? AND t >= ? AND t < ?'),
    deleteVitals: p('DELETE FROM vitals WHERE domain = ? AND tier = ? AND t >= ? AND t < ?'),
    deleteBreakdowns: p('DELETE FROM breakdowns WHERE domain = ? AND tier = ? AND dimension = ? AND t >= ? AND t < ?'),
    dropEmptyDomains: p('DELETE FROM domains WHERE NOT EXISTS (SELECT 1 FROM series WHERE series.domain = domains.id)'),
    getMeta: p('SELECT value FROM meta WHERE key = ?'),
    setMeta: p('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)'),
    putBatch: p('INSERT OR IGNORE INTO fleet_batches (id, at) VALUES (?, ?)'),
    hasBatch: p('SELECT 1 AS x FROM fleet_batches WHERE id = ?'),
    expireBatches: p('DELETE FROM fleet_batches WHERE at < ?'),
    getSalt: p('SELECT salt FROM salts WHERE day = ?'),
    putSalt: p('INSERT OR REPLACE INTO salts (day, salt) VALUES (?, ?)'),
    dropSalts: p('DELETE FROM salts WHERE day <> ?'),
    pageCount: p('PRAGMA page_count'),
    freePages: p('PRAGMA freelist_count'),
    pageSize: p('PRAGMA page_size'),
  };
}
