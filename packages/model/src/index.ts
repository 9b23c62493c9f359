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
export { Config } from './config.js';
export {
  BasicAuth,
  CacheConfig,
  ENCODE_DEFAULT_ENCODINGS,
  ENCODE_DEFAULT_MINIMUM_LENGTH,
  EncodeConfig,
  Encoding,
  Redirect,
  UnderAttack,
} from './directives.js';
export { DnsChallengeConfig, DnsProviderConfig } from './dns-challenge.js';
export type {
  FleetEntry,
  FleetFollower,
  FleetPosition,
  FleetRouteLog,
  FleetRouteRecord,
  FleetWrite,
  FleetWriteResult,
} from './fleet-log.js';
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
export { RouteOrigin, RouteSpec } from './routes.js';
export * from './rules.js';
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
export { RedisStorageConfig, RedisTlsOptions, redisStorageDefaults } from './storage-options.js';
export { AcmeDirectoryUrl, AcmeEab, AutoHttps, KeyType, TlsPolicy } from './tls.js';
