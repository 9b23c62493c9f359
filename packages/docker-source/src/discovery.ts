import type { GlobalOptions, RouteOrigin, RouteSpec } from '@proxyd/model';
import type { RouteSink } from '@proxyd/route-store';
import { resolveDockerHost } from './runtime/socket.js';
import { DOCKER_LOG_TARGET, type DockerLogger, DockerSource } from './watcher.js';

/** Options of {@link startDockerDiscovery}. */
export interface DockerDiscoveryOptions {
  /** The Proxyfile's global options (`docker off`, `docker { host, network }`). */
  global: GlobalOptions;
  /** `--docker-host` (wins over the Proxyfile's `host` and `DOCKER_HOST`). */
  host?: string;
  /** `--no-docker`. */
  disabled?: boolean;
  /** Where label routes go: the route store. */
  sink: RouteSink;
  /**
   * The origin of the route the store publishes now for a lowercase domain
   * (to tell which label domains the Proxyfile holds): a lookup, so a route
   * write costs the label routes, not the table.
   */
  originOf: (domain: string) => RouteOrigin | undefined;
  /**
   * A logger with no `target` of its own (the daemon's root logger): the
   * container source and this function put `target: proxy::docker` on each
   * line, and a logger bound to it would write the key twice.
   */
  logger: DockerLogger;
  /** The environment read for `DOCKER_HOST` and `XDG_RUNTIME_DIR` (default `process.env`). */
  env?: NodeJS.ProcessEnv;
}

/**
 * The state of container discovery, as `GET /discovery` shows it (the admin
 * API's `DiscoveryStatus`, which this shape satisfies).
 */
export interface DiscoveryStatus {
  /** False when discovery is turned off (`--no-docker` or the Proxyfile's `docker off`). */
  enabled: boolean;
  /** The runtime endpoint in use; null when none was found or discovery is off. */
  socket: string | null;
  connected: boolean;
  apiVersion: string | null;
  lastError: string | null;
  /** Running containers with a `proxy.domain` label. */
  containers: number;
  /** Label problems, each container named `name (id)`. */
  warnings: { container: string; label: string | null; reason: string }[];
}

/** Container discovery as the daemon holds it: its status (`GET /discovery`) and a stop. */
export interface DockerDiscovery {
  readonly source: DockerSource | null;
  status(): Promise<DiscoveryStatus>;
  /** Logs, once per domain, label domains the Proxyfile holds (call on every publish). */
  checkShadowed(): void;
  close(): Promise<void>;
}

const OFF: DiscoveryStatus = {
  enabled: false,
  socket: null,
  connected: false,
  apiVersion: null,
  lastError: null,
  containers: 0,
  warnings: [],
};

/**
 * Starts container discovery unless `--no-docker` or `docker off` says not
 * to: the runtime endpoint is `--docker-host`, else the Proxyfile's `docker
 * { host }`, else `DOCKER_HOST`, else the first of the usual Docker and
 * Podman sockets that answers (the one chosen is logged). No socket found is
 * one info line and no discovery. Resolves after the first sync or the
 * first failure: a runtime that is down never stops the daemon (the source
 * retries in the background).
 */
export async function startDockerDiscovery(options: DockerDiscoveryOptions): Promise<DockerDiscovery> {
  const { global } = options;
  const logger: DockerLogger = {
    info: (obj, msg) => options.logger.info({ target: DOCKER_LOG_TARGET, ...obj }, msg),
    warn: (obj, msg) => options.logger.warn({ target: DOCKER_LOG_TARGET, ...obj }, msg),
    error: (obj, msg) => options.logger.error({ target: DOCKER_LOG_TARGET, ...obj }, msg),
  };
  if (options.disabled || !global.docker.enabled) {
    const why = options.disabled ? 'turned off at start (--no-docker)' : 'docker off in the Proxyfile';
    logger.info({ reason: why }, `container discovery off: ${why}`);
    return { source: null, status: async () => OFF, checkShadowed() {}, close: async () => {} };
  }
  const explicit = options.host ?? global.docker.host ?? undefined;
  const resolved = await resolveDockerHost({
    ...(explicit === undefined ? {} : { explicit }),
    ...(options.env === undefined ? {} : { env: options.env }),
  });
  if (resolved === null) {
    logger.info(
      {},
      'no container runtime socket found (DOCKER_HOST unset, no Docker or Podman socket answers): container discovery off',
    );
    return {
      source: null,
      status: async () => ({ ...OFF, enabled: true, lastError: 'no container runtime socket found' }),
      checkShadowed() {},
      close: async () => {},
    };
  }
  logger.info({ socket: resolved.url, reason: resolved.reason }, `container discovery on ${resolved.url}`);
  // Label domains the Proxyfile declares: the Proxyfile wins; say so once per domain.
  let declared: readonly RouteSpec[] = [];
  const shadowed = new Set<string>();
  const checkShadowed = () => {
    const now = new Set<string>();
    for (const route of declared) {
      const domain = route.domain.toLowerCase();
      if (options.originOf(domain) !== 'proxyfile') continue;
      now.add(domain);
      if (!shadowed.has(domain)) {
        logger.warn({ domain }, `${domain}: the Proxyfile declares this domain, so its container labels are ignored`);
      }
    }
    shadowed.clear();
    for (const domain of now) shadowed.add(domain);
  };
  const sink: RouteSink = {
    async replaceOrigin(origin, routes) {
      await options.sink.replaceOrigin(origin, routes);
      declared = routes;
      checkShadowed();
    },
  };
  // dockerode (with ssh2, gRPC and protobufjs: ~200 modules, ~10 MB) loads only once a runtime answers (issue 32).
  const { DockerodeRuntime } = await import('./runtime/dockerode-runtime.js');
  const runtime = new DockerodeRuntime({ host: resolved.host });
  const source = new DockerSource({
    runtime,
    sink,
    socket: resolved.url,
    logger: options.logger,
    defaultNetwork: global.docker.network,
  });
  await source.start();
  return {
    source,
    checkShadowed,
    async status() {
      const s = source.status();
      return {
        enabled: true,
        socket: s.socket,
        connected: s.connected,
        apiVersion: s.apiVersion,
        lastError: s.lastError,
        containers: s.containers,
        warnings: source.warnings().map((w) => ({
          container: `${w.container.name} (${w.container.id})`,
          label: w.label,
          reason: w.reason,
        })),
      };
    },
    async close() {
      await source.stop();
      runtime.close();
    },
  };
}
