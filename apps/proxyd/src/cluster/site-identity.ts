import type { RouteSpec, Site } from '@proxyd/proxy-core/model';

/**
 * Site identity across the IPC boundary. The data plane reuses a compiled
 * site (its pools and health state, its cache, its rate-limit counters) for
 * the Site *object* it was compiled for, and the route store keeps the
 * object of a site that did not change (an admin write leaves the other
 * routes' sites as they were; a Proxyfile reload makes new ones). A table
 * sent to a worker arrives as new objects, so the primary numbers its Site
 * objects ({@link SiteIds}) and the worker keeps one object per number
 * ({@link SiteIdentity}): a worker recompiles exactly what one process
 * would.
 */
export class SiteIds {
  readonly #ids = new WeakMap<Site, number>();
  #next = 1;

  /** The number of each route's Site object, in order. */
  of(routes: readonly RouteSpec[]): number[] {
    return routes.map((route) => {
      let id = this.#ids.get(route.site);
      if (id === undefined) {
        id = this.#next++;
        this.#ids.set(route.site, id);
      }
      return id;
    });
  }
}

/** The worker's side of {@link SiteIds}. */
export class SiteIdentity {
  #known = new Map<number, Site>();

  /** `routes` with each site replaced by the object this worker already has for its number, if any. */
  intern(routes: readonly RouteSpec[], ids: readonly number[]): RouteSpec[] {
    const next = new Map<number, Site>();
    const out = routes.map((route, i) => {
      const id = ids[i] as number;
      const site = next.get(id) ?? this.#known.get(id) ?? route.site;
      next.set(id, site);
      return site === route.site ? route : { ...route, site };
    });
    this.#known = next;
    return out;
  }
}
