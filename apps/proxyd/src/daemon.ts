import path from 'node:path';
import { type Config, composeHooks, DataPlane } from '@proxyd/proxy-core';
import { routesFromConfig } from '@proxyd/proxyfile';
import { RouteStore } from '@proxyd/route-store';
import type { Logger } from 'pino';
import { createAccessLog } from './access-log.js';
import { ANALYTICS_TARGET, createAnalyticsWiring } from './analytics.js';
import { createCertificateWiring } from './certificates.js';
import { startControlPlane } from './control-plane.js';
import { startDockerDiscovery } from './docker.js';
import type { Logging } from './logging.js';
import { createMetrics } from './metrics.js';
import { createReloader, type ReloadResult } from './reload.js';
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
  logger: Logger;
  /** Per-target loggers; default: children of `logger`. */
  logging?: Logging;
}

/** A running proxyd: the data plane and the admin listeners. */
export interface Daemon {
  httpAddress: { host: string; port: number };
  adminAddress: { host: string; port: number };
  socketPath: string | null;
  stateDir: string;
  certDir: string;
  /** Re-reads the Proxyfile (SIGHUP); `undefined` when there is no Proxyfile. */
  reload: (() => Promise<ReloadResult>) | undefined;
  close(): Promise<void>;
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
  await ensureStateDir(stateDir);
  const { store, recovered } = await RouteStore.open({
    stateFile: path.join(stateDir, 'routes.json'),
    proxyfileRoutes: routesFromConfig(config),
  });
  if (recovered) {
    storeLog.error(
      { reason: recovered.reason, copy: recovered.copy },
      'state file is corrupt: set aside, starting without API routes',
    );
  }
  const metrics = options.metrics === false ? undefined : createMetrics();
  const analytics = await createAnalyticsWiring(config, {
    stateDir,
    logger: logging.forTarget(ANALYTICS_TARGET),
  });
  const accessLog = createAccessLog(logging);
  const hooks = composeHooks(
    analytics.hooks,
    metrics ? { onRequest: (record) => metrics.onRequest(record) } : {},
    accessLog ? { onRequest: accessLog } : {},
  );
  const tlsLog = logging.forTarget('proxy::tls');
  const certificates =
    config.global.auto_https === 'off' ? undefined : await createCertificateWiring(config, { certDir, logger: tlsLog });
  const manager = certificates?.manager;
  const dataPlane = await DataPlane.start(config, store.routes, hooks, {
    ...(options.bindHost === undefined ? {} : { bindHost: options.bindHost }),
    // Caddy's `auto_https off` and `disable_redirects`: sites stay reachable over plain HTTP.
    redirects: config.global.auto_https !== 'off' && config.global.auto_https !== 'disable_redirects',
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
  const unwatchCertificates = manager?.onChange(() => dataPlane.certificatesChanged());
  // In the background: stored certificates load, missing ones are ordered; listeners never wait.
  void certificates?.setRoutes(store.routes);
  metrics?.setUpstreamHealthSource(() => dataPlane.upstreamHealth());
  metrics?.setAnalyticsDroppedSource(() => analytics.droppedRequests());
  if (manager) metrics?.setCertificateSource(() => ({ certificates: manager.status(), orders: manager.orderCounts() }));
  const unsubscribe = store.subscribe((routes, version) => {
    dataPlane.setRoutes(routes, version);
    void certificates?.setRoutes(routes);
    metrics?.setRouteCounts(store.countByOrigin());
  });
  const docker = await startDockerDiscovery({
    global: config.global,
    ...(options.dockerHost === undefined ? {} : { host: options.dockerHost }),
    disabled: options.docker === false,
    sink: store,
    published: () => store.routes,
    logger: logging.forTarget('proxy::docker'),
  });
  const unwatchShadowed = store.subscribe(() => docker.checkShadowed());
  const reloader = options.configPath
    ? createReloader({
        configPath: options.configPath,
        store,
        running: config,
        logger: logging.forTarget('proxy::config'),
      })
    : undefined;

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
      cache: dataPlane.cache,
      analytics: analytics.reader,
      certificates: manager ? { list: async () => manager.status() } : undefined,
      discovery: docker.port,
      logging,
      startedAt,
    });
  } catch (err) {
    unwatchShadowed();
    await docker.close();
    unsubscribe();
    unwatchCertificates?.();
    certificates?.close();
    await dataPlane.close();
    await analytics.close();
    throw err;
  }

  const { httpAddress } = dataPlane;
  const { adminAddress } = control;
  serverLog.info(
    {
      http: `${httpAddress.host}:${httpAddress.port}`,
      admin: `${adminAddress.host}:${adminAddress.port}`,
      ...(control.socketPath ? { admin_socket: control.socketPath } : {}),
      routes: store.routes.length,
      state_dir: stateDir,
      proxyfile: options.configPath ?? null,
    },
    'proxyd ready',
  );
  return {
    httpAddress,
    adminAddress,
    socketPath: control.socketPath,
    stateDir,
    certDir,
    reload: reloader ? () => reloader.reload() : undefined,
    async close() {
      await control.close();
      unwatchShadowed();
      await docker.close();
      await store.close();
      unsubscribe();
      unwatchCertificates?.();
      certificates?.close();
      await dataPlane.close();
      await analytics.close();
    },
  };
}
