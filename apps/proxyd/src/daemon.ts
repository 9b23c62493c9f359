import net from 'node:net';
import path from 'node:path';
import type { AnalyticsPort, CachePort } from '@proxyd/admin-api';
import { ANALYTICS_TARGET, createAnalyticsWiring, loadSecretFile, SECRET_FILE_NAME } from '@proxyd/analytics';
import type { CertificateManager } from '@proxyd/certificates';
import { createCertificateWiring } from '@proxyd/certificates';
import { HISTORY_TARGET, type RollupSource, startHistory } from '@proxyd/history';
import { autoHttpsRedirects, type Config, type RouteSnapshot, type RouteSpec, type Site } from '@proxyd/model';
import { composeHooks, DataPlane } from '@proxyd/proxy-core';
import { createReloader, type ReloadResult, routesFromConfig } from '@proxyd/proxyfile';
import { RouteStore } from '@proxyd/route-store';
import type { Logging } from '@proxyd/telemetry';
import {
  countReloads,
  createAccessLog,
  createMetrics,
  type DataPlaneStats,
  type MetricsSnapshot,
  type ProxydMetrics,
  SITE_LOG_TARGET,
  SiteLogOutputs,
  SiteLogRecorder,
  type UpstreamHealth,
} from '@proxyd/telemetry';
import type { Logger } from 'pino';
import { BroadcastChallengeTable, startWorkers, type WorkersOptions } from './cluster/primary.js';
import { splitHostPort, startControlPlane } from './control-plane.js';
import { DASHBOARD_TARGET, type DashboardListener, startDashboardListener } from './dashboard.js';
import { startDockerDiscovery } from './docker.js';
import { type MetricsListener, startMetricsListener } from './metrics-listener.js';
import { DEFAULT_CERT_DIR, ensureStateDir, resolveStateDir } from './state-dir.js';

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
   * plane only, and N forked workers serve (`cluster/primary.ts`).
   */
  workers?: number;
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
  // History (global option `history`, on by default): <state dir>/history.db, written by this process only.
  const history = await startHistory(config, { stateDir, logger: logging.forTarget(HISTORY_TARGET) });
  const tlsLog = logging.forTarget('proxy::tls');
  const workerCount = options.workers ?? 1;
  // With workers, this process's metrics are the control plane's plus the workers' merged at scrape.
  const metrics =
    options.metrics === false
      ? undefined
      : workerCount > 1
        ? createMetrics({ role: 'primary' })
        : createMetrics({ role: 'single' });
  const challenges = workerCount > 1 && config.global.auto_https !== 'off' ? new BroadcastChallengeTable() : undefined;
  const certificates =
    config.global.auto_https === 'off'
      ? undefined
      : await createCertificateWiring(config, {
          certDir,
          logger: tlsLog,
          ...(challenges === undefined ? {} : { challengeTable: challenges }),
        });
  const manager = certificates?.manager;
  // Caddy's `auto_https off` and `disable_redirects`: sites stay reachable over plain HTTP.
  const redirects = autoHttpsRedirects(config.global.auto_https);
  const serving =
    workerCount > 1
      ? await serveWithWorkers({
          count: workerCount,
          config: await withResolvedPorts(config, options.bindHost),
          routes: () => store.snapshot,
          certificates,
          challenges,
          stateDir,
          ...(options.bindHost === undefined ? {} : { bindHost: options.bindHost }),
          redirects,
          metrics: metrics !== undefined,
          logger: serverLog,
          siteLogs,
          ...(history === null ? {} : { history }),
        })
      : await serveHere(
          config,
          store,
          stateDir,
          logging,
          metrics?.role === 'single' ? metrics : undefined,
          manager,
          redirects,
          options.bindHost,
          siteLogs,
          history !== null,
        );
  await history?.attach(serving.rollups);
  if (metrics?.role === 'primary' && serving.metricsSnapshots) metrics.setWorkerSource(serving.metricsSnapshots);
  const unwatchCertificates = manager?.onChange((change) => serving.certificatesChanged(change.name));
  // In the background: stored certificates load, missing ones are ordered; listeners never wait.
  const followRoutes = (snapshot: RouteSnapshot) =>
    certificates?.setRoutes(snapshot).then(() => serving.certificatesChanged());
  void followRoutes(store.snapshot);
  if (metrics?.role === 'single') {
    if (serving.upstreamHealth) metrics.setUpstreamHealthSource(serving.upstreamHealth);
    if (serving.analyticsDropped) metrics.setAnalyticsDroppedSource(serving.analyticsDropped);
    if (serving.stats) metrics.setDataPlaneStatsSource(serving.stats);
  }
  if (manager) metrics?.setCertificateSource(() => ({ certificates: manager.status(), orders: manager.orderCounts() }));
  // With workers, a route write resolves once every worker swapped (the store waits for the promise).
  const unsubscribe = store.subscribe((snapshot) => {
    void followRoutes(snapshot);
    metrics?.setRouteCounts(store.countByOrigin());
    siteLogs.retain(sitesOf(snapshot.routes));
    return serving.setRoutes(snapshot);
  });
  const docker = await startDockerDiscovery({
    global: config.global,
    ...(options.dockerHost === undefined ? {} : { host: options.dockerHost }),
    disabled: options.docker === false,
    sink: store,
    published: () => store.routes,
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
    certificates?.close();
    await serving.close();
    await history?.close();
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
      reloader,
      metrics,
      cache: serving.cache,
      analytics: serving.analytics,
      stats: history?.store,
      certificates: manager ? { list: async () => manager.status() } : undefined,
      discovery: docker.port,
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
      routes: store.routes.length,
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
    routeCount: () => store.routes.length,
    async close(graceMs = config.global.grace_period_ms) {
      // Every listener drains at once: the data plane, the admin API (its calls in flight write to the
      // store, closed after them), the metrics and dashboard listeners.
      const drained = serving.close(graceMs);
      await Promise.all([control.close(graceMs), metricsListener?.close(graceMs), dashboardListener?.close(graceMs)]);
      unwatchShadowed();
      await docker.close();
      await store.close();
      unsubscribe();
      unwatchCertificates?.();
      certificates?.close();
      await drained;
      // After the drain: what the last requests added (the workers' last rollups, this process's current minute).
      await history?.close();
      await siteLogs.close();
    },
  };
}

