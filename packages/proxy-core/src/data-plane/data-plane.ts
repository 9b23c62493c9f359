import { randomBytes } from 'node:crypto';
import type { Config, RouteChanges, RouteSnapshot, RouteSpec } from '@proxyd/model';
import { changesFrom, isHttpsSite, stateOf } from '@proxyd/model/rules';
import type { CacheRegistry } from '../cache/response-cache.js';
import type { ChallengeResponder } from '../challenge.js';
import { type ConnectionCounter, type ListenerLimits, listenerLimitsOf } from '../connection-limits.js';
import type { DataPlaneHooks } from '../hooks.js';
import type { HealthEvent, HealthSharing } from '../pool/upstream-pool.js';
import { compileSite, type RateLimitCounter } from '../site-handler.js';
import {
  type CertificateStore,
  LayeredCertificateStore,
  loadManualCertificates,
  MemoryCertificateStore,
} from '../tls/certificate-store.js';
import type { AlpnChallengeResponder } from '../tls/handshake.js';
import { ListenerBinds, MAIN_LISTENERS } from './binds.js';
import { ProxyServer, type SiteCompilerWithForwarder } from './proxy-server.js';
import { SitePortTable } from './site-ports.js';

/** A bound listener address. */
export interface ListenerAddress {
  host: string;
  port: number;
}

/** Extra knobs of {@link DataPlane.start}. */
export interface DataPlaneOptions {
  /** Builds each Site's handler; default proxy-core's `compileSite` (every directive) with {@link secret}. */
  compileSite?: SiteCompilerWithForwarder;
  /** HMAC key of `under_attack` clearance cookies; default 32 random bytes per data plane. */
  secret?: Buffer;
  /** Where `rate_limit` counts (default: in this process; see `SiteDeps.rateLimitCounter`). */
  rateLimitCounter?: (limit: number) => RateLimitCounter;
  /**
   * Address the listeners bind when the config's `default_bind` is empty
   * (default 0.0.0.0; the demo binds 127.0.0.1).
   */
  bindHost?: string;
  /** Bind every listener with `SO_REUSEPORT`, as each worker of a multi-core daemon does (default false). */
  reusePort?: boolean;
  /**
   * Upstream health shared with the other workers: whether this one runs
   * the active probes, and where its observations go (apply theirs with
   * {@link DataPlane.applyHealth}). Default: probes here, kept here.
   */
  health?: HealthSharing;
  /** TLS session-ticket keys (48 bytes) shared by every worker; default random per listener. */
  ticketKeys?: Buffer;
  /**
   * Where the sites' `cache` steps keep their caches: a registry over the
   * node's shared cache (`SharedCache`, one for every worker). Default:
   * one in-memory cache per site in this process.
   */
  caches?: CacheRegistry;
  /** Answers ACME HTTP-01 challenges before host matching; default none. */
  challenges?: ChallengeResponder;
  /**
   * Answers ACME TLS-ALPN-01 challenges on every HTTPS listener (the
   * https_port and TLS site ports): a client offering `acme-tls/1` in a TLS
   * 1.3 handshake for a name it has a context for gets that context and
   * `acme-tls/1`, and the connection closes after the handshake
   * (`tls/handshake.ts`). With it, the https_port listener opens as soon as
   * a route served there is an HTTPS site, before any certificate exists.
   * Default none: `acme-tls/1` alone fails the handshake.
   */
  alpnChallenges?: AlpnChallengeResponder;
  /**
   * Certificates beyond the manual `tls <cert> <key>` files (the
   * certificates package's manager): asked by SNI for every name the manual
   * files do not cover (the answer may be a promise: on-demand TLS), and by
   * `has(host)` for the HTTP→HTTPS redirect and for opening the https_port.
   * Call {@link DataPlane.certificatesChanged} when it gains, renews or
   * drops one. Default none.
   */
  certificates?: CertificateStore;
  /**
   * Whether plain-HTTP requests for HTTPS sites get `308` to HTTPS once the
   * host has a certificate and the https_port listener is open; default
   * true. False for Caddy's `auto_https off` and `auto_https
   * disable_redirects`: such requests are served over HTTP.
   */
  redirects?: boolean;
  /**
   * Timeouts and connection caps of every listener: header, body (and its
   * minimum rate), request, keep-alive and TLS handshake timeouts,
   * connections per client address and in total. Defaults: the config's
   * `servers` block (`listenerLimitsOf`), then (nginx's range)
   * `LISTENER_DEFAULTS` in `connection-limits.ts`; these override both.
   */
  limits?: Partial<ListenerLimits>;
  /**
   * The node-wide per-address count this process shares with the other
   * processes serving the same listeners (a multi-core daemon's workers):
   * `max_connections_per_ip` is the node's cap. Default none: this
   * process's.
   */
  connectionCounter?: ConnectionCounter;
  /** Reports certificate files that could not be loaded. */
  onCertificateError?: (err: Error) => void;
  /**
   * Reports a listener that a new route set needs but that cannot be opened:
   * a site port (in use, or asked for with both protocols), or the
   * https_port when the first certificate arrives after start. At start
   * such a failure fails {@link DataPlane.start} instead.
   */
  onSitePortError?: (err: Error) => void;
}

