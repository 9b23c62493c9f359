import type { RouteSpec, Site } from '@proxyd/proxy-core/model';

/**
 * Keeps Site objects the same across route tables a worker receives. The
 * data plane reuses a compiled site (its pools and health state, its
 * cache, its rate-limit counters) for the Site *object* it was compiled
 * for; a table sent over IPC arrives as new objects, so without this every
 * publish would recompile every site. A site equal (same JSON) to one of
 * the previous table keeps that object. Site models are plain data.
 */
export class SiteIdentity {
  #known = new Map<string, Site>();

  /** `routes` with each site replaced by the equal one already known, if any. */
  intern(routes: readonly RouteSpec[]): RouteSpec[] {
    const next = new Map<string, Site>();
    const out = routes.map((route) => {
      const key = JSON.stringify(route.site);
      const site = next.get(key) ?? this.#known.get(key) ?? route.site;
      next.set(key, site);
      return site === route.site ? route : { ...route, site };
    });
    this.#known = next;
    return out;
  }
}
