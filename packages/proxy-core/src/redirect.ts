/** What the HTTPS rule reads of a route (a {@link Route} has both). */
export interface HttpsRuleSubject {
  /** The address that named the domain has no `http://` scheme and `tls` is not `off` (the model's `isHttpsSite`). */
  readonly httpsSite: boolean;
  /** The site port the route is served on only; null when it is served on the main listeners. */
  readonly sitePort: number | null;
}

/**
 * The per-request half of the model's automatic-HTTPS rule (`autoHttpsFor`,
 * whose static half the route carries: `httpsSite`, `sitePort`, and the
 * `redirects` option from `auto_https`): a plain-HTTP request for the route
 * is redirected to the https_port when the route is an HTTPS site,
 * is not pinned to a site port (it is not served on the https_port), a
 * certificate for the host is available now (else the redirect would lead to
 * a failing handshake: the site is served over HTTP instead), and the
 * https_port listener is open. The front door asks it only for plain-HTTP
 * requests (not upgrades) outside `/.well-known/acme-challenge/`.
 */
export function wantsHttps(
  route: HttpsRuleSubject,
  certificateAvailable: boolean,
  httpsListenerOpen: boolean,
): boolean {
  return route.httpsSite && route.sitePort === null && certificateAvailable && httpsListenerOpen;
}

/** The `:port` suffix of redirect locations: empty for 443. */
export function httpsPortSuffix(httpsPort: number | undefined): string {
  return httpsPort === undefined || httpsPort === 443 ? '' : `:${httpsPort}`;
}

/** The redirect location: `https://host[:port]` + the request target (origin form); IPv6 hosts in brackets. */
export function httpsLocation(host: string, portSuffix: string, target: string): string {
  return `https://${host.includes(':') ? `[${host}]` : host}${portSuffix}${target}`;
}
