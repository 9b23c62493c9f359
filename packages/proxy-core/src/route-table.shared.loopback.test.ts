// Issue 30: API routes to one upstream share one compiled pipeline and one pool.
import { defaultReverseProxy, emptySite, type RouteSpec, type Site } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import { get, siteProxy, upstream } from './loopback.test-helpers.js';
import type { CompiledSite } from './pipeline.js';
import { RouteTable } from './route-table.js';

/**
 * Routes as the route store makes API routes (`apiRouteSpec`, which this
 * package may not import): each site a shallow copy of one template per
 * upstream, with its own `addresses`.
 */
function apiRoutes(count: number, port: number, prefix = 's'): RouteSpec[] {
  const template = emptySite([]);
  template.handler = defaultReverseProxy([{ host: '127.0.0.1', port }]);
  return Array.from({ length: count }, (_, i) => {
    const domain = `${prefix}${i}.names.test`;
    const site: Site = { ...template, addresses: [{ scheme: 'http', host: domain, port: null }] };
    return { domain, origin: 'api', source: null, site };
  });
}

const counting = () => {
  const compiled = { count: 0 };
  const compile = (): CompiledSite => {
    compiled.count++;
    return { handle() {} };
  };
  return { compiled, compile };
};

describe('issue 30: look-alike sites share what is compiled', () => {
  it('compiles 10,000 API routes to one upstream once, and keeps it until the last goes', () => {
    const { compiled, compile } = counting();
    const routes = apiRoutes(10_000, 9);
    const table = new RouteTable(routes, 1, compile);
    expect(compiled.count).toBe(1);
    expect(table.compiledCount).toBe(1);
    expect([...table.compiledSites()]).toHaveLength(1);
    expect(table.handlers().size).toBe(1);
    expect(table.match('s9999.names.test')?.compiled).toBe(table.match('s0.names.test')?.compiled);

    // The site compiled first leaves: the others keep its compiled pipeline, nothing is closed.
    const first = table.update({ routes: routes.slice(1), version: 2, changes: null });
    expect(first.dropped).toEqual([]);
    expect(table.match('s1.names.test')?.compiled).not.toBeNull();
    // Another upstream is another pipeline; the last route of one drops it.
    const other = apiRoutes(1, 10, 'o');
    table.update({ routes: [routes[1] as RouteSpec, ...other], version: 3, changes: null });
    expect(table.compiledCount).toBe(2);
    const last = table.update({ routes: other, version: 4, changes: null });
    expect(last.dropped).toHaveLength(1);
    expect(table.compiledCount).toBe(1);
    expect(compiled.count).toBe(2);
  });

  it('compiles its own for a site with per-site state (rate_limit, cache) or another field', () => {
    const { compiled, compile } = counting();
    const [a, b, c] = apiRoutes(3, 9) as [RouteSpec, RouteSpec, RouteSpec];
    const limited = { ...b, site: { ...b.site, rate_limit: 5 } };
    const header = { ...c, site: { ...c.site, header: [] } };
    new RouteTable([a, limited, header], 1, compile);
    expect(compiled.count).toBe(3);
  });

  it('serves every route through one pool', async () => {
    const up = await upstream((req, res) => res.end(req.headers.host));
    const routes = apiRoutes(10_000, up.port);
    const { server, port } = await siteProxy(routes);
    for (const i of [0, 4_999, 9_999]) {
      const reply = await get(port, `s${i}.names.test`);
      expect(reply).toMatchObject({ status: 200, body: `s${i}.names.test` });
    }
    expect([...server.forwarder.upstreamHealth()]).toHaveLength(1);
  });
});
