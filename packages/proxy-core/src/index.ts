export { CacheRegistry, cacheLifetimeMs, ResponseCache } from './cache/response-cache.js';
export { ACME_CHALLENGE_PREFIX, type ChallengeResponder, isChallengePath } from './challenge.js';
export { ClientIpResolver } from './client-ip.js';
export { DataPlane, type DataPlaneOptions, type ListenerAddress } from './data-plane/data-plane.js';
export {
  type SitePort,
  type SitePortConflict,
  type SitePorts,
  servedOn,
  sitePortsOf,
} from './data-plane/site-ports.js';
export { DataPlaneError, DataPlaneErrorCode } from './errors.js';
export { compileFallbackSite } from './fallback-site.js';
export { AgentPool, ConnectTimeoutError } from './forward/agents.js';
export { HttpForwarder, type HttpForwarderOptions } from './forward/forwarder.js';
export type { DataPlaneHooks, RequestContext, RequestRecord } from './hooks.js';
export { composeHooks, SMALL_BODY_BYTES } from './hooks.js';
export { CHALLENGE_PATH, CLEARANCE_COOKIE } from './middleware/under-attack.js';
export * from './model/index.js';
export type { CompiledSite, Forwarder, ForwardOptions, ResponseObserver } from './pipeline.js';
export { type PoolMember, UpstreamPool } from './pool/upstream-pool.js';
export { ProxyServer, type ProxyServerOptions, type SiteCompilerWithForwarder } from './proxy-server.js';
export { type HttpsRuleSubject, httpsLocation, isHttpsSite, wantsHttps } from './redirect.js';
export { normalizeHost, type Route, RouteTable, type SiteCompiler } from './route-table.js';
export { compileSite, createSiteCompiler, type SiteDeps, type SitePipeline } from './site-handler.js';
export {
  type CertificatePair,
  type CertificateStore,
  loadManualCertificates,
  MemoryCertificateStore,
} from './tls/certificate-store.js';
