import type { Config, RouteSpec } from './model/index.js';

/**
 * One route per address host of every site, owned by the Proxyfile. A host
 * written twice keeps its last site (the Proxyfile compiler rejects that case).
 */
export function routesFromConfig(config: Config): RouteSpec[] {
  const byDomain = new Map<string, RouteSpec>();
  for (const site of config.sites) {
    for (const address of site.addresses) {
      const domain = address.host.toLowerCase();
      byDomain.set(domain, { domain, origin: 'proxyfile', source: null, site });
    }
  }
  return [...byDomain.values()];
}
