export { type Analytics, type AnalyticsOptions, createAnalytics } from './analytics.js';
export {
  ANALYTICS_STATE_VERSION,
  type AnalyticsState,
  type MergedAnalytics,
  mergeAnalyticsStates,
} from './analytics-state.js';
export { BEACON_RATE_PER_SECOND, COLLECT_PATH, MAX_BEACON_BYTES, parseBeacon, VITAL_LIMITS } from './beacon.js';
export {
  AnalyticsCollector,
  type CollectorOptions,
  type CountryLookup,
  DEFAULT_CYCLE_MS,
  DEFAULT_MAX_DOMAINS,
  type DomainCapReached,
  MIN_SALT_BYTES,
  RESERVED_PREFIX,
} from './collector.js';
export { type DomainState, MAX_KEY_LENGTH, TOP_CAPACITY, WINDOW_1M, WINDOW_60M } from './domain-collector.js';
export { ANALYTICS_ERRORS, AnalyticsError, type AnalyticsErrorCode } from './errors.js';
export { defaultGeoipPath, openCountryLookup } from './geoip.js';
export { HyperLogLog } from './hyperloglog.js';
export {
  type Coding,
  createInjector,
  DEFAULT_INJECT_LIMITS,
  type InjectLimits,
  type Injector,
  injectableCoding,
  sharesInjectedHeaders,
} from './inject.js';
export { MINUTE_MS, ROLLUP_BACKLOG_MINUTES } from './minute-rollups.js';
export { isHtml, isPageView } from './page-view.js';
export {
  addPageVitals,
  emptyPageVitals,
  emptyRollup,
  emptyVitalCounts,
  type MinuteRollup,
  mergeRollups,
  type PageVitals,
  ROLLUP_DIMENSIONS,
  ROLLUP_HLL_PRECISION,
  ROLLUP_MAX_KEYS,
  ROLLUP_MAX_VITAL_PATHS,
  ROLLUP_OTHER_KEY,
  type RollupDimension,
  type RollupVital,
  rateVital,
  type StatusCounts,
  VITAL_THRESHOLDS,
  type VitalCounts,
} from './rollup.js';
export { loadScriptAsset, SCRIPT_PATH, type ScriptAsset } from './script-asset.js';
export { type LoadedSecret, loadSecretFile, SECRET_BYTES, SECRET_FILE_NAME } from './secret-file.js';
// The schema is its own entry (`@proxyd/analytics/schema`): `typebox` stays out of the data plane (issue 32).
export type { AnalyticsSnapshot } from './snapshot.js';
export { SpaceSaving, type TopItem, type TopListState } from './space-saving.js';
export { BeaconTokens, TOKEN_VALID_WINDOWS, TOKEN_WINDOW_MS } from './token.js';
export { classifyUserAgent, type DeviceClass, UserAgentCache, type UserAgentInfo } from './user-agent.js';
export { parseUtm, type UtmParams } from './utm.js';
export { PENDING_LIMIT, type Percentiles, VitalDigest, type VitalState } from './vital-digest.js';
export {
  ANALYTICS_TARGET,
  type AnalyticsLog,
  type AnalyticsWiring,
  type AnalyticsWiringOptions,
  CYCLE_ENV,
  createAnalyticsWiring,
  cycleFromEnv,
} from './wiring.js';
