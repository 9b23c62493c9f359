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
  type RouteTable,
  type Site,
} from '@proxyd/proxy-core';
import { SitePortPolicy, sitePortsOf } from './site-ports.js';

/** The running data plane, as the rest of the daemon sees it. */
export interface DataPlane {
  /** Where the HTTP listener is bound. */
  httpAddress: { host: string; port: number };
  /**
   * Where the HTTPS listener is bound; null while no site serves HTTPS. A
   * later route set that brings a certificate opens it then.
   */
  readonly httpsAddress: { host: string; port: number } | null;
  /** The listeners of ports that site addresses name (`http://a.example.com:8080`), in the order opened. */
  sitePortAddresses: readonly { host: string; port: number; tls: boolean }[];
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
  /**
   * Reports a listener that a new route set needs but that cannot be opened:
   * a site port (in use, or asked for with both protocols), or the
   * https_port when the first certificate arrives after start. At start
   * such a failure fails {@link startDataPlane} instead.
   */
  onSitePortError?: (err: Error) => void;
}

function servesHttps(config: Config): boolean {
  return config.sites.some((site) => site.tls.mode !== 'off' && site.addresses.some((a) => a.scheme !== 'http'));
}

/**
 * Starts the data plane: the HTTP listener on `http_port`, the HTTPS
 * listener (SNI) on `https_port` when at least one site serves HTTPS, and a
 * listener on every other port a site address names (plain HTTP for
 * `http://host:port` or `tls off`, HTTPS by SNI otherwise). A site named with
 * such a port is served only there; other sites only on the main listeners.
 * Routes published later may add site ports (opened then); a site port is
 * not closed before the data plane closes. `trusted_proxies` decides the
 * client IP; `hooks` receive request records and transform HTML bodies.
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
  const { http_port: httpPort, https_port: httpsPort } = config.global;
  const initial = sitePortsOf(routes, httpPort, httpsPort);
  const conflict = initial.conflicts[0];
  if (conflict !== undefined) {
    throw new Error(
      `site port ${conflict.port}: ${conflict.kept} and ${conflict.refused} ask it for different protocols (plain HTTP and HTTPS)`,
    );
  }
  const https = servesHttps(config);
  const secret = options.secret ?? randomBytes(32);
  const policy = new SitePortPolicy();
  policy.byDomain = initial.byDomain;
  const bindHost = options.bindHost ?? '0.0.0.0';
  const compileBase = options.compileSite ?? ((site, forwarder) => compileSite(site, { forwarder, secret }));
  const proxy: ProxyServer = new ProxyServer({
    routes,
    version: 1,
    hooks,
    trustedProxies: config.global.trusted_proxies,
    compileSite: (site, forwarder) => policy.guard(compileBase(site, forwarder)),
    // Redirects to https_port only while its listener is open.
    certificates: policy.redirectView(
      certificates,
      (): RouteTable => proxy.table,
      () => httpsAddress !== null,
    ),
    httpsPort: config.global.https_port,
  });
  let httpsAddress: { host: string; port: number } | null = null;
  let httpsOpening = false;
  const openHttps = async (): Promise<void> => {
    httpsOpening = true;
    const a = await proxy.listenHttps(httpsPort, bindHost);
    policy.main.add(a.port);
    httpsAddress = { host: a.address, port: a.port };
  };
  const sitePortAddresses: { host: string; port: number; tls: boolean }[] = [];
  const openSitePort = async (port: number, tls: boolean, domain: string): Promise<void> => {
    policy.open.add(port);
    try {
      const a = tls ? await proxy.listenHttps(port, bindHost) : await proxy.listen(port, bindHost);
      sitePortAddresses.push({ host: a.address, port: a.port, tls });
    } catch (err) {
      throw new Error(`site port ${port} (${domain}): ${err instanceof Error ? err.message : String(err)}`, {
        cause: err,
      });
    }
  };
  const listening = new Map<number, boolean>();
  try {
    const http = await proxy.listen(httpPort, bindHost);
    policy.main.add(http.port);
    if (https) await openHttps();
    for (const { port, tls: secure, domain } of initial.ports.values()) {
      await openSitePort(port, secure, domain);
      listening.set(port, secure);
    }
    const caches = proxy.forwarder.caches;
    const publish = (next: readonly RouteSpec[], version: number) => {
      const ports = sitePortsOf(next, httpPort, httpsPort);
      const report = options.onSitePortError ?? (() => {});
      for (const c of ports.conflicts) {
        report(new Error(`site port ${c.port}: ${c.kept} and ${c.refused} ask it for different protocols`));
      }
      for (const { port, tls: secure, domain } of ports.ports.values()) {
        const open = listening.get(port);
        if (open === undefined) {
          listening.set(port, secure);
          openSitePort(port, secure, domain).catch(report);
        } else if (open !== secure) {
          report(
            new Error(
              `site port ${port} (${domain}) is open for ${open ? 'HTTPS' : 'plain HTTP'} since start; a restart changes it`,
            ),
          );
        }
      }
      policy.byDomain = ports.byDomain;
      loadCerts(next);
      proxy.setRoutes(next, version);
      // The first certificate after a start without HTTPS (a reload added `tls <cert> <key>`).
      if (httpsAddress === null && !httpsOpening && loaded.size > 0) {
        openHttps().catch((err: unknown) => {
          httpsOpening = false;
          report(new Error(`https_port ${httpsPort}: ${err instanceof Error ? err.message : String(err)}`));
        });
      }
    };
    return {
      httpAddress: { host: http.address, port: http.port },
      get httpsAddress() {
        return httpsAddress;
      },
      sitePortAddresses,
      cache: {
        get enabled() {
          return caches.enabled;
        },
        purge: (key) => caches.purge(key),
      },
      certificates,
      upstreamHealth: () => proxy.forwarder.upstreamHealth(),
      setRoutes: publish,
      close: () => proxy.close(),
    };
  } catch (err) {
    await proxy.close();
    throw err;
  }
}