/**
 * The running data plane: its listener set, the route set it serves, its
 * certificates, pools and caches. Listeners: HTTP on `http_port`, HTTPS (SNI)
 * on `https_port` once a route it would serve (an HTTPS site not pinned to a
 * site port) can be served there (see {@link DataPlane.certificatesChanged}),
 * and one listener per other port a site address names (plain HTTP for
 * `http://host:port` or `tls off`, HTTPS by SNI otherwise). A site named with such a port is served only there; other
 * sites only on the main listeners. Routes published later may add site
 * ports (opened then); a listener is not closed before the data plane closes.
 * `trusted_proxies` decides the client IP; `hooks` receive request records
 * and transform bodies.
 */
export class DataPlane {
  /** The listeners of ports that site addresses name (`http://a.example.com:8080`), in the order opened. */
  readonly sitePortAddresses: readonly (ListenerAddress & { tls: boolean })[];
  /** The certificates the HTTPS listeners serve by SNI: manual `tls` files first, then `options.certificates`. */
  readonly certificates: CertificateStore;
  /** The response caches (the admin API's CachePort: `{ enabled, purge(key) }`). */
  readonly cache: Pick<CacheRegistry, 'enabled' | 'purge'>;

  readonly #proxy: ProxyServer;
  /** The manual `tls <cert> <key>` certificates (reloaded on every route change). */
  readonly #manual: MemoryCertificateStore;
  readonly #httpPort: number;
  readonly #httpsPort: number;
  /** The addresses each listener port binds (`default_bind`, the sites' `bind`). */
  readonly #binds: ListenerBinds;
  /** Addresses the http_port listeners are open on. */
  readonly #openedHttp = new Set<string>();
  /** Addresses the https_port listeners are open on. */
  readonly #openedHttps = new Set<string>();
  /** Site port → the addresses its listeners are open on. */
  readonly #openedSite = new Map<number, Set<string>>();
  readonly #report: (err: Error) => void;
  readonly #onCertificateError: ((err: Error) => void) | undefined;
  /** Whether TLS-ALPN-01 is answered: the https_port is wanted before any certificate. */
  readonly #alpnChallenges: boolean;
  /** Whether an external store is set: an on-demand route is served before its certificate. */
  readonly #external: boolean;
  readonly #sitePortAddresses: (ListenerAddress & { tls: boolean })[] = [];
  /** Site port → whether it was opened for HTTPS. */
  readonly #listening = new Map<number, boolean>();
  #loaded = new Set<string>();
  #httpAddress: ListenerAddress = { host: '', port: 0 };
  #httpsAddress: ListenerAddress | null = null;
  #httpsOpening = false;
  /** The snapshot served now (the next changes apply to its {@link stateOf}) and its routes' site ports. */
  #snapshot: RouteSnapshot = { routes: [], version: 0, changes: null };
  #ports: SitePortTable;
  /** Lowercase domain → route, for routes with manual `tls <cert> <key>` files. */
  readonly #manualRoutes = new Map<string, RouteSpec>();
  /** The last scan found no route the https_port would serve: only routes changed since can want it. */
  #httpsUnwanted = false;

