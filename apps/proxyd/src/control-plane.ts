import {
  type AdminConnectionLimits,
  AdminError,
  type AdminTimeouts,
  type AnalyticsPort,
  type AuditEvent,
  type AuthEvent,
  attachAdminServerHandlers,
  type CachePort,
  type CertificatesPort,
  createAdminApp,
  type DiscoveryPort,
  listenUnixSocket,
  type RouteStorePort,
  type StatsPort,
  type StoragePort,
  trackForDrain,
  type UnixSocketListener,
} from '@proxyd/admin-api';
import { type Config, DEFAULTS, type HostPort, parseHostPort } from '@proxyd/model';
import type { Reloader } from '@proxyd/proxyfile';
import { type RouteStore, StoreError, StoreErrorCode } from '@proxyd/route-store';
import type { MetricsExposition } from '@proxyd/telemetry';
import { AUDIT_TARGET, type Logging } from '@proxyd/telemetry';

/**
 * Shortest `PROXY_ADMIN_TOKEN` proxyd starts without a warning, in
 * characters: 32 random hex characters are 128 bits (`openssl rand -hex 32`
 * gives 64). Wrong tokens are throttled per client, not across clients.
 */
export const MIN_ADMIN_TOKEN_LENGTH = 32;

/** What the admin API's route endpoints write through: the store, or a fleet node's {@link FleetRoutes}. */
type RouteWriter = Pick<RouteStore, 'list' | 'upsert' | 'remove' | 'applySnapshot'>;

/**
 * The route store as the admin API's port: a write refused for the route
 * limit is `409 route limit reached: …` (the client can delete routes
 * first), not an internal error; with `storage redis`, a write while Redis
 * does not answer is `503 storage unavailable: …` (nothing applied).
 */
function routesPort(store: RouteWriter): RouteStorePort {
  const mapped = (err: unknown): never => {
    if (err instanceof StoreError && err.code === StoreErrorCode.ROUTE_LIMIT) {
      throw new AdminError('ADMIN_ROUTE_LIMIT', err.message.replace(/^route limit reached: /, ''), { cause: err });
    }
    if (err instanceof StoreError && err.code === StoreErrorCode.FLEET_UNAVAILABLE) {
      throw new AdminError('ADMIN_STORAGE_UNAVAILABLE', err.message, {
        cause: err,
        headers: { 'retry-after': String(STORAGE_RETRY_AFTER_S) },
      });
    }
    throw err;
  };
  return {
    list: () => store.list(),
    upsert: (route) => store.upsert(route).catch(mapped),
    remove: (domain) => store.remove(domain).catch(mapped),
    applySnapshot: (snapshot) => store.applySnapshot(snapshot).catch(mapped),
  };
}

/** `Retry-After` of a 503 `storage unavailable`, s: ioredis tries to reconnect every 0.2-2 s. */
const STORAGE_RETRY_AFTER_S = 2;

/** The admin listeners and everything they drive. */
export interface ControlPlane {
  adminAddress: { host: string; port: number };
  /** The Unix socket path, or null without `--admin-socket`. */
  socketPath: string | null;
  /**
   * Both listeners stop accepting and answer the calls they accepted
   * within `graceMs` (default 0: cut them), then close (`listener-drain.ts`).
   */
  close(graceMs?: number): Promise<void>;
}

/** What the admin API is wired to. */
export interface ControlPlaneOptions {
  config: Config;
  /** `--admin host:port`, else the Proxyfile's `admin`, else 127.0.0.1:6190. */
  admin?: string | undefined;
  /** Unix socket path (`--admin-socket`); undefined: no socket listener. */
  adminSocket?: string | undefined;
  /** `PROXY_ADMIN_TOKEN` as read at start. */
  token: string | undefined;
  store: RouteStore;
  /** With `storage redis`: route writes go to the fleet (the store holds this node's copy). */
  fleetRoutes?: RouteWriter | undefined;
  /** Undefined without a Proxyfile (POST /reload answers 501). */
  reloader: Reloader | undefined;
  /** Undefined with `--no-metrics` (GET /metrics answers 404). */
  metrics: MetricsExposition | undefined;
  cache: CachePort | undefined;
  analytics: AnalyticsPort | undefined;
  /** `GET /certificates`; absent with `auto_https off`. */
  certificates: CertificatesPort | undefined;
  /** The shared storage (global option `storage redis`): its state in `GET /health`; undefined with the cert dir. */
  storage?: StoragePort | undefined;
  /** `GET /discovery`: container discovery's state and label warnings. */
  discovery: DiscoveryPort | undefined;
  /** `GET /stats…`: the history store; undefined with `history off` (501). */
  stats?: StatsPort | undefined;
  logging: Logging;
  /** Process start, ms since the epoch. */
  startedAt: number;
  /** Connection timeouts of both admin listeners, in ms (default: the admin app's `DEFAULT_ADMIN_TIMEOUTS`); for tests. */
  adminTimeouts?: Partial<AdminTimeouts> | undefined;
  /** Connections the TCP admin listener holds (default: the admin app's 64 per client, 1 024 in all); for tests. */
  adminConnectionLimits?: Partial<AdminConnectionLimits> | undefined;
}

