import type { RouteSpec } from '@proxyd/model';
import { addressDomain } from '@proxyd/model/rules';

/** A port a site names in its address (`http://intranet.example.com:8080`), other than http_port / https_port. */
export interface SitePort {
  port: number;
  /** HTTPS (SNI, the site's certificate) unless the address is `http://` or the site has `tls off`. */
  tls: boolean;
  /** The first route that asked for the port (for messages). */
  domain: string;
}

/** Two routes that ask one site port for different protocols. */
export interface SitePortConflict {
  port: number;
  /** The route whose protocol the port keeps. */
  kept: string;
  /** The route refused. */
  refused: string;
}

/** The site ports of a route set, as {@link sitePortsOf} finds them. */
export interface SitePorts {
  /** Port → what it serves, in the order first named. */
  ports: Map<number, SitePort>;
  /** Lowercase domain → the site port it is served on only (0: served nowhere, after a conflict). */
  byDomain: Map<string, number>;
  conflicts: SitePortConflict[];
}

/**
 * The site ports of a route set: one entry per port named by an address
 * (the address whose host is the route's domain) that is neither the
 * http_port nor the https_port. A port asked for with both protocols keeps
 * the first route's and reports the others, which are then served nowhere
 * (the Proxyfile compiler rejects this case; API routes could still produce it).
 */
export function sitePortsOf(routes: Iterable<RouteSpec>, httpPort: number, httpsPort: number): SitePorts {
  const ports = new Map<number, SitePort>();
  const byDomain = new Map<string, number>();
  const conflicts: SitePortConflict[] = [];
  for (const route of routes) {
    const named = sitePortOf(route, httpPort, httpsPort);
    if (named === null) continue;
    const { domain, port, tls } = named;
    const first = ports.get(port);
    if (first === undefined) ports.set(port, { port, tls, domain });
    else if (first.tls !== tls) {
      conflicts.push({ port, kept: first.domain, refused: domain });
      // Pinned to port 0, which no listener has: served nowhere rather than on the wrong protocol.
      byDomain.set(domain, 0);
      continue;
    }
    byDomain.set(domain, port);
  }
  return { ports, byDomain, conflicts };
}

/** The site port a route names (lowercase domain, port, protocol), or null when it is served on the main listeners. */
export function sitePortOf(route: RouteSpec, httpPort: number, httpsPort: number): SitePort | null {
  const domain = route.domain.toLowerCase();
  for (const address of route.site.addresses) {
    if (addressDomain(address) !== domain) continue;
    const port = address.port;
    if (port === null || port === httpPort || port === httpsPort) return null;
    return { port, tls: address.scheme !== 'http' && route.site.tls.mode !== 'off', domain };
  }
  return null;
}

/**
 * The site ports of a changing route set ({@link sitePortsOf} of it), kept
 * up to date per change: it remembers the routes that name a site port,
 * so a change costs O(changed routes), plus O(routes naming a site port)
 * when one of those changed. Most routes (every API route) name none.
 */
export class SitePortTable {
  readonly #httpPort: number;
  readonly #httpsPort: number;
  /** Lowercase domain → its route, for routes naming a site port, in the order first seen. */
  readonly #named = new Map<string, RouteSpec>();
  #current: SitePorts = { ports: new Map(), byDomain: new Map(), conflicts: [] };

  constructor(routes: readonly RouteSpec[], httpPort: number, httpsPort: number) {
    this.#httpPort = httpPort;
    this.#httpsPort = httpsPort;
    this.reset(routes);
  }

  /** The site ports of the routes now. */
  get current(): SitePorts {
    return this.#current;
  }

  /** Takes a whole route set (O(n)); true when the site ports or the pins changed. */
  reset(routes: readonly RouteSpec[]): boolean {
    this.#named.clear();
    for (const route of routes) {
      const named = sitePortOf(route, this.#httpPort, this.#httpsPort);
      if (named !== null) this.#named.set(named.domain, route);
    }
    return this.#recompute();
  }

  /**
   * Takes a change: routes added or replaced, lowercase domains removed.
   * True when the site ports or the pins changed; false leaves `current` as it was.
   */
  apply(upserted: readonly RouteSpec[], removed: readonly string[]): boolean {
    let touched = false;
    for (const domain of removed) if (this.#named.delete(domain)) touched = true;
    for (const route of upserted) {
      const named = sitePortOf(route, this.#httpPort, this.#httpsPort);
      if (named !== null) {
        this.#named.set(named.domain, route);
        touched = true;
      } else if (this.#named.delete(route.domain.toLowerCase())) {
        touched = true;
      }
    }
    return touched && this.#recompute();
  }

  #recompute(): boolean {
    const previous = this.#current;
    this.#current = sitePortsOf(this.#named.values(), this.#httpPort, this.#httpsPort);
    return !samePorts(previous, this.#current);
  }
}

function samePorts(a: SitePorts, b: SitePorts): boolean {
  if (a.ports.size !== b.ports.size || a.byDomain.size !== b.byDomain.size) return false;
  for (const [port, p] of a.ports) if (b.ports.get(port)?.tls !== p.tls) return false;
  for (const [domain, port] of a.byDomain) if (b.byDomain.get(domain) !== port) return false;
  return true;
}

/**
 * Whether a listener serves a route: a route pinned to a site port only on
 * that port; every other route only on the main listeners (http_port,
 * https_port). `localPort` is the port the request arrived on.
 */
export function servedOn(
  sitePort: number | null,
  localPort: number | undefined,
  mainPorts: ReadonlySet<number>,
): boolean {
  if (sitePort !== null) return localPort === sitePort;
  return localPort !== undefined && mainPorts.has(localPort);
}
