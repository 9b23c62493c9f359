/**
 * The config model: plain data that the Proxyfile compiles into, that route
 * sources (admin API, container labels) produce, and that the data plane
 * builds its RouteTable from; and the rules every package must agree on.
 * TypeBox schemas and pure functions only: no runtime weight beyond
 * `typebox`, no I/O, so every package (and a browser bundle) can import it.
 *
 * Conventions: durations are integers in milliseconds (`*_ms`), sizes in
 * bytes, host names lowercase. Every schema and its static type share a name.
 */

export { BindAddress, Port, SiteAddress, UpstreamAddress } from './addresses.js';
export {
  type AutoHttpsDecision,
  type AutoHttpsOptions,
  autoHttpsFor,
  autoHttpsObtainsCertificates,
  autoHttpsRedirects,
  isHttpsSite,
} from './auto-https.js';
export { addressDomain, CATCH_ALL_HOST, catchAllDomain, isCatchAllDomain } from './catch-all.js';
export { Config } from './config.js';
export {
  DEFAULTS,
  defaultGlobalOptions,
  defaultHistoryOptions,
  defaultReverseProxy,
  emptySite,
} from './defaults.js';
export {
  BasicAuth,
  CacheConfig,
  ENCODE_DEFAULT_ENCODINGS,
  ENCODE_DEFAULT_MINIMUM_LENGTH,
  EncodeConfig,
  Encoding,
  Redirect,
  UNDER_ATTACK_MAX_DIFFICULTY,
  UnderAttack,
} from './directives.js';
export { DnsChallengeConfig, DnsProviderConfig } from './dns-challenge.js';
export { DashboardOptions, DockerOptions, GlobalOptions, HistoryOptions, ServerOptions } from './global-options.js';
export {
  AbortHandler,
  FileServerHandler,
  Handler,
  HeaderOp,
  HealthCheck,
  LbPolicy,
  RespondHandler,
  ReverseProxyHandler,
  UpstreamTls,
} from './handlers.js';
export {
  HeaderMatch,
  HeaderRegexpMatch,
  MatcherConditions,
  MatcherName,
  QueryMatch,
  RegexpMatch,
  RequestMatcher,
} from './matchers.js';
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
export { changesFrom, type RouteChanges, type RouteSnapshot } from './route-snapshot.js';
export { RouteOrigin, RouteSpec } from './routes.js';
export {
  CopyHeader,
  ErrorHandleBlock,
  ForwardAuth,
  HandleBlock,
  Rewrite,
  Site,
  TryFiles,
  UriOp,
} from './site.js';
export { LOG_DEFAULTS, LogOutput, LogRoll, SiteLog } from './site-log.js';
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
export { RedisStorageConfig, RedisTlsOptions } from './storage-options.js';
export { AcmeDirectoryUrl, AcmeEab, AutoHttps, KeyType, TlsPolicy } from './tls.js';
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
