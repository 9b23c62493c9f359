import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { CertificateStore, CompiledSite, RequestContext, RouteSpec, RouteTable } from '@proxyd/proxy-core';

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

const NO_ROUTE = 'no route for host\n';

/**
 * The site ports of a route set: one entry per port named by an address
 * (the address whose host is the route's domain) that is neither the
 * http_port nor the https_port. A port asked for with both protocols keeps
 * the first route's and reports the others, which are then served nowhere
 * (the Proxyfile compiler rejects this case; API routes could still produce it).
 */
export function sitePortsOf(
  routes: readonly RouteSpec[],
  httpPort: number,
  httpsPort: number,
): { ports: Map<number, SitePort>; byDomain: Map<string, number>; conflicts: SitePortConflict[] } {
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
 * Which listener may serve which site. A route whose address names a site
 * port is served only on that port; every other route only on the main
 * listeners (http_port, https_port). Inactive — no check at all — while no
 * route names a site port and no site-port listener is open.
 */
export class SitePortPolicy {
  /** Bound ports of the main HTTP and HTTPS listeners. */
  readonly main = new Set<number>();
  /** Site-port listeners opened so far (they stay open until the data plane closes). */
  readonly open = new Set<number>();
  /** Domains pinned to a site port. */
  byDomain: ReadonlyMap<string, number> = new Map();

  /** Whether any request may be refused. */
  get active(): boolean {
    return this.byDomain.size > 0 || this.open.size > 0;
  }

  /** Whether a request for `domain` that arrived on local port `port` may be served. */
  allows(domain: string, port: number | undefined): boolean {
    const pinned = this.byDomain.get(domain);
    if (pinned !== undefined) return port === pinned;
    return port !== undefined && this.main.has(port);
  }

  /**
   * Wraps a compiled site so that a request arriving on a listener that does
   * not serve the site gets the same `404 no route for host` as an unknown
   * host. One wrapper per site, built once; per request one map lookup, and
   * none while the policy is inactive.
   */
  guard(compiled: CompiledSite): CompiledSite {
    const guarded: CompiledSite = {
      handle: (req: IncomingMessage, res: ServerResponse, ctx: RequestContext) => {
        if (this.active && !this.allows(ctx.domain, req.socket.localPort)) {
          res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8', 'content-length': NO_ROUTE.length });
          res.end(NO_ROUTE);
          return;
        }
        compiled.handle(req, res, ctx);
      },
    };
    const upgrade = compiled.upgrade;
    if (upgrade !== undefined) {
      guarded.upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer, ctx: RequestContext) => {
        if (this.active && !this.allows(ctx.domain, req.socket.localPort)) {
          socket.end(
            `HTTP/1.1 404 Not Found\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${NO_ROUTE.length}\r\nconnection: close\r\n\r\n${NO_ROUTE}`,
          );
          return;
        }
        upgrade.call(compiled, req, socket, head, ctx);
      };
    }
    const close = compiled.close;
    if (close !== undefined) guarded.close = () => close.call(compiled);
    return guarded;
  }

  /**
   * The certificate store as the server's redirect check sees it: no
   * HTTP→HTTPS redirect while the https_port listener is not open, and none
   * for a host pinned to a site port (it is not served on the https_port;
   * the request is refused instead).
   */
  redirectView(store: CertificateStore, table: () => RouteTable, httpsOpen: () => boolean): CertificateStore {
    return {
      contextFor: (name) => store.contextFor(name),
      has: (host) => {
        if (!httpsOpen()) return false;
        if (this.byDomain.size > 0) {
          const route = table().matchHost(host);
          if (route !== undefined && this.byDomain.has(route.domain)) return false;
        }
        return store.has(host);
      },
    };
  }
}