  private constructor(
    proxy: ProxyServer,
    manual: MemoryCertificateStore,
    certificates: CertificateStore,
    config: Config,
    options: DataPlaneOptions,
    binds: ListenerBinds,
  ) {
    this.#proxy = proxy;
    this.#manual = manual;
    this.certificates = certificates;
    this.#httpPort = config.global.http_port;
    this.#httpsPort = config.global.https_port;
    this.#binds = binds;
    this.#report = options.onSitePortError ?? (() => {});
    this.#onCertificateError = options.onCertificateError;
    this.#alpnChallenges = options.alpnChallenges !== undefined;
    this.#external = options.certificates !== undefined;
    this.#ports = new SitePortTable([], this.#httpPort, this.#httpsPort);
    this.sitePortAddresses = this.#sitePortAddresses;
    const caches = proxy.forwarder.caches;
    this.cache = {
      get enabled() {
        return caches.enabled;
      },
      purge: (key) => caches.purge(key),
    };
  }

  /**
   * Opens the listeners for `table` (routes, taken as version 1, or a
   * snapshot whose changes, if any, are not read: the next changes apply
   * to it) and serves them. Fails, closing what it opened, when a listener
   * cannot be opened or two routes ask one site port for different
   * protocols.
   */
  static async start(
    config: Config,
    table: readonly RouteSpec[] | RouteSnapshot,
    hooks: DataPlaneHooks,
    options: DataPlaneOptions = {},
  ): Promise<DataPlane> {
    const given: RouteSnapshot = isSnapshot(table) ? table : { routes: table, version: 1, changes: null };
    const { routes } = given;
    const first: RouteSnapshot = { routes, version: given.version, changes: null, state: stateOf(given) };
    const { http_port: httpPort, https_port: httpsPort } = config.global;
    const ports = new SitePortTable(routes, httpPort, httpsPort);
    const initial = ports.current;
    const conflict = initial.conflicts[0];
    if (conflict !== undefined) {
      throw new Error(
        `site port ${conflict.port}: ${conflict.kept} and ${conflict.refused} ask it for different protocols (plain HTTP and HTTPS)`,
      );
    }
    const binds = new ListenerBinds(
      config.global.default_bind.length > 0 ? config.global.default_bind : [options.bindHost ?? '0.0.0.0'],
    );
    binds.add(routes, (domain) => initial.byDomain.get(domain) ?? null);
    const manual = new MemoryCertificateStore();
    const certificates = new LayeredCertificateStore(manual, options.certificates);
    const secret = options.secret ?? randomBytes(32);
    const configured = listenerLimitsOf(config.global.servers);
    const proxy = new ProxyServer({
      hooks,
      trustedProxies: config.global.trusted_proxies,
      compileSite:
        options.compileSite ??
        ((site, forwarder) =>
          compileSite(site, {
            forwarder,
            secret,
            ...(options.rateLimitCounter === undefined ? {} : { rateLimitCounter: options.rateLimitCounter }),
          })),
      certificates,
      httpsPort,
      ...(options.reusePort === undefined ? {} : { reusePort: options.reusePort }),
      ...(options.health === undefined ? {} : { health: options.health }),
      ...(options.caches === undefined ? {} : { caches: options.caches }),
      ...(options.ticketKeys === undefined ? {} : { ticketKeys: options.ticketKeys }),
      ...(options.redirects === undefined ? {} : { redirects: options.redirects }),
      ...(options.challenges === undefined ? {} : { challenges: options.challenges }),
      ...(options.alpnChallenges === undefined ? {} : { alpnChallenges: options.alpnChallenges }),
      limits: { ...configured.limits, ...options.limits },
      http2: configured.http2,
      ...(options.connectionCounter === undefined ? {} : { connectionCounter: options.connectionCounter }),
      binds,
    });
    const plane = new DataPlane(proxy, manual, certificates, config, options, binds);
    plane.#loadCertificates(first, null);
    plane.#snapshot = first;
    plane.#ports = ports;
    proxy.setRoutes(first, initial.byDomain);
    try {
      const [first = '0.0.0.0', ...more] = binds.addresses(MAIN_LISTENERS);
      plane.#openedHttp.add(first);
      const http = await proxy.listen(httpPort, first);
      plane.#httpAddress = { host: http.address, port: http.port };
      for (const host of more) {
        plane.#openedHttp.add(host);
        await proxy.listen(http.port, host);
      }
      plane.#httpsUnwanted = !plane.#httpsWanted(routes);
      if (!plane.#httpsUnwanted) await plane.#openHttps();
      for (const { port, tls, domain } of initial.ports.values()) {
        plane.#listening.set(port, tls);
        await plane.#openSitePort(port, tls, domain);
      }
    } catch (err) {
      await proxy.close();
      throw err;
    }
    return plane;
  }

  /** Where the HTTP listener is bound. */
  get httpAddress(): ListenerAddress {
    return this.#httpAddress;
  }

  /** Where the HTTPS listener is bound; null while none is open (a later certificate opens it). */
  get httpsAddress(): ListenerAddress | null {
    return this.#httpsAddress;
  }

  /** Applies what another worker saw of an upstream (see {@link DataPlaneOptions.health}). */
  /** Replaces the TLS session-ticket keys of every HTTPS listener (see `ProxyServer.setTicketKeys`). */
  setTicketKeys(keys: Buffer): void {
    this.#proxy.setTicketKeys(keys);
  }

  applyHealth(event: HealthEvent): void {
    this.#proxy.forwarder.applyHealth(event);
  }

  /** Pool members and whether each is in rotation (for `proxyd_upstream_healthy`). */
  upstreamHealth(): Iterable<{ upstream: string; healthy: boolean }> {
    return this.#proxy.forwarder.upstreamHealth();
  }

  /** Requests in flight and connections open now (`proxyd_http_requests_in_flight`, `proxyd_open_connections`). */
  stats(): { requestsInFlight: number; openConnections: number } {
    return this.#proxy.stats();
  }

  /**
   * Publishes a new route set; requests in flight finish on the route they
   * matched. Opens the site ports it names for the first time and, when it
   * is not open yet and now wanted (see {@link certificatesChanged}), the
   * https_port listener (failures go to `onSitePortError`). A snapshot
   * published by the route store carries what changed since the one before
   * (`RouteChanges`): when their base is the routes served now, the update
   * costs O(changed routes); otherwise every route is compared, O(n).
   */
  setRoutes(snapshot: RouteSnapshot): void {
    const changes = changesFrom(stateOf(this.#snapshot), snapshot);
    // `snapshot.routes` is read only without changes: a large table builds it on the first read.
    const portsChanged =
      changes === null ? this.#ports.reset(snapshot.routes) : this.#ports.apply(changes.upserted, changes.removed);
    const pins = this.#ports.current.byDomain;
    const grew = this.#binds.add(changes?.upserted ?? snapshot.routes, (domain) => pins.get(domain) ?? null);
    if (portsChanged) this.#openSitePorts();
    for (const port of grew) this.#openMoreAddresses(port);
    this.#loadCertificates(snapshot, changes);
    this.#snapshot = snapshot;
    // Pins of unchanged routes moved: the table compares every route.
    const incremental = portsChanged ? null : changes;
    this.#proxy.setRoutes(
      incremental === null ? { ...snapshot, changes: null } : snapshot,
      this.#ports.current.byDomain,
    );
    this.#openHttpsWhenWanted(incremental?.upserted);
  }

  /** Reports site-port conflicts and opens the site ports not open yet. */
  #openSitePorts(): void {
    const ports = this.#ports.current;
    const report = this.#report;
    for (const c of ports.conflicts) {
      report(new Error(`site port ${c.port}: ${c.kept} and ${c.refused} ask it for different protocols`));
    }
    for (const { port, tls, domain } of ports.ports.values()) {
      const open = this.#listening.get(port);
      if (open === undefined) {
        this.#listening.set(port, tls);
        this.#openSitePort(port, tls, domain).catch(report);
      } else if (open !== tls) {
        report(
          new Error(
            `site port ${port} (${domain}) is open for ${open ? 'HTTPS' : 'plain HTTP'} since start; a restart changes it`,
          ),
        );
      }
    }
  }

  /**
   * Tells the data plane that the external certificate store gained, renewed
   * or dropped a certificate (the certificates manager's `onChange`). New
   * handshakes ask the store anyway, so a renewed certificate is served at
   * once and open connections keep theirs, and the redirect asks `has(host)`
   * per request; what this adds is the https_port listener. It is wanted
   * (at start, on `setRoutes`, here) when some route it would serve (an
   * HTTPS site not pinned to a site port) has a certificate, or
   * `alpnChallenges` is set (TLS-ALPN-01 needs the port before the
   * certificate), or the route's site is on-demand and an external store is
   * set (the handshake obtains it). Once open it stays open. A failure to
   * open goes to `onSitePortError`. Cheap once open.
   */
  certificatesChanged(): void {
    this.#openHttpsWhenWanted();
  }

  /** Stops every listener, closes connections, health checks and upstream sockets. */
  close(): Promise<void> {
    return this.#proxy.close();
  }

  /**
   * Stops gracefully (see `ProxyServer.drain`): no new connections, requests
   * and streams in flight finish within `graceMs`, then everything closes.
   */
  drain(graceMs: number): Promise<void> {
    return this.#proxy.drain(graceMs);
  }

  /** Reloads the manual `tls <cert> <key>` files (every route change), keeping track of which routes have them. */
  #loadCertificates(snapshot: RouteSnapshot, changes: RouteChanges | null): void {
    const manual = this.#manualRoutes;
    if (changes === null) {
      manual.clear();
      for (const route of snapshot.routes)
        if (route.site.tls.mode === 'manual') manual.set(route.domain.toLowerCase(), route);
    } else {
      for (const domain of changes.removed) manual.delete(domain);
      for (const route of changes.upserted) {
        if (route.site.tls.mode === 'manual') manual.set(route.domain.toLowerCase(), route);
        else manual.delete(route.domain.toLowerCase());
      }
    }
    if (manual.size === 0 && this.#loaded.size === 0) return;
    const result = loadManualCertificates(this.#manual, [...manual.values()], this.#loaded);
    this.#loaded = result.loaded;
    for (const err of result.errors) this.#onCertificateError?.(err);
  }

  /**
   * Opens the https_port listener when it is not open and now wanted
   * ({@link certificatesChanged}). `changed`: the routes a change added or
   * replaced; when the last scan found no route wanting it, only they (and
   * the manual-certificate routes, whose files were reloaded) are looked at.
   */
  #openHttpsWhenWanted(changed?: readonly RouteSpec[]): void {
    if (this.#httpsAddress !== null || this.#httpsOpening) return;
    const wanted =
      changed !== undefined && this.#httpsUnwanted
        ? this.#httpsWanted(changed) || this.#httpsWanted(this.#manualRoutes.values())
        : this.#httpsWanted(this.#snapshot.routes);
    this.#httpsUnwanted = !wanted;
    if (!wanted) return;
    this.#openHttps().catch((err: unknown) => {
      this.#httpsOpening = false;
      this.#httpsUnwanted = false;
      this.#report(new Error(`https_port ${this.#httpsPort}: ${err instanceof Error ? err.message : String(err)}`));
    });
  }

