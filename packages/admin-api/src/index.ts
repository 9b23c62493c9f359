export { type AdminAppOptions, createAdminApp } from './app.js';
export type {
  AdminRoute,
  AnalyticsPort,
  AnalyticsSnapshot,
  AuditEvent,
  CachePort,
  MetricsPort,
  ReloadPort,
  RouteStorePort,
  RouteWrite,
  SnapshotResult,
  SnapshotWrite,
} from './ports.js';
export { HealthResponse } from './schemas.js';
