export { type AdminRouteView, type ApiRouteRecord, apiRouteSpec, toAdminRoute } from './api-route.js';
export { StoreError, StoreErrorCode } from './errors.js';
export { FleetRoutes, type FleetRoutesOptions } from './fleet-routes.js';
export {
  DECLARED_ORIGINS,
  type Declarations,
  type DeclaredOrigin,
  fallbackRoute,
  mayTake,
  ORIGINS,
  type OriginRule,
} from './precedence.js';
export { type DesiredRoute, routeHash } from './route-hash.js';
export {
  MAX_ROUTES,
  type RouteListener,
  RouteStore,
  type RouteStoreOptions,
  type SnapshotInput,
  type SnapshotOutcome,
} from './route-store.js';
export type { RouteSink } from './sink.js';
export { ensureStateDir, resolveStateDir, type StateDirCheck, type StateDirLog } from './state-dir.js';
export {
  parseRecordLine,
  type RecoveredState,
  recordLine,
  STATE_FORMAT,
  StateFile,
  StateFileContent,
} from './state-file.js';
export { formatUpstream, parseUpstream } from './upstream.js';
