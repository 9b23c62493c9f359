export {
  AnalyticsCollector,
  type CollectorOptions,
  type CountryLookup,
  DEFAULT_CYCLE_MS,
  DEFAULT_MAX_DOMAINS,
  RESERVED_PREFIX,
} from './collector.js';
export { TOP_CAPACITY, WINDOW_1M, WINDOW_60M } from './domain-collector.js';
export { ANALYTICS_ERRORS, AnalyticsError, type AnalyticsErrorCode } from './errors.js';
export { HyperLogLog } from './hyperloglog.js';
export { type AnalyticsSnapshot, AnalyticsSnapshotSchema } from './snapshot.js';
export { SpaceSaving, type TopItem } from './space-saving.js';
export { PENDING_LIMIT, type Percentiles, VitalDigest } from './vital-digest.js';
