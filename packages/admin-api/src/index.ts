export { DEFAULT_ADMIN_SOCKET, listenUnixSocket, type UnixSocketListener } from './admin-socket.js';
export { type AdminApp, type AdminAppOptions, AUDIT_TARGET, createAdminApp } from './app.js';
export { type AuthEvent, type AuthThrottleOptions, DEFAULT_AUTH_THROTTLE } from './auth-throttle.js';
export { writeClientError } from './client-error.js';
export { type AdminConnectionLimits, DEFAULT_ADMIN_CONNECTION_LIMITS } from './connection-limits.js';
export { MAX_DOMAIN_BYTES } from './domain.js';
export type { OpenApiServer } from './endpoint.js';
export { METRICS_CONTENT_TYPE } from './endpoints/metrics.js';
export { RELOAD_COOLDOWN_MS } from './endpoints/reload.js';
export { CSV_CONTENT_TYPE, MAX_STATS_POINTS } from './endpoints/stats-query.js';
export {
  STATS_DIMENSIONS,
  STATS_INTERVALS,
  StatsBreakdown,
  StatsDomains,
  StatsPoint,
  StatsTimeseries,
  StatsTotals,
  StatsVitals,
} from './endpoints/stats-schemas.js';
export { ADMIN_ERRORS, AdminError, type AdminErrorCode, type AdminErrorSpec } from './errors.js';
export { BODY_LIMIT_BYTES } from './json-body.js';
export {
  LISTENER_DRAIN_ACCEPT_MS,
  LISTENER_DRAIN_IDLE_MS,
  type ListenerDrain,
  trackForDrain,
} from './listener-drain.js';
export { ADMIN_API_VERSION, DEFAULT_SERVER, type OpenApiDocumentOptions, openApiDocument } from './openapi.js';
export type {
  AdminRoute,
  AnalyticsPort,
  AnalyticsSnapshot,
  AuditEvent,
  CachePort,
  CertificateInfo,
  CertificateState,
  CertificatesPort,
  ContainerWarning,
  DiscoveryPort,
  DiscoveryStatus,
  MetricsPort,
  ReloadPort,
  RouteStorePort,
  RouteWrite,
  SnapshotResult,
  SnapshotWrite,
  StatsBreakdownItem,
  StatsDimension,
  StatsInterval,
  StatsPageVitals,
  StatsPort,
  StatsRange,
  StatsRangeTotals,
  StatsSeriesPoint,
  StatsVitalCounts,
  StoragePort,
} from './ports.js';
export { DEFAULT_RATE_LIMIT } from './rate-limit.js';
export {
  AnalyticsList,
  CacheNotFound,
  CachePurged,
  Certificate,
  CertificateList,
  DiscoveryResponse,
  DiscoveryWarning,
  ErrorEnvelope,
  HealthResponse,
  ReloadResponse,
  ReloadTooSoon,
  Route,
  RouteCreate,
  RouteDeleted,
  RouteList,
  SnapshotRequest,
  SnapshotResponse,
  SnapshotRoute,
} from './schemas.js';
export { attachAdminServerHandlers, writeConnectRefused, writeExpectationFailed } from './server-events.js';
export { type AdminTimeouts, DEFAULT_ADMIN_TIMEOUTS } from './timeouts.js';
export { type AdminTransport, isUnixConnection } from './transport.js';
