import type { ReverseProxyHandler, RouteSpec, Site, SiteAddress } from '@proxyd/model';
import type { RouteUpdate } from './route-tables.js';

/**
 * API routes carried column-wise (issue 30): 100,000 routes that differ only
 * in domain, upstream and upstream TLS are a few shared sites (`bodies`,
 * each an API route's site with no `addresses`) and, per route, its domain,
 * the index of its body and its `source`. Each body is numbered (negative,
 * so it never meets a `SiteIds` number) and the node keeps one object per
 * number: routes added later to the same upstream share the body's objects
 * (its handler: one pool, one compiled pipeline). Plain data.
 */
export interface CompactRoutes {
  /** The shared sites, `addresses` empty. */
  readonly bodies: Site[];
  /** Each body's number (negative). */
  readonly bodyIds: number[];
  /** Each route's domain (lowercase): its site's one address, no scheme, no port. */
  readonly domains: string[];
  /** Each route's body (an index into `bodies`). */
  readonly body: number[];
  /** Each route's `source`. */
  readonly sources: (string | null)[];
}

/**
 * The primary's side: takes the API routes out of an update into
 * {@link CompactRoutes}, finding their shared body by handler object. One
 * per primary (the numbers of its bodies must stay the same across
 * messages); the transport uses it, so an in-process node still gets the
 * store's own objects.
 */
export class RouteCompactor {
  /** Handler → the bodies of the sites that use it (held while the handler is). */
  readonly #bodies = new WeakMap<ReverseProxyHandler, Site[]>();
  readonly #ids = new WeakMap<Site, number>();
  #next = -1;

  /** `update` with its API routes compact (the same object when it has none). */
  compact(update: RouteUpdate): RouteUpdate {
    const list = update.kind === 'full' ? update.routes : update.upserted;
    const routes: RouteSpec[] = [];
    const siteIds: number[] = [];
    const compact: CompactRoutes = { bodies: [], bodyIds: [], domains: [], body: [], sources: [] };
    const index = new Map<Site, number>();
    for (const [i, route] of list.entries()) {
      const body = compactable(route) ? this.#bodyOf(route.site) : null;
      if (body === null) {
        routes.push(route);
        siteIds.push(update.siteIds[i] as number);
        continue;
      }
      let at = index.get(body);
      if (at === undefined) {
        at = compact.bodies.length;
        index.set(body, at);
        compact.bodies.push(body);
        compact.bodyIds.push(this.#ids.get(body) as number);
      }
      compact.domains.push(route.domain);
      compact.body.push(at);
      compact.sources.push(route.source);
    }
    if (compact.domains.length === 0) return update;
    return update.kind === 'full'
      ? { ...update, routes, siteIds, compact }
      : { ...update, upserted: routes, siteIds, compact };
  }

  #bodyOf(site: Site): Site {
    const handler = site.handler as ReverseProxyHandler;
    let bodies = this.#bodies.get(handler);
    for (const body of bodies ?? []) if (sameButAddresses(body, site)) return body;
    const body: Site = { ...site, addresses: [] };
    this.#ids.set(body, this.#next--);
    if (bodies === undefined) {
      bodies = [];
      this.#bodies.set(handler, bodies);
    }
    bodies.push(body);
    return body;
  }
}

/** The site of a compact route: its body with the route's domain as its address. */
export function compactSite(body: Site, domain: string): Site {
  return { ...body, addresses: [apiAddress(domain)] };
}

function apiAddress(domain: string): SiteAddress {
  return { scheme: null, host: domain, port: null };
}

/** An API route whose site has the one address an API route has (its domain, no scheme, no port) and a handler. */
function compactable(route: RouteSpec): boolean {
  if (route.origin !== 'api' || route.site.handler === null) return false;
  const [address, more] = route.site.addresses;
  return (
    more === undefined &&
    address !== undefined &&
    address.scheme === null &&
    address.port === null &&
    address.host === route.domain
  );
}

/** Whether two sites hold the same objects in every field but `addresses`. */
function sameButAddresses(a: Site, b: Site): boolean {
  const keys = Object.keys(a) as (keyof Site)[];
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) if (key !== 'addresses' && a[key] !== b[key]) return false;
  return true;
}
