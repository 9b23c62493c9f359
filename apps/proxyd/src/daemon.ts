import net from 'node:net';
import { hostname } from 'node:os';
import path from 'node:path';
import { loadSecretFile, SECRET_FILE_NAME } from '@proxyd/analytics';
import type { CertificateWiring } from '@proxyd/certificates';
import { DEFAULT_CERT_DIR } from '@proxyd/certificates/file-storage';
import type { Fleet } from '@proxyd/cluster';
import { startDockerDiscovery } from '@proxyd/docker-source';
import { HISTORY_TARGET, startHistory } from '@proxyd/history';
import { autoHttpsRedirects, type Config, type RouteSnapshot, type RouteSpec, type Site } from '@proxyd/model';
import { createReloader, type ReloadResult, routesFromConfig } from '@proxyd/proxyfile';
import {
  ensureStateDir,
  FleetRoutes,
  parseRecordLine,
  RouteStore,
  recordLine,
  resolveStateDir,
} from '@proxyd/route-store';
import type { Logging } from '@proxyd/telemetry';
import { countReloads, createMetrics, SITE_LOG_TARGET, SiteLogOutputs } from '@proxyd/telemetry';
import type { Logger } from 'pino';
import { fleetChallengeTable, startServing } from './cluster/serving.js';
import { splitHostPort, startControlPlane } from './control-plane.js';
import type { DashboardListener } from './dashboard.js';
import { type MetricsListener, startMetricsListener } from './metrics-listener.js';

export { loadProxyfile } from '@proxyd/proxyfile';

/** What starts a daemon: a parsed config and where it came from. */
export interface DaemonOptions {
  config: Config;
  /** The Proxyfile path; null or absent: no config watcher (POST /reload answers 501). */
  configPath?: string | null;
  /** Admin listener override (`--admin`), else the Proxyfile's `admin`, else 127.0.0.1:6190. */
  admin?: string;
  /** Unix socket admin listener path (`--admin-socket`); absent: none. */
  adminSocket?: string;
  /** `PROXY_ADMIN_TOKEN` as read at start. */
  adminToken?: string;
  /** `--state-dir`; see {@link resolveStateDir} for the default. */
  stateDir?: string;
  /** `--cert-dir` / `PROXY_CERT_DIR` (default /etc/proxy/certs). */
  certDir?: string;
  /** Loaded certificates the control plane keeps (`PROXY_CERT_CACHE`; default 10,000). */
  certCache?: number;
  /** TLS contexts each worker keeps (`PROXY_WORKER_CERT_CACHE`; default 10,000). */
  workerCertCache?: number;
  /** `--docker-host`: the container runtime endpoint (`unix://…`, `tcp://host:port`). */
  dockerHost?: string;
  /** False with `--no-docker` (default true): no container discovery. */
  docker?: boolean;
  /** False with `--no-metrics` (default true). */
  metrics?: boolean;
  /** Address the data-plane listeners bind (default 0.0.0.0; the demo binds 127.0.0.1). */
  bindHost?: string;
  /**
   * Data-plane processes (`--workers`, `PROXY_WORKERS`). 1 (the default):
   * this process serves traffic itself. N > 1: this process is the control
   * plane only, and N forked workers serve (`cluster/serving.ts`).
   */
  workers?: number;
  /**
   * `--spare-worker` (default false): with workers, one more worker process
   * started and idle, which takes a crashed worker's place in ~20 ms instead
   * of a Node start. It costs ~30 MB (bench/memory), so it is asked for.
   */
  spareWorker?: boolean;
  logger: Logger;
  /** Per-target loggers; default: children of `logger`. */
  logging?: Logging;
}

