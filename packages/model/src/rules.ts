/**
 * The model's rules without its schemas: automatic HTTPS, the value rules,
 * route snapshots and their changes, placeholders, the request record, the
 * site-step order, the stats-query rule, defaults and limits. Nothing here
 * loads `typebox` (about 18 MB of a Node process, 370 modules), so the data
 * plane's packages import their values from `@proxyd/model/rules` and
 * only types from `@proxyd/model`: a data-plane worker never builds a
 * schema it does not check (issue 32).
 */

export {
  type AutoHttpsDecision,
  type AutoHttpsOptions,
  autoHttpsFor,
  autoHttpsObtainsCertificates,
  autoHttpsRedirects,
  isHttpsSite,
} from './auto-https.js';
export { cachePurgeKey } from './cache-key.js';
export { addressDomain, CATCH_ALL_HOST, catchAllDomain, isCatchAllDomain } from './catch-all.js';
export { CowList, FrozenList } from './cow-list.js';
export {
  DEFAULTS,
  defaultGlobalOptions,
  defaultHistoryOptions,
  defaultReverseProxy,
  emptySite,
} from './defaults.js';
export { UNDER_ATTACK_MAX_DIFFICULTY } from './limits.js';
export {
  hasRequestPlaceholder,
  PLACEHOLDER_PATTERN,
  type PlaceholderRef,
  PREFIXED_PLACEHOLDERS,
  type PrefixedPlaceholder,
  REMAINDER_PLACEHOLDER,
  REQUEST_PLACEHOLDERS,
  type RequestPlaceholder,
  requestPlaceholder,
} from './placeholders.js';
export { REQUEST_EVENTS_KEY, RequestEvent, type RequestRecord } from './request-events.js';
export {
  changesFrom,
  frozenSnapshot,
  type RouteChanges,
  type RouteSnapshot,
  sizeOf,
  stateOf,
} from './route-snapshot.js';
export { SITE_DIRECTIVES, SITE_STEP_ORDER, type SiteStepName } from './site-steps.js';
export {
  DEFAULT_STATS_RANGE_MS,
  MAX_STATS_LIMIT,
  MAX_STATS_POINTS,
  MAX_STATS_RANGE_MS,
  parseStatsDimension,
  parseStatsDomain,
  parseStatsInterval,
  parseStatsLimit,
  parseStatsRange,
  parseStatsTime,
  STATS_DIMENSIONS,
  STATS_INTERVAL_MS,
  STATS_INTERVALS,
  type StatsDimension,
  type StatsInterval,
  type StatsQueryValue,
  type StatsRange,
  statsBucketCount,
} from './stats-query.js';
export {
  type HostPort,
  MAX_DOMAIN_BYTES,
  MAX_LABEL_BYTES,
  type Parsed,
  parseBindAddress,
  parseDomain,
  parseHeaderName,
  parseHost,
  parseHostName,
  parseHostPort,
  parsePort,
  parseRate,
} from './values.js';
