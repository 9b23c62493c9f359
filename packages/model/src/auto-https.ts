/**
 * The one automatic-HTTPS rule: which route domains get a certificate from
 * proxyd, and which get plain HTTP redirected to HTTPS. The certificates
 * (which names to obtain) and the data plane (which requests to redirect)
 * both read it here, so the two can never disagree about what an HTTPS site
 * is. What it does not decide: which CA issues a name (the certificates
 * package), and the per-request conditions of a redirect (a certificate is
 * available now, the https_port listener is open: the data plane's
 * `wantsHttps`).
 */
import { isCatchAllDomain } from './catch-all.js';
import type { GlobalOptions } from './global-options.js';
import type { RouteSpec } from './routes.js';
import type { Site } from './site.js';
import type { AutoHttps } from './tls.js';

/** What automatic HTTPS does for one route (see {@link autoHttpsFor}). */
export interface AutoHttpsDecision {
  /**
   * How proxyd obtains the domain's certificate: `managed` (at start, and
   * renewed), `on_demand` (at the first TLS handshake for a name the domain
   * covers, once `on_demand_ask` allows it), or null (none obtained).
   */
  readonly certificate: 'managed' | 'on_demand' | null;
  /**
   * Whether a plain-HTTP request for the domain is redirected to the
   * https_port (308), once a certificate for the host is available and the
   * https_port listener is open.
   */
  readonly redirect: boolean;
}

/** The global options the rule reads. */
export type AutoHttpsOptions = Pick<GlobalOptions, 'auto_https' | 'http_port' | 'https_port'>;

/** Whether `auto_https` lets proxyd obtain certificates: `on` and `disable_redirects`. */
export function autoHttpsObtainsCertificates(mode: AutoHttps): boolean {
  return mode === 'on' || mode === 'disable_redirects';
}

/**
 * Whether `auto_https` lets proxyd redirect plain HTTP to HTTPS: `on` and
 * `disable_certs` (which redirects only where a certificate exists, from
 * files or obtained before).
 */
export function autoHttpsRedirects(mode: AutoHttps): boolean {
  return mode === 'on' || mode === 'disable_certs';
}

/**
 * Whether `domain` (lowercase) names an HTTPS site: the site's address
 * whose host is the domain has no `http://` scheme, and the site's `tls`
 * is not `off`. A catch-all (`:8080 {`, `http:// {`) never is: it has no
 * name to certify. `tls <cert> <key>` is an HTTPS site whose certificate
 * comes from its files.
 */
export function isHttpsSite(site: Site, domain: string): boolean {
  if (site.tls.mode === 'off' || isCatchAllDomain(domain)) return false;
  for (const address of site.addresses) {
    if (address.host.toLowerCase() === domain) return address.scheme !== 'http';
  }
  return false;
}

/**
 * Whether the address naming `domain` (lowercase) pins the route to a site
 * port: a port other than the http_port and the https_port, served by its
 * own listener only (so never reached by a redirect to the https_port).
 */
function onSitePort(site: Site, domain: string, global: AutoHttpsOptions): boolean {
  for (const address of site.addresses) {
    if (address.host.toLowerCase() !== domain) continue;
    const { port } = address;
    return port !== null && port !== global.http_port && port !== global.https_port;
  }
  return false;
}

/**
 * What automatic HTTPS does for `route` under the global options:
 *
 * - a certificate when the route is an HTTPS site ({@link isHttpsSite}),
 *   `auto_https` obtains certificates ({@link autoHttpsObtainsCertificates})
 *   and the site does not bring its own (`tls <cert> <key>`); `on_demand`
 *   when its `tls` says so. IP addresses, `localhost` and other names
 *   without a public suffix are certified too (by the local CA);
 * - a redirect when the route is an HTTPS site, `auto_https` redirects
 *   ({@link autoHttpsRedirects}) and the route is served on the main
 *   listeners (its address names no other port than the http_port or the
 *   https_port).
 */
export function autoHttpsFor(route: RouteSpec, global: AutoHttpsOptions): AutoHttpsDecision {
  const domain = route.domain.toLowerCase();
  const { site } = route;
  const https = isHttpsSite(site, domain);
  const certified = https && site.tls.mode !== 'manual' && autoHttpsObtainsCertificates(global.auto_https);
  return {
    certificate: certified ? (site.tls.on_demand ? 'on_demand' : 'managed') : null,
    redirect: https && autoHttpsRedirects(global.auto_https) && !onSitePort(site, domain, global),
  };
}
