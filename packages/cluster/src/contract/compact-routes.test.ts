// Issue 30: a worker starts from API routes carried column-wise, and serves every one of them.
import { defaultReverseProxy, emptySite, type RouteSnapshot, type RouteSpec, type Site } from '@proxyd/model';
import { RouteTable } from '@proxyd/proxy-core';
import { describe, expect, it } from 'vitest';
import { decodeRouteUpdate, encodeRouteUpdate } from '../ipc/route-encoding.js';
import { NodeRoutes, RoutePublisher, type RouteUpdate } from './route-tables.js';

/** API routes as the route store makes them (`apiRouteSpec`): a shallow copy of one site per upstream. */
function apiRoutes(count: number, port: number, prefix: string): RouteSpec[] {
  const template = emptySite([]);
  template.handler = defaultReverseProxy([{ host: '127.0.0.1', port }]);
  return Array.from({ length: count }, (_, i) => apiRoute(`${prefix}${i}.names.test`, template));
}

function apiRoute(domain: string, template: Site, source: string | null = null): RouteSpec {
  return {
    domain,
    origin: 'api',
    source,
    site: { ...template, addresses: [{ scheme: null, host: domain, port: null }] },
  };
}

/** What a worker gets for `update`: the bytes the primary sends, decoded. */
const overIpc = (update: RouteUpdate): RouteUpdate => decodeRouteUpdate(encodeRouteUpdate(update));

describe('compact route tables (issue 30)', () => {
  const routes = apiRoutes(10_000, 9, 's');
  const template = { ...(routes[0] as RouteSpec).site, addresses: [] };
  const proxyfile: RouteSpec = {
    domain: 'site.test',
    origin: 'proxyfile',
    source: null,
    site: emptySite([{ scheme: 'http', host: 'site.test', port: null }]),
  };
  const first: RouteSnapshot = { routes: [proxyfile, ...routes], version: 1, changes: null };

  it('a worker serves every API route of a compact snapshot, one added by a delta and not one removed', () => {
    const publisher = new RoutePublisher();
    const full = publisher.full(first);
    const bytes = encodeRouteUpdate(full);
    // 10,000 routes are their domains and a few shared objects: ~22 bytes a route, not ~260.
    expect(bytes.byteLength).toBeLessThan(10_000 * 40);
    const node = new NodeRoutes();
    const table = node.apply(decodeRouteUpdate(bytes));
    if (table === null) throw new Error('not applied');
    let compiles = 0;
    const routeTable = new RouteTable(table.routes, table.version, () => {
      compiles++;
      return { handle() {} };
    });
    expect(routeTable.size).toBe(10_001);
    for (const spec of first.routes) {
      const route = routeTable.match(spec.domain);
      expect(route?.site).toEqual(spec.site);
      expect(route?.source).toBe(spec.source);
      expect(route?.origin).toBe(spec.origin);
    }
    expect(compiles).toBe(2);

    const added = apiRoute('new.names.test', template, 'ctl');
    const removed = (routes[5] as RouteSpec).domain;
    const next = [...first.routes.filter((r) => r.domain !== removed), added];
    const second: RouteSnapshot = {
      routes: next,
      version: 2,
      changes: { base: new WeakRef(first.routes), upserted: [added], removed: [removed] },
    };
    const delta = publisher.next(second);
    if (delta === null) throw new Error('no delta');
    const after = node.apply(overIpc(delta));
    if (after === null) throw new Error('not applied');
    routeTable.update(after);
    expect(routeTable.size).toBe(10_001);
    expect(routeTable.match(removed)).toBeUndefined();
    expect(routeTable.match('new.names.test')?.site).toEqual(added.site);
    expect(routeTable.match('new.names.test')?.source).toBe('ctl');
    // The added route shares the worker's copy of its upstream's site: nothing compiled again.
    expect(routeTable.match('new.names.test')?.site.handler).toBe(routeTable.match('s0.names.test')?.site.handler);
    expect(compiles).toBe(2);
    expect(routeTable.compiledCount).toBe(2);
  });

  it('a node in the same process gets the store objects themselves (no copy)', () => {
    const node = new NodeRoutes();
    const table = node.apply(new RoutePublisher().full(first));
    expect(table?.routes[1]).toBe(first.routes[1]);
    expect(table?.routes[1]?.site).toBe((first.routes[1] as RouteSpec).site);
  });
});
