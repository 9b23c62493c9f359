export { type DaySlice, INTERVAL_MS, INTERVALS, type Interval, type Piece, planRange, type Range } from './buckets.js';
export { HISTORY_ERRORS, HistoryError, type HistoryErrorCode } from './errors.js';
export { FLEET_OUTBOX_MS, FLEET_RETENTION_MS, FleetHistory, type FleetLog, type FleetRollups } from './fleet.js';
export { decodeFleetBatch, encodeFleetBatch } from './fleet-codec.js';
export {
  FLUSH_ENV,
  flushPeriodFromEnv,
  HISTORY_FILE,
  HISTORY_TARGET,
  type HistoryFlushLog,
  type HistoryWiring,
  type RollupSource,
  startHistory,
} from './flush.js';
export { type HistoryLog, type HistoryOptions, openHistory, type SetAside } from './open.js';
export { DIMENSION_IDS, SCHEMA_VERSION } from './schema.js';
export {
  DAY_KEYS,
  DEFAULT_MAX_BYTES,
  DEFAULT_RETENTION,
  FLEET_MARK_MS,
  HistoryStore,
  HOUR_KEYS,
  MAX_POINTS,
  SALT_BYTES,
  TAIL_KEYS,
} from './store.js';
export type {
  BreakdownItem,
  PageVitalsItem,
  Retention,
  SeriesPoint,
  StatusTotals,
  Totals,
  VitalTotals,
  WriteResult,
} from './types.js';
