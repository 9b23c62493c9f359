import { randomBytes } from 'node:crypto';
import {
  type CacheRegistry,
  type CompiledSite,
  type Config,
  compileSite,
  type DataPlaneHooks,
  type Forwarder,
  loadManualCertificates,
  MemoryCertificateStore,
  ProxyServer,
  type RouteSpec,
  type Site,
} from '@proxyd/proxy-core';

/** The running data plane, as the rest of the daemon sees it. */
export interface DataPlane {
  /** Where the HTTP listener is bound. */
  httpAddress: { host: string; port: number };
  /** Where the HTTPS listener is bound; null when no site serves HTTPS. */
  httpsAddress: { host: string; port: number } | null;
  /** The response caches (the admin API's CachePort: `{ enabled, purge(key) }`). */
  cache: Pick<CacheRegistry, 'enabled' | 'purge'>;
  /** The certificates the HTTPS listener serves by SNI (manual `tls` files; ACME adds to it). */
  certificates: MemoryCertificateStore;
  /** Pool members and whether each is in rotation (for `proxyd_upstream_healthy`). */
  upstreamHealth(): Iterable<{ upstream: string; healthy: boolean }>;
  /** Publishes a new route set; requests in flight finish on the old table. */
  setRoutes(routes: readonly RouteSpec[], version: number): void;
  close(): Promise<void>;
}

/** Extra knobs of {@link startDataPlane}. */
export interface DataPlaneOptions {
  /** Builds each Site's handler; default proxy-core's `compileSite` (every directive). */
  compileSite?: (site: Site, forwarder: Forwarder) => CompiledSite;
  /** HMAC key of `under_attack` clearance cookies; default 32 random bytes per process. */
  secret?: Buffer;
  /** Address the listeners bind (default 0.0.0.0). */
  bindHost?: string;
  /** Reports certificate files that could not be loaded. */
  onCertificateError?: (err: Error) => void;
}

function servesHttps(config: Config): boolean {
  return config.sites.some((site) => site.tls.mode !== 'off' && site.addresses.some((a) => a.scheme !== 'http'));
}

/**
 * Starts the data plane: the HTTP listener on `http_port`, and the HTTPS
 * listener (SNI) on `https_port` when at least one site serves HTTPS;
 * `trusted_proxies` decides the client IP; `hooks` receive request records
 * and transform HTML bodies.
 */
export async function startDataPlane(
  config: Config,
  routes: readonly RouteSpec[],
  hooks: DataPlaneHooks,
  options: DataPlaneOptions = {},
): Promise<DataPlane> {
  const certificates = new MemoryCertificateStore();
  let loaded = new Set<string>();
  const loadCerts = (next: readonly RouteSpec[]) => {
    const result = loadManualCertificates(certificates, next, loaded);
    loaded = result.loaded;
    for (const err of result.errors) options.onCertificateError?.(err);
  };
  loadCerts(routes);
  const https = servesHttps(config);
  const secret = options.secret ?? randomBytes(32);
  const proxy = new ProxyServer({
    routes,
    version: 1,
    hooks,
    trustedProxies: config.global.trusted_proxies,
    compileSite: options.compileSite ?? ((site, forwarder) => compileSite(site, { forwarder, secret })),
    ...(https ? { certificates, httpsPort: config.global.https_port } : {}),
  });
  const bindHost = options.bindHost ?? '0.0.0.0';
  try {
    const http = await proxy.listen(config.global.http_port, bindHost);
    const tls = https ? await proxy.listenHttps(config.global.https_port, bindHost) : null;
    const caches = proxy.forwarder.caches;
    return {
      httpAddress: { host: http.address, port: http.port },
      httpsAddress: tls ? { host: tls.address, port: tls.port } : null,
      cache: {
        get enabled() {
          return caches.enabled;
        },
        purge: (key) => caches.purge(key),
      },
      certificates,
      upstreamHealth: () => proxy.forwarder.upstreamHealth(),
      setRoutes: (next, version) => {
        loadCerts(next);
        proxy.setRoutes(next, version);
      },
      close: () => proxy.close(),
    };
  } catch (err) {
    await proxy.close();
    throw err;
  }
}
