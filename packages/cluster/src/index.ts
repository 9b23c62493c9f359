export { Channel, ChannelError, type Handler, type IpcEndpoint } from './channel.js';
export { CacheIndex, type CacheIndexUpdate, type SharedCacheEntry } from './contract/cache-index.js';
export { CertificateSync } from './contract/certificate-sync.js';
export {
  type CertificateSource,
  type ConnectionCountsLike,
  Fleet,
  type FleetOptions,
  type NodeJoin,
  type NodeSet,
  ROUTE_ACK_WAIT_MS,
} from './contract/fleet.js';
export {
  FLEET_RATE_SYNC_MS,
  FleetRateLimits,
  type FleetRateLimitsOptions,
  type RateWindowExchange,
} from './contract/fleet-rate-limits.js';
export type {
  CertificateMode,
  CertificatePem,
  CertificateSupply,
  CertificateUpdate,
  Challenge,
  DataPlaneNode,
  FleetPort,
  HealthEvent,
  NodeStats,
  RouteAck,
  Telemetry,
} from './contract/node.js';
export { type Limiter, RateLimitAuthority } from './contract/rate-limits.js';
export { NodeRoutes, RoutePublisher, type RouteUpdate, SiteIds } from './contract/route-tables.js';
export { CONNECTIONS_ACQUIRE, CONNECTIONS_RELEASE, RemoteConnectionCounter } from './ipc/connection-counts.js';
export { ToPrimary, ToWorker, type WorkerInit, type WorkerReady } from './ipc/protocol.js';
export { RATE_LIMIT_ADMIT, RemoteRateLimits } from './ipc/rate-limits.js';
export { reusePortMigration, TCP_MIGRATE_REQ } from './ipc/reuseport-migration.js';
export { decodeRouteUpdate, encodeRouteUpdate } from './ipc/route-encoding.js';
export { type FleetLink, serveNode, serveNodeOverIpc, type WorkerNodeHandlers } from './ipc/serve-node.js';
export { startWorkerNodes, type WorkerNodesOptions } from './ipc/worker-nodes.js';
export { connectToPrimary, type WorkerHandlers } from './worker.js';
export { DRAIN, INIT, WorkerPool, type WorkerPoolOptions } from './worker-pool.js';