/** A running proxyd: the data plane and the admin listeners. */
export interface Daemon {
  httpAddress: { host: string; port: number };
  adminAddress: { host: string; port: number };
  /** The metrics listener's address (global option `metrics`), or null without one. */
  metricsAddress: { host: string; port: number } | null;
  /** The dashboard listener's address (global option `dashboard`), or null without one. */
  dashboardAddress: { host: string; port: number } | null;
  socketPath: string | null;
  stateDir: string;
  certDir: string;
  /** Re-reads the Proxyfile (SIGHUP); `undefined` when there is no Proxyfile. */
  reload: (() => Promise<ReloadResult>) | undefined;
  /** Routes in the table now, from every source (the CLI says when there are none). */
  routeCount(): number;
  /**
   * Stops: the listeners stop accepting, requests, streams and admin calls
   * in flight finish within `graceMs` (default the Proxyfile's
   * `grace_period`), then everything closes.
   */
  close(graceMs?: number): Promise<void>;
}

function childLogging(logger: Logger): Logging {
  const cache = new Map<string, Logger>();
  return {
    root: logger,
    filter: { level: 'info', targets: [] },
    forTarget(target) {
      let child = cache.get(target);
      if (!child) {
        child = logger.child({ target });
        cache.set(target, child);
      }
      return child;
    },
  };
}

/**
 * Starts the route store (restoring API routes), analytics, metrics, the
 * data plane and the admin API, in that order.
 */