/**
 * Splits a listen address `host:port` by the model's `parseHostPort` rule
 * (IPv6 in brackets, returned without them); port 0 asks the OS for a free one.
 */
export function splitHostPort(value: string): HostPort {
  const parsed = parseHostPort(value, true);
  if (!parsed.ok) throw new Error(`invalid listen address "${value}", expected host:port`);
  return parsed.value;
}

/** Starts the admin API on TCP and, when asked, on a Unix socket: one app, two listeners. */
export async function startControlPlane(options: ControlPlaneOptions): Promise<ControlPlane> {
  const { config, logging } = options;
  const admin = splitHostPort(options.admin ?? config.global.admin ?? DEFAULTS.admin);
  const adminLog = logging.forTarget('proxy::admin');
  const auditLog = logging.forTarget(AUDIT_TARGET);
  const audit = (event: AuditEvent) =>
    auditLog.info(
      { action: event.action, principal: event.principal, resource: event.resource },
      `${event.action} ${event.resource}`,
    );
  // Failed authentication goes to the audit target at WARN: the client and a count, never the token.
  const authEvents = (event: AuthEvent) =>
    auditLog.warn(
      { ...event },
      event.action === 'auth_lockout'
        ? `admin authentication: ${event.client} locked out for ${event.retry_after} s after ${event.failures} wrong tokens`
        : `admin authentication: wrong token from ${event.client}`,
    );
  if (options.token === undefined || options.token === '') {
    adminLog.warn(
      'PROXY_ADMIN_TOKEN is not set: every authenticated request on the TCP admin listener will be rejected (401)',
    );
  } else if (options.token.length < MIN_ADMIN_TOKEN_LENGTH) {
    adminLog.warn(
      { token_length: options.token.length, min_length: MIN_ADMIN_TOKEN_LENGTH },
      `PROXY_ADMIN_TOKEN is ${options.token.length} characters long: use at least ${MIN_ADMIN_TOKEN_LENGTH} random characters (e.g. openssl rand -hex 32); guesses are throttled per client, not across clients`,
    );
  }
  const timeouts = options.adminTimeouts ?? {};
  const app = createAdminApp({
    routes: routesPort(options.fleetRoutes ?? options.store),
    timeouts,
    ...(options.adminConnectionLimits ? { connectionLimits: options.adminConnectionLimits } : {}),
    token: options.token,
    audit,
    authEvents,
    startedAt: options.startedAt,
    logger: adminLog,
    ...(options.reloader ? { reload: options.reloader } : {}),
    ...(options.metrics ? { metrics: options.metrics, metricsRegistry: options.metrics.registry } : {}),
    ...(options.cache ? { cache: options.cache } : {}),
    ...(options.analytics ? { analytics: options.analytics } : {}),
    ...(options.certificates ? { certificates: options.certificates } : {}),
    ...(options.storage ? { storage: options.storage } : {}),
    ...(options.discovery ? { discovery: options.discovery } : {}),
    ...(options.stats ? { stats: options.stats } : {}),
  });
  const tcp = trackForDrain(app.server);
  await app.listen({ host: admin.host, port: admin.port });
  const bound = app.server.address();
  let socket: UnixSocketListener | null = null;
  if (options.adminSocket !== undefined) {
    try {
      socket = await listenUnixSocket(options.adminSocket, (req, res) => app.routing(req, res), {
        // Unparsable HTTP and an unmet Expect get the envelope and CORS header, and the timeouts are those of TCP.
        configure: (server) => attachAdminServerHandlers(server, { timeouts }),
      });
    } catch (err) {
      await app.close();
      throw err;
    }
    adminLog.info({ socket: socket.path }, 'admin API listening on a Unix socket');
  }
  return {
    adminAddress: { host: admin.host, port: typeof bound === 'object' && bound ? bound.port : admin.port },
    socketPath: socket?.path ?? null,
    async close(graceMs = 0) {
      // The app closes (its onClose hooks) after the drain: closing first would answer 503 to calls it accepted.
      await Promise.all([tcp.drain(graceMs).then(() => app.close()), socket?.close(graceMs)]);
    },
  };
}
