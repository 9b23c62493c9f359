import type { DatabaseSync } from 'node:sqlite';
import type { RollupDimension } from '@proxyd/analytics';

/** The schema's version (`PRAGMA user_version`); a file of another version is set aside. */
export const SCHEMA_VERSION = 1;

/**
 * The stored number of each breakdown dimension: fixed forever (a new
 * dimension takes a new number), so that the rows stay small and a change
 * of the analytics' list order changes nothing stored.
 */
export const DIMENSION_IDS: Readonly<Record<RollupDimension, number>> = Object.freeze({
  pages: 1,
  entry_pages: 2,
  referrers: 3,
  countries: 4,
  browsers: 5,
  os: 6,
  devices: 7,
  utm_source: 8,
  utm_medium: 9,
  utm_campaign: 10,
});

/**
 * The tables. Every row is keyed by domain (a number from `domains`), tier
 * (0 minute, 1 hour, 2 day) and bucket start `t` (epoch ms), so that every
 * query and every deletion is a range of a primary key.
 * - `series`: the counts of one bucket, and `visitors`, the estimate of its
 *   sketch (kept beside it so that a time series reads no sketch);
 * - `sketches`: the bucket's visitor HyperLogLog (`sketch.ts` encoding);
 * - `breakdowns`: page views per (bucket, dimension, key);
 * - `vitals`: good / needs-improvement / poor counts per (bucket, path);
 * - `salts`: the current UTC day's visitor salt (older days are deleted);
 * - `meta`: cursors of the compaction (`fold_hour`, `fold_day`);
 * - `fleet_batches`: the fleet batches (`storage redis`) already written
 *   here, by id, each with the time it was written ({@link FLEET_TABLE}).
 */
const TABLES = `
CREATE TABLE IF NOT EXISTS domains (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS series (
  domain INTEGER NOT NULL, tier INTEGER NOT NULL, t INTEGER NOT NULL,
  requests INTEGER NOT NULL, page_views INTEGER NOT NULL, bot_requests INTEGER NOT NULL, bytes_sent INTEGER NOT NULL,
  s1xx INTEGER NOT NULL, s2xx INTEGER NOT NULL, s3xx INTEGER NOT NULL, s4xx INTEGER NOT NULL, s5xx INTEGER NOT NULL,
  other INTEGER NOT NULL, visitors INTEGER NOT NULL,
  PRIMARY KEY (domain, tier, t)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sketches (
  domain INTEGER NOT NULL, tier INTEGER NOT NULL, t INTEGER NOT NULL, registers BLOB NOT NULL,
  PRIMARY KEY (domain, tier, t)
);
CREATE TABLE IF NOT EXISTS breakdowns (
  domain INTEGER NOT NULL, tier INTEGER NOT NULL, dimension INTEGER NOT NULL, t INTEGER NOT NULL,
  key TEXT NOT NULL, page_views INTEGER NOT NULL,
  PRIMARY KEY (domain, tier, dimension, t, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS vitals (
  domain INTEGER NOT NULL, tier INTEGER NOT NULL, t INTEGER NOT NULL, path TEXT NOT NULL,
  lcp_good INTEGER NOT NULL, lcp_ni INTEGER NOT NULL, lcp_poor INTEGER NOT NULL,
  cls_good INTEGER NOT NULL, cls_ni INTEGER NOT NULL, cls_poor INTEGER NOT NULL,
  inp_good INTEGER NOT NULL, inp_ni INTEGER NOT NULL, inp_poor INTEGER NOT NULL,
  PRIMARY KEY (domain, tier, t, path)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS salts (day INTEGER PRIMARY KEY, salt BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
`;

/**
 * The marks of the fleet batches written (issue 31): created in a file of
 * any version, so a database written before it needs no new version (and is
 * not set aside).
 */
const FLEET_TABLE =
  'CREATE TABLE IF NOT EXISTS fleet_batches (id TEXT PRIMARY KEY, at INTEGER NOT NULL) WITHOUT ROWID;';

/**
 * Sets the connection's pragmas and creates the tables of a new file.
 * WAL: a reader never waits for the writer and a crash loses only the
 * transaction in progress; `synchronous = FULL`: a committed flush survives
 * a power cut too (one fsync a minute); incremental auto-vacuum: pages that
 * retention and the size bound free are given back to the file system.
 * Returns the file's schema version before (0: new).
 */
export function prepareSchema(db: DatabaseSync): number {
  const version = Number((db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version);
  // auto_vacuum must be set before the first table exists: only a new file gets it.
  if (version === 0) db.exec('PRAGMA auto_vacuum = INCREMENTAL');
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = FULL');
  db.exec('PRAGMA foreign_keys = OFF');
  if (version === 0) {
    db.exec('BEGIN');
    db.exec(TABLES);
    db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
    db.exec('COMMIT');
  }
  if (version === 0 || version === SCHEMA_VERSION) db.exec(FLEET_TABLE);
  return version;
}