export async function startDaemon(options: DaemonOptions): Promise<Daemon> {
  const { config, logger } = options;
  const startedAt = Date.now();
  const logging = options.logging ?? childLogging(logger);
  const serverLog = logging.forTarget('proxy::server');
  const storeLog = logging.forTarget('proxy::store');

  const stateDir = resolveStateDir(options.stateDir, config.global.state_dir);
  const certDir = path.resolve(options.certDir ?? DEFAULT_CERT_DIR);
  await ensureStateDir(stateDir, storeLog);
  // Sites' `log` files, owned by this process: opened before anything serves (and before a reload publishes).
  const siteLogs = new SiteLogOutputs({ logger: logging.forTarget(SITE_LOG_TARGET) });
  await siteLogs.prepare(config.sites);
  const { store, recovered } = await RouteStore.open({
    stateFile: path.join(stateDir, 'routes.json'),
    proxyfileRoutes: routesFromConfig(config),
  });
  if (recovered) {
    storeLog.error(
      { reason: recovered.reason, copy: recovered.copy, kept: recovered.kept, left_out: recovered.rejected.length },
      recovered.kept > 0
        ? `state file has routes that are not valid: ${recovered.rejected.length} left out, ${recovered.kept} loaded (the file as it was is kept)`
        : 'state file is corrupt: set aside, starting without API routes',
    );
  }
  const tlsLog = logging.forTarget('proxy::tls');
  const workerCount = options.workers ?? 1;
  // With workers, this process's metrics are the control plane's plus the workers' merged at scrape.
  const metrics =
    options.metrics === false
      ? undefined
      : workerCount > 1
        ? createMetrics({ role: 'primary' })
        : createMetrics({ role: 'single' });
  // Challenges the manager presents reach every node of the fleet (started below).
  let fleetOf: Fleet | null = null;
  // Global option `storage redis`: API routes shared by a fleet, and (with automatic HTTPS) certificates,
  // keys and locks; else the state dir and the cert dir. The connection is made in the background: a Redis
  // that does not answer does not stop the start.
  // With `auto_https off` it still carries the fleet's analytics and rate-limit windows.
  const sharedStorage =
    config.global.storage === undefined
      ? undefined
      : await (await import('@proxyd/certificates')).openRedisStorage(config.global.storage);
  // History (global option `history`, on by default): <state dir>/history.db, written by this process only;
  // with Redis, every node's minutes reach it (and this node's every other node's).
  const history = await startHistory(config, {
    stateDir,
    logger: logging.forTarget(HISTORY_TARGET),
    ...(sharedStorage === undefined
      ? {}
      : {
          fleet: {
            exchange: (await import('./cluster/redis-analytics.js')).redisFleetRollups(sharedStorage),
            node: hostname(),
          },
        }),
  });
  // With Redis, this daemon is one node of a fleet: challenges, new certificates and ticket keys reach every node.
  const redisFleet =
    sharedStorage === undefined || config.global.auto_https === 'off'
      ? undefined
      : (await import('./cluster/redis-fleet.js')).redisFleetWiring(sharedStorage, () => fleetOf, tlsLog);
  const challenges =
    config.global.auto_https === 'off'
      ? undefined
      : ((redisFleet || undefined)?.table ?? fleetChallengeTable(() => fleetOf));
  const unwatchStorage = sharedStorage?.onStateChange(({ reachable, error }) => {
    if (reachable) tlsLog.info({ storage: 'redis' }, 'storage redis: connected');
    else
      tlsLog.error(
        { storage: 'redis', error },
        `storage redis: unreachable (${error ?? 'connection closed'}); serving the routes and certificates held, route writes answer 503, issuance waits`,
      );
  });
  // `rate_limit_scope fleet`: rate_limit counts every node's requests, synced through Redis every 100 ms.
  const fleetRateLimits =
    sharedStorage === undefined || config.global.storage?.rate_limit_scope !== 'fleet'
      ? undefined
      : (await import('./cluster/redis-rate-limits.js')).fleetRateLimits(sharedStorage, serverLog);
  // What only some configs use is loaded when they do (issue 32): the certificate manager (its local CA
  // and ACME client) with automatic HTTPS, the dashboard with a `dashboard` listener.
  let certificates: CertificateWiring | undefined;
  if (config.global.auto_https !== 'off') {
    const { createCertificateWiring } = await import('@proxyd/certificates');
    certificates = await createCertificateWiring(config, {
      certDir,
      logger: tlsLog,
      ...(challenges === undefined ? {} : { challengeTable: challenges }),
      ...(sharedStorage === undefined ? {} : { storage: sharedStorage }),
      ...(redisFleet ? { onObtained: (name: string) => redisFleet.obtained(name) } : {}),
      ...(options.certCache === undefined ? {} : { cacheCapacity: options.certCache }),
    });
  }
  const manager = certificates?.manager;
  // Caddy's `auto_https off` and `disable_redirects`: sites stay reachable over plain HTTP.
  const redirects = autoHttpsRedirects(config.global.auto_https);
  if (workerCount > 1) {
    // The analytics key file exists before any worker reads it (each would create its own).
    await loadSecretFile(path.join(stateDir, SECRET_FILE_NAME));
  }
  // The data plane: one fleet of nodes (this process, or N workers); the daemon talks only to it.
  const serving = await startServing({
    count: workerCount,
    spare: options.spareWorker === true,
    config: workerCount > 1 ? await withResolvedPorts(config, options.bindHost) : config,
    routes: () => store.snapshot,
    certificates,
    ...(options.workerCertCache === undefined ? {} : { workerCertCache: options.workerCertCache }),
    stateDir,
    ...(options.bindHost === undefined ? {} : { bindHost: options.bindHost }),
    redirects,
    ...(metrics?.role === 'single' ? { metrics } : {}),
    workerMetrics: metrics !== undefined,
    logging,
    siteLogs,
    ...(history === null ? {} : { history }),
    ...(fleetRateLimits === undefined ? {} : { rateLimits: (limit: number) => fleetRateLimits.limiter(limit) }),
  });
  const { fleet } = serving;
  fleetOf = fleet;
  await history?.attach({ drain: (now) => fleet.drainRollups(now), setSalt: (salt) => fleet.setVisitorSalt(salt) });
  if (metrics?.role === 'primary') metrics.setWorkerSource(() => serving.metricsSnapshots());
  const unwatchCertificates = manager?.onChange((change) => void fleet.certificatesChanged(change.name));
  const unwatchRemovals = manager?.onRemove((name) => void fleet.certificatesChanged(name, true));
  if (manager && redisFleet) {
    redisFleet.join({ manager, setTicketKeys: (keys) => serving.setTicketKeys(keys) });
  }
  // In the background: stored certificates load, missing ones are ordered; listeners never wait.
  const followRoutes = (snapshot: RouteSnapshot) =>
    certificates?.setRoutes(snapshot).then(() => fleet.certificatesChanged());
  void followRoutes(store.snapshot);
  if (manager) {
    metrics?.setCertificateSource(() => ({
      certificates: manager.status(),
      orders: manager.orderCounts(),
    }));
    metrics?.setCertificateCacheSource('control', () => manager.cacheStats());
  }
  // With or without automatic HTTPS: the storage carries the fleet's API routes too.
  if (sharedStorage !== undefined) metrics?.setStorageSource(() => sharedStorage.state());
  // A route write resolves once every node swapped (the store waits for the promise).
  const unsubscribe = store.subscribe((snapshot) => {
    void followRoutes(snapshot);
    metrics?.setRouteCounts(store.countByOrigin());
    siteLogs.retain(sitesOf(snapshot));
    return serving.setRoutes(snapshot);
  });
  // With Redis: API routes are the fleet's (written there first, followed from there), the store holds this
  // node's copy beside its own Proxyfile and label routes.
  const fleetRoutes =
    sharedStorage &&
    new FleetRoutes(
      store,
      new (await import('@proxyd/certificates')).RedisRouteLog(sharedStorage, {
        codec: { line: recordLine, parse: parseRecordLine },
      }),
      {
        lagging: (version, waitedMs) =>
          storeLog.warn(
            { storage: 'redis', version, waited_ms: waitedMs },
            `fleet route change ${version} answered before this node applied it (it follows as soon as it catches up)`,
          ),
        invalid: (problem) =>
          storeLog.error(
            { storage: 'redis', problem },
            `a fleet route in redis is not valid and is left out: ${problem}`,
          ),
        failed: (err) =>
          storeLog.error(
            { storage: 'redis', error: (err as Error).message },
            `a fleet route change could not be applied here: ${(err as Error).message}; reading the whole set again`,
          ),
      },
    ).start();
  const docker = await startDockerDiscovery({
    global: config.global,
    ...(options.dockerHost === undefined ? {} : { host: options.dockerHost }),
    disabled: options.docker === false,
    sink: store,
    originOf: (domain) => store.get(domain)?.origin,
    // The root logger: the container source names its target on each line itself.
    logger: logging.root,
  });
  const unwatchShadowed = store.subscribe(() => docker.checkShadowed());
  const proxyfileReloader = options.configPath
    ? createReloader({
        configPath: options.configPath,
        store,
        running: config,
        logger: logging.forTarget('proxy::config'),
        prepare: (next) => siteLogs.prepare(next.sites),
      })
    : undefined;
  // Every reload (POST /reload, SIGHUP) counted in the metrics.
  const reloader = proxyfileReloader && metrics ? countReloads(proxyfileReloader, metrics) : proxyfileReloader;

  /**
   * A listener after the data plane failed to open: closes the listeners
   * `opened` before it and everything started so far, then rethrows.
   */
  const abandon = async (err: unknown, opened: readonly ({ close(): Promise<void> } | null)[] = []) => {
    await Promise.all(opened.map((listener) => listener?.close()));
    unwatchShadowed();
    await docker.close();
    unsubscribe();
    unwatchCertificates?.();
    unwatchRemovals?.();
    certificates?.close();
    if (redisFleet) redisFleet.close();
    fleetRoutes?.close();
    fleetRateLimits?.stop();
    unwatchStorage?.();
    await fleet.stop(0);
    await history?.close();
    await sharedStorage?.close();
    throw err;
  };

  let control: Awaited<ReturnType<typeof startControlPlane>>;
  try {
    control = await startControlPlane({
      config,
      admin: options.admin,
      adminSocket: options.adminSocket,
      token: options.adminToken,
      store,
      ...(fleetRoutes ? { fleetRoutes } : {}),
      reloader,
      metrics,
      cache: serving.cache,
      analytics: serving.analytics,
      stats: history?.store,
      certificates: manager ? { list: async () => manager.status() } : undefined,
      storage: sharedStorage,
      discovery: docker,
      logging,
      startedAt,
    });
  } catch (err) {
    return await abandon(err);
  }

  // The metrics listener (global option `metrics`): GET /metrics without the admin token.
  let metricsListener: MetricsListener | null = null;
  if (config.global.metrics !== null) {
    if (metrics === undefined) {
      serverLog.warn({ metrics: config.global.metrics }, 'metrics listener not opened: metrics are off (--no-metrics)');
    } else {
      try {
        metricsListener = await startMetricsListener({ address: splitHostPort(config.global.metrics), metrics });
      } catch (err) {
        return await abandon(err, [control]);
      }
    }
  }

  // The dashboard (global option `dashboard`): its own listener, reading history and live analytics in-process.
  let dashboardListener: DashboardListener | null = null;
  if (config.global.dashboard !== undefined) {
    try {
      const { DASHBOARD_TARGET, startDashboardListener } = await import('./dashboard.js');
      dashboardListener = await startDashboardListener({
        dashboard: config.global.dashboard,
        history: history?.store ?? null,
        live: serving.analytics,
        logger: logging.forTarget(DASHBOARD_TARGET),
      });
    } catch (err) {
      return await abandon(err, [control, metricsListener]);
    }
  }

  const { httpAddress } = serving;
  const { adminAddress } = control;
  const metricsAddress = metricsListener?.address ?? null;
  const dashboardAddress = dashboardListener?.address ?? null;
  serverLog.info(
    {
      http: `${httpAddress.host}:${httpAddress.port}`,
      admin: `${adminAddress.host}:${adminAddress.port}`,
      ...(control.socketPath ? { admin_socket: control.socketPath } : {}),
      ...(metricsAddress ? { metrics: `${metricsAddress.host}:${metricsAddress.port}` } : {}),
      ...(dashboardAddress ? { dashboard: `${dashboardAddress.host}:${dashboardAddress.port}` } : {}),
      routes: store.size,
      workers: workerCount,
      state_dir: stateDir,
      proxyfile: options.configPath ?? null,
    },
    'proxyd ready',
  );
  return {
    httpAddress,
    adminAddress,
    metricsAddress,
    dashboardAddress,
    socketPath: control.socketPath,
    stateDir,
    certDir,
    reload: reloader ? () => reloader.reload() : undefined,
    routeCount: () => store.size,
    async close(graceMs = config.global.grace_period_ms) {
      // Every listener drains at once: the data plane, the admin API (its calls in flight write to the
      // store, closed after them), the metrics and dashboard listeners.
      const drained = fleet.stop(graceMs);
      await Promise.all([control.close(graceMs), metricsListener?.close(graceMs), dashboardListener?.close(graceMs)]);
      unwatchShadowed();
      await docker.close();
      // The fleet stops handing changes to the store before it closes.
      fleetRoutes?.close();
      await store.close();
      unsubscribe();
      unwatchCertificates?.();
      unwatchRemovals?.();
      certificates?.close();
      if (redisFleet) redisFleet.close();
      fleetRateLimits?.stop();
      unwatchStorage?.();
      await drained;
      // After the drain: what the last requests added (the workers' last rollups, this process's current minute),
      // published to the fleet before the Redis connection closes.
      await history?.close();
      await sharedStorage?.close();
      await siteLogs.close();
    },
  };
}

/**
 * The config with `http_port` and `https_port` 0 replaced by free ports:
 * workers bind the same ports, so "any port" is chosen once, here.
 */
async function withResolvedPorts(config: Config, bindHost: string | undefined): Promise<Config> {
  const { http_port: http, https_port: https } = config.global;
  if (http !== 0 && https !== 0) return config;
  const free = async () =>
    await new Promise<number>((resolve, reject) => {
      const server = net.createServer();
      server.once('error', reject);
      server.listen(0, config.global.default_bind[0] ?? bindHost ?? '0.0.0.0', () => {
        const { port } = server.address() as net.AddressInfo;
        server.close(() => resolve(port));
      });
    });
  return {
    ...config,
    global: {
      ...config.global,
      http_port: http === 0 ? await free() : http,
      https_port: https === 0 ? await free() : https,
    },
  };
}

/** The sites of the snapshot's routes, read only if iterated (a large table builds its routes on the first read). */
function* sitesOf(snapshot: RouteSnapshot): Generator<Site> {
  for (const route of snapshot.routes) yield route.site;
}