  /**
   * Whether one of `routes` the https_port would serve (an HTTPS site on the
   * main listeners) can be served there now: TLS-ALPN-01 is answered, its
   * site is on-demand with an external store, or it has a certificate.
   */
  #httpsWanted(routes: Iterable<RouteSpec>): boolean {
    const pinned = this.#ports.current.byDomain;
    for (const route of routes) {
      const domain = route.domain.toLowerCase();
      if (!isHttpsSite(route.site, domain) || pinned.has(domain)) continue;
      if (this.#alpnChallenges || (this.#external && route.site.tls.on_demand) || this.certificates.has(domain)) {
        return true;
      }
    }
    return false;
  }

  async #openHttps(): Promise<void> {
    this.#httpsOpening = true;
    const [first = '0.0.0.0', ...more] = this.#binds.addresses(MAIN_LISTENERS);
    this.#openedHttps.add(first);
    const a = await this.#proxy.listenHttps(this.#httpsPort, first);
    // The first listener fixed the port (https_port 0 picks one); later addresses open on it.
    for (const host of more) this.#openedHttps.add(host);
    this.#httpsAddress = { host: a.address, port: a.port };
    for (const host of more) await this.#proxy.listenHttps(a.port, host);
    // Addresses a route change asked for while these opened.
    this.#openMoreAddresses(MAIN_LISTENERS);
  }

  async #openSitePort(port: number, tls: boolean, domain: string): Promise<void> {
    // Recorded before the first await: a route change meanwhile opens only what is left.
    const hosts = this.#binds.addresses(port);
    this.#openedSite.set(port, new Set(hosts));
    for (const host of hosts) {
      try {
        const a = await this.#proxy.listenSitePort(port, host, tls);
        this.#sitePortAddresses.push({ host: a.address, port: a.port, tls });
      } catch (err) {
        throw new Error(`site port ${port} (${domain}): ${err instanceof Error ? err.message : String(err)}`, {
          cause: err,
        });
      }
    }
  }

  /**
   * Opens the addresses a route change added to an open listener port (a
   * site's `bind`); a port not open yet gets them when it opens. A failure
   * is reported: e.g. `0.0.0.0` asked for on a port already open on a
   * specific address (the kernel refuses the overlap; a restart binds it).
   */
  #openMoreAddresses(port: number): void {
    const report = (what: string, host: string) => (err: unknown) =>
      this.#report(
        new Error(`${what} on ${host}: ${err instanceof Error ? err.message : String(err)}`, { cause: err }),
      );
    if (port === MAIN_LISTENERS) {
      const httpPort = this.#httpAddress.port;
      for (const host of this.#missing(this.#openedHttp, port)) {
        this.#proxy.listen(httpPort, host).catch(report(`http_port ${httpPort}`, host));
      }
      const https = this.#httpsAddress;
      if (https === null) return;
      for (const host of this.#missing(this.#openedHttps, port)) {
        this.#proxy.listenHttps(https.port, host).catch(report(`https_port ${https.port}`, host));
      }
      return;
    }
    const opened = this.#openedSite.get(port);
    const tls = this.#listening.get(port);
    if (opened === undefined || tls === undefined) return;
    for (const host of this.#missing(opened, port)) {
      this.#proxy
        .listenSitePort(port, host, tls)
        .then((a) => this.#sitePortAddresses.push({ host: a.address, port: a.port, tls }))
        .catch(report(`site port ${port}`, host));
    }
  }

  /** The addresses `port` binds that are not in `opened`, added to it. */
  #missing(opened: Set<string>, port: number): string[] {
    const missing = this.#binds.addresses(port).filter((host) => !opened.has(host));
    for (const host of missing) opened.add(host);
    return missing;
  }
}

function isSnapshot(table: readonly RouteSpec[] | RouteSnapshot): table is RouteSnapshot {
  return !Array.isArray(table);
}
