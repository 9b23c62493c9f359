import { defaultReverseProxy, emptySite, type RouteSpec, type Site, type SiteAddress } from '@proxyd/model';
import { formatUpstream, parseUpstream } from './upstream.js';

/**
 * A route written through the admin API (spec §2.2), also the record the
 * state file persists: domain lowercase, upstream canonical `host:port`.
 */
export interface ApiRouteRecord {
  domain: string;
  upstream: string;
  tls: boolean;
  source: string | null;
}

/** A route as the admin API shows it (spec §2.1). */
export interface AdminRouteView {
  domain: string;
  /** First upstream's `host:port` (IPv6 in brackets); null when the site's handler is not reverse_proxy. */
  upstream: string | null;
  /** Upstream TLS; false when there is no reverse_proxy handler. */
  tls: boolean;
  rate_limit_rps: number | null;
  under_attack: boolean;
  /** Controller tag; null for Proxyfile routes and untagged API writes. */
  source: string | null;
}

/** Canonicalises a write: lowercase domain, canonical upstream. Throws STORE_INVALID_UPSTREAM. */
export function canonicalRecord(write: ApiRouteRecord): ApiRouteRecord {
  return {
    domain: write.domain.toLowerCase(),
    upstream: formatUpstream(parseUpstream(write.upstream)),
    tls: write.tls,
    source: write.source,
  };
}

/**
 * The RouteSpec of an API route: a site served like a Proxyfile block
 * `<domain> { reverse_proxy <upstream> }` — address scheme null (automatic
 * HTTPS, with HTTP served or redirected as for Proxyfile sites), TLS auto,
 * analytics on, one upstream, upstream TLS from `tls`.
 *
 * API routes differ only in domain, upstream and upstream TLS, so the site
 * is a shallow copy of one template per (upstream, tls): everything but
 * `addresses` is shared (the handler object included, so the data plane
 * keeps one pool and one compiled pipeline for all of them, and a
 * structured clone carries the shared parts once). An API route costs its
 * domain and a few references, not a site of its own (issue 30). Nothing
 * may mutate a route's site in place (the store never does).
 */
export function apiRouteSpec(record: ApiRouteRecord): RouteSpec {
  const site: Site = { ...apiSiteTemplate(record.upstream, record.tls), addresses: [apiRouteAddress(record.domain)] };
  return { domain: record.domain, origin: 'api', source: record.source, site };
}

/** The address of an API route's site: the domain, no scheme, no port. */
function apiRouteAddress(domain: string): SiteAddress {
  return { scheme: null, host: domain, port: null };
}

/**
 * How many (upstream, tls) templates are kept (the most recently used): a
 * route whose template was evicted gets a new one, which is correct and
 * only shares less; the bound keeps a table of distinct upstreams from
 * holding the sites of routes long deleted.
 */
const TEMPLATES = 4096;
/** (upstream, tls) → the shared site of API routes, least recently used first. */
const templates = new Map<string, Site>();

/** The site every API route to `upstream` with upstream TLS `tls` shares, without addresses. */
function apiSiteTemplate(upstream: string, tls: boolean): Site {
  const key = `${tls ? 's' : 'p'}${upstream}`;
  let site = templates.get(key);
  if (site !== undefined) {
    templates.delete(key);
  } else {
    site = emptySite([]);
    const handler = defaultReverseProxy([parseUpstream(upstream)]);
    handler.tls.enabled = tls;
    site.handler = handler;
    if (templates.size >= TEMPLATES) templates.delete(templates.keys().next().value as string);
  }
  templates.set(key, site);
  return site;
}

/** The admin representation (spec §2.1) of any route, whatever its origin. */
export function toAdminRoute(spec: RouteSpec): AdminRouteView {
  const handler = spec.site.handler;
  const proxy = handler?.kind === 'reverse_proxy' ? handler : null;
  const first = proxy?.upstreams[0];
  return {
    domain: spec.domain,
    upstream: first ? formatUpstream(first) : null,
    tls: proxy?.tls.enabled ?? false,
    rate_limit_rps: spec.site.rate_limit,
    under_attack: spec.site.under_attack.enabled,
    source: spec.source,
  };
}

/** The record of an API route (inverse of {@link apiRouteSpec}); null for other origins. */
export function toApiRecord(spec: RouteSpec): ApiRouteRecord | null {
  if (spec.origin !== 'api') return null;
  const view = toAdminRoute(spec);
  if (view.upstream === null) return null;
  return { domain: spec.domain, upstream: view.upstream, tls: view.tls, source: spec.source };
}