/**
 * Who serves traffic, as the daemon drives it: this process's data plane
 * ({@link serveHere}) or forked workers ({@link serveWithWorkers}).
 */
interface Serving {
  readonly httpAddress: { host: string; port: number };
  /** Publishes a route snapshot; with workers, resolves once every worker swapped. */
  setRoutes(snapshot: RouteSnapshot): void | Promise<void>;
  /** A certificate was installed (`name`), or some may be gone (no name). */
  certificatesChanged(name?: string): void;
  cache: CachePort;
  analytics: AnalyticsPort;
  /** Where history drains the rollups from and sends the visitor salt. */
  rollups: RollupSource;
  /** Stops: what is in flight finishes within `graceMs`, then everything closes. */
  close(graceMs?: number): Promise<void>;
  upstreamHealth?: () => Iterable<UpstreamHealth>;
  analyticsDropped?: () => number;
  /** Requests in flight and connections open (one process). */
  stats?: () => DataPlaneStats;
  /** With workers: their metrics, one snapshot per worker that answered. */
  metricsSnapshots?: () => Promise<readonly MetricsSnapshot[]>;
}

/** One process: the data plane, analytics, metrics and the access log here. */
async function serveHere(
  config: Config,
  store: RouteStore,
  stateDir: string,
  logging: Logging,
  metrics: ProxydMetrics | undefined,
  manager: CertificateManager | undefined,
  redirects: boolean,
  bindHost: string | undefined,
  siteLogs: SiteLogOutputs,
  rollups: boolean,
): Promise<Serving> {
  const serverLog = logging.forTarget('proxy::server');
  const tlsLog = logging.forTarget('proxy::tls');
  const analytics = await createAnalyticsWiring(config, {
    stateDir,
    logger: logging.forTarget(ANALYTICS_TARGET),
    rollups,
  });
  const accessLog = createAccessLog(logging);
  const siteLog = new SiteLogRecorder((batch) => siteLogs.writeBatch(batch));
  siteLog.setRoutes(store.routes);
  const hooks = composeHooks(
    analytics.hooks,
    metrics ? { onRequest: (record) => metrics.onRequest(record) } : {},
    accessLog ? { onRequest: accessLog } : {},
    { onRequest: siteLog.onRequest },
  );
  let dataPlane: DataPlane;
  try {
    dataPlane = await DataPlane.start(config, store.routes, hooks, {
      ...(bindHost === undefined ? {} : { bindHost }),
      redirects,
      ...(manager === undefined
        ? {}
        : {
            certificates: manager,
            challenges: manager,
            alpnChallenges: { contextFor: (name: string) => manager.alpnContextFor(name) },
          }),
      onCertificateError: (err) => tlsLog.error({ error: err.message }, 'certificate not loaded'),
      onSitePortError: (err) => serverLog.error({ error: err.message }, 'listener not opened'),
    });
  } catch (err) {
    await analytics.close();
    throw err;
  }
  return {
    httpAddress: dataPlane.httpAddress,
    setRoutes: (snapshot) => {
      siteLog.setRoutes(snapshot.routes);
      return dataPlane.setRoutes(snapshot);
    },
    certificatesChanged: () => dataPlane.certificatesChanged(),
    cache: dataPlane.cache,
    analytics: analytics.reader,
    rollups: { drain: (now) => analytics.drainRollups(now), setSalt: (salt) => analytics.setVisitorSalt(salt) },
    upstreamHealth: () => dataPlane.upstreamHealth(),
    analyticsDropped: () => analytics.droppedRequests(),
    stats: () => dataPlane.stats(),
    async close(graceMs = 0) {
      await dataPlane.drain(graceMs);
      siteLog.flush();
      await analytics.close();
    },
  };
}

/** N processes: forked workers serve; this one drives them (`cluster/primary.ts`). */
async function serveWithWorkers(options: WorkersOptions): Promise<Serving> {
  // The analytics key file exists before any worker reads it (each would create its own).
  await loadSecretFile(path.join(options.stateDir, SECRET_FILE_NAME));
  const workers = await startWorkers(options);
  return {
    httpAddress: workers.httpAddress,
    setRoutes: (snapshot) => workers.setRoutes(snapshot),
    certificatesChanged: (name) => void workers.certificatesChanged(name),
    cache: workers.cache,
    analytics: workers.analytics,
    rollups: { drain: (now) => workers.drainRollups(now), setSalt: (salt) => workers.setVisitorSalt(salt) },
    metricsSnapshots: () => workers.metricsSnapshots(),
    close: (graceMs = 0) => workers.close(graceMs),
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

/** The sites of `routes`, read only if iterated. */
function* sitesOf(routes: readonly RouteSpec[]): Generator<Site> {
  for (const route of routes) yield route.site;
}
