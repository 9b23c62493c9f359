export type { DataPlaneHooks, RequestContext, RequestRecord } from './hooks.js';
export * from './model/index.js';
export type { CompiledSite, Forwarder, ForwardOptions } from './pipeline.js';
export { ProxyServer, type ProxyServerOptions } from './proxy-server.js';
export { RouteTable } from './route-table.js';
export { routesFromConfig } from './routes.js';
export {
  type AdminRouteView,
  type ApiRouteRecord,
  apiRouteSpec,
  type DesiredRoute,
  formatUpstream,
  parseUpstream,
  type RecoveredState,
  type RouteListener,
  RouteStore,
  type RouteStoreOptions,
  routeHash,
  type SnapshotInput,
  type SnapshotOutcome,
  STATE_FORMAT,
  StateFile,
  StateFileContent,
  StoreError,
  StoreErrorCode,
  toAdminRoute,
} from './store/index.js';
