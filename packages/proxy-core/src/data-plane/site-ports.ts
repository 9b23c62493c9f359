import type { RouteSpec } from '../model/index.js';

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
export function sitePortsOf(routes: readonly RouteSpec[], httpPort: number, httpsPort: number): SitePorts {
  const ports = new Map<number, SitePort>();
  const byDomain = new Map<string, number>();
  const conflicts: SitePortConflict[] = [];
  for (const route of routes) {
    const domain = route.domain.toLowerCase();
    const address = route.site.addresses.find((a) => a.host.toLowerCase() === domain);
    const port = address?.port ?? null;
    if (address === undefined || port === null || port === httpPort || port === httpsPort) continue;
    const tls = address.scheme !== 'http' && route.site.tls.mode !== 'off';
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
