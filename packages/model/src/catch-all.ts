import type { SiteAddress } from './addresses.js';

/**
 * The host of a catch-all site address (`:8080 {`, `http:// {`): the site
 * answers any host on its port, after every named site there. Caddy's
 * `*` (one label) is not this: a Proxyfile writes a catch-all without a host.
 */
export const CATCH_ALL_HOST = '*';

/**
 * The route domain of a catch-all on `port`: `*` without a port (the
 * http_port), else `*:<port>`. Never a valid host name, so no API or label
 * route can take it, and one route per domain means one catch-all per port.
 */
export function catchAllDomain(port: number | null): string {
  return port === null ? CATCH_ALL_HOST : `${CATCH_ALL_HOST}:${port}`;
}

/** Whether a route domain is a catch-all's (`*`, `*:8080`). */
export function isCatchAllDomain(domain: string): boolean {
  return domain === CATCH_ALL_HOST || (domain.charCodeAt(0) === 42 /* * */ && domain.charCodeAt(1) === 58) /* : */;
}

/** The route domain an address gives: its host, or {@link catchAllDomain} for a catch-all. */
export function addressDomain(address: SiteAddress): string {
  return address.host === CATCH_ALL_HOST ? catchAllDomain(address.port) : address.host.toLowerCase();
}
