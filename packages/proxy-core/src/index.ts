/**
 * The data plane's public entry, curated: what the composition root
 * (`apps/proxyd`), analytics (types only), the dashboard (its `basic_auth`
 * check), the benchmarks and the packaging test use, plus the options and
 * the ports of `DataPlane` the certificates package implements (`ChallengeResponder` for HTTP-01,
 * `AlpnChallengeResponder` for TLS-ALPN-01, the `CertificateStore` by SNI).
 * Everything else is internal. The config model is `@proxyd/model`.
 */
export { CacheRegistry } from './cache/response-cache.js';
export {
  SharedCache,
  type SharedCacheLink,
  type SharedCacheOptions,
  type SharedCacheUpdate,
  type SharedEntryData,
} from './cache/shared-cache.js';
export type { ChallengeResponder } from './challenge.js';
export {
  type ConnectionCounter,
  ConnectionCounts,
  LISTENER_DEFAULTS,
  type ListenerLimits,
  listenerLimitsOf,
} from './connection-limits.js';
export { DataPlane, type DataPlaneOptions } from './data-plane/data-plane.js';
export { ProxyServer } from './data-plane/proxy-server.js';
export {
  composeHooks,
  type DataPlaneHooks,
  markRequest,
  type RequestContext,
  RequestEvent,
  type RequestRecord,
} from './hooks.js';
export {
  AUTH_BUSY,
  AUTH_DENIED,
  AUTH_OK,
  BasicAuthenticator,
  type BasicAuthOptions,
  type PasswordVerifier,
} from './middleware/basic-auth.js';
export { RateLimiter, rateLimitKey } from './middleware/rate-limiter.js';
export type { HealthEvent, HealthSharing } from './pool/upstream-pool.js';
export { RouteTable } from './route-table.js';
export type { RateLimitCounter } from './site-handler.js';
export { type CertificatePair, type CertificateStore, MemoryCertificateStore } from './tls/certificate-store.js';
export type { AlpnChallengeResponder } from './tls/handshake.js';
export {
  DEFAULT_WORKER_CERTIFICATE_CACHE_CAPACITY,
  type PulledCacheStats,
  type PulledCertificate,
  type PulledCertificateChanges,
  PulledCertificateStore,
  type PulledCertificateStoreOptions,
} from './tls/pulled-certificate-store.js';
