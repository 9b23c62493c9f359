import {
  changesFrom,
  defaultGlobalOptions,
  emptySite,
  type RouteSnapshot,
  type RouteSpec,
  type SiteAddress,
} from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import { DataPlane } from './data-plane/data-plane.js';
import type { CompiledSite } from './pipeline.js';
import { normalizeHost, RouteTable } from './route-table.js';

/** A snapshot without changes: the table compares every route. */
const whole = (routes: readonly RouteSpec[], version: number): RouteSnapshot => ({ routes, version, changes: null });

const route = (domain: string, scheme: SiteAddress['scheme'] = 'http'): RouteSpec => ({
  domain,
  origin: 'proxyfile',
  source: null,
  site: emptySite([{ scheme, host: domain, port: null }]),
});

describe('RouteTable', () => {
  const table = new RouteTable([route('example.com'), route('*.example.com'), route('api.example.com')]);

  it('matches exact hosts, ignoring case and port', () => {
    expect(table.match('Example.COM:8080')?.domain).toBe('example.com');
    expect(table.match('example.com.')?.domain).toBe('example.com');
  });

  it('matches a wildcard for exactly one label, exact first', () => {
    expect(table.match('www.example.com')?.domain).toBe('*.example.com');
    expect(table.match('api.example.com')?.domain).toBe('api.example.com');
    expect(table.match('a.b.example.com')).toBeUndefined();
    expect(table.match('other.com')).toBeUndefined();
    expect(table.match(undefined)).toBeUndefined();
  });

  it('normalises IPv6 hosts', () => {
    expect(normalizeHost('[::1]:80')).toBe('::1');
  });

  it('compiles each Site once and keeps compiled sites across updates', () => {
    let compiles = 0;
    const compile = (): CompiledSite => {
      compiles++;
      return { handle() {} };
    };
    const a = route('a.test');
    const shared = { ...route('b.test'), site: a.site };
    const table = new RouteTable([a, shared], 1, compile);
    expect(compiles).toBe(1);
    const first = table.match('a.test')?.compiled;
    expect(table.match('b.test')?.compiled).toBe(first);
    const change = table.update(whole([a, route('c.test')], 2));
    expect(compiles).toBe(2);
    expect(table.match('a.test')?.compiled).toBe(first);
    expect(table.match('b.test')).toBeUndefined();
    // a.test still uses the shared site: nothing dropped.
    expect(change.dropped).toEqual([]);
    expect(table.version).toBe(2);
  });

  it('marks HTTPS sites: no http:// scheme and tls not off', () => {
    const off = route('off.test', null);
    off.site.tls.mode = 'off';
    const t = new RouteTable([route('plain.test'), route('secure.test', null), off]);
    expect(t.match('plain.test')?.httpsSite).toBe(false);
    expect(t.match('secure.test')?.httpsSite).toBe(true);
    expect(t.match('off.test')?.httpsSite).toBe(false);
  });
});

/** `routes` as a route store publishes them: a snapshot of a frozen array with its changes from `base`. */
function published(
  base: readonly RouteSpec[],
  routes: readonly RouteSpec[],
  upserted: RouteSpec[],
  removed: string[],
  version = 2,
): RouteSnapshot {
  return { routes: Object.freeze(routes), version, changes: { base: new WeakRef(base), upserted, removed } };
}

/** `snapshot` with its routes seen through {@link counted}. */
function countedSnapshot(snapshot: RouteSnapshot): { snapshot: RouteSnapshot; reads: () => number } {
  const view = counted(snapshot.routes);
  return { snapshot: { ...snapshot, routes: view.routes }, reads: view.reads };
}

/** A view of `routes` that counts how many of its elements are read. */
function counted(routes: readonly RouteSpec[]): { routes: readonly RouteSpec[]; reads: () => number } {
  let reads = 0;
  const view = new Proxy(routes, {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
  return { routes: view, reads: () => reads };
}

const compiler = () => {
  const closed: string[] = [];
  let compiles = 0;
  const compile = (site: RouteSpec['site']): CompiledSite => {
    compiles++;
    return {
      handle() {},
      close: () => closed.push(site.addresses[0]?.host ?? ''),
    };
  };
  return { compile, closed, compiles: () => compiles };
};

describe('issue 20: a route change costs what changed, not the table', () => {
  const N = 10_000;
  const many = () => Array.from({ length: N }, (_, i) => route(`r${i}.test`));

  it("updates with the store's changes without reading the unchanged routes", () => {
    const { compile, closed, compiles } = compiler();
    const first = Object.freeze(many());
    const table = new RouteTable(first, 1, compile);
    expect(compiles()).toBe(N);
    const added = route('new.test');
    const replaced = route('r5.test');
    const next = [...first.filter((r) => r.domain !== 'r5.test' && r.domain !== 'r7.test'), added, replaced];
    const view = countedSnapshot(published(first, next, [added, replaced], ['r7.test']));
    const change = table.update(view.snapshot);
    expect(view.reads()).toBe(0);
    expect(compiles()).toBe(N + 2);
    expect(change.fresh).toEqual([added.site, replaced.site]);
    for (const compiled of change.dropped) compiled.close?.();
    expect(closed).toEqual(['r7.test', 'r5.test']);
    expect(table.match('new.test')?.site).toBe(added.site);
    expect(table.match('r5.test')?.site).toBe(replaced.site);
    expect(table.match('r7.test')).toBeUndefined();
    expect(table.match('r8.test')?.site).toBe(first[8]?.site);
    expect(table.size).toBe(N);
    // The next changes apply to the table just served: still not one route read.
    const again = route('again.test');
    const after = countedSnapshot(published(view.snapshot.routes, [...next, again], [again], [], 3));
    table.update(after.snapshot);
    expect(after.reads()).toBe(0);
    expect(table.match('again.test')?.site).toBe(again.site);
  });

  it('compares every route when the changes are not from the routes served (a stale or missing base)', () => {
    const { compile, compiles } = compiler();
    const first = Object.freeze(many());
    const table = new RouteTable(first, 1, compile);
    const kept = table.match('r1.test');
    // Changes relative to an array the table never served: ignored, the routes are compared.
    const next = published([], first.slice(0, N - 1), [], []);
    expect(changesFrom(first, next)).toBeNull();
    const change = table.update(next);
    expect(compiles()).toBe(N);
    expect(change.dropped).toHaveLength(1);
    expect(table.match(`r${N - 1}.test`)).toBeUndefined();
    // An unchanged route keeps its Route object (a request that matched it sees no difference).
    expect(table.match('r1.test')).toBe(kept);
  });

  it('ends with the table a fresh build gives, after any sequence of changes', () => {
    const { compile } = compiler();
    let current: readonly RouteSpec[] = Object.freeze(many().slice(0, 200));
    const table = new RouteTable(current, 1, compile);
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let step = 0; step < 50; step++) {
      const byDomain = new Map(current.map((r) => [r.domain, r]));
      const upserted: RouteSpec[] = [];
      const removed: string[] = [];
      for (let k = 0; k < 5; k++) {
        const domain = `r${random(300)}.test`;
        if (upserted.some((r) => r.domain === domain) || removed.includes(domain)) continue;
        if (random(3) === 0 && byDomain.has(domain)) {
          byDomain.delete(domain);
          removed.push(domain);
        } else {
          const spec = route(domain);
          byDomain.set(domain, spec);
          upserted.push(spec);
        }
      }
      const next = published(current, [...byDomain.values()], upserted, removed, step + 2);
      table.update(next);
      current = next.routes;
    }
    const fresh = new RouteTable(current, 0, compile);
    expect(table.size).toBe(fresh.size);
    for (const spec of current) expect(table.match(spec.domain)?.site).toBe(fresh.match(spec.domain)?.site);
  });

  it('DataPlane.setRoutes of a store-published array reads none of the other routes', async () => {
    const global = defaultGlobalOptions();
    global.http_port = 0;
    const first = Object.freeze(many());
    const plane = await DataPlane.start({ global, sites: [] }, first, {}, { bindHost: '127.0.0.1' });
    try {
      const added = route('new.test');
      const view = countedSnapshot(published(first, [...first, added], [added], []));
      plane.setRoutes(view.snapshot);
      expect(view.reads()).toBe(0);
      // Changes from an older array than the one served: every route is compared.
      const stale = countedSnapshot(published(first, first.slice(1), [], ['r0.test'], 3));
      plane.setRoutes(stale.snapshot);
      expect(stale.reads()).toBeGreaterThan(0);
    } finally {
      await plane.close();
    }
  });
});

describe('catch-all routes (a Proxyfile `:8080 {` / `http:// {`)', () => {
  const catchAll = (port: number | null): RouteSpec => ({
    domain: port === null ? '*' : `*:${port}`,
    origin: 'proxyfile',
    source: null,
    site: emptySite([{ scheme: 'http', host: '*', port }]),
  });

  it('never matches a host; fallback gives the catch-all of a listener', () => {
    const main = catchAll(null);
    const site = catchAll(8080);
    const table = new RouteTable([route('a.test'), main, site], 0, undefined, new Map([['*:8080', 8080]]));
    expect(table.match('*')).toBeUndefined();
    expect(table.match('other.test')).toBeUndefined();
    expect(table.size).toBe(3);
    expect(table.hasFallbacks).toBe(true);
    expect(table.fallback(80, true)?.site).toBe(main.site);
    expect(table.fallback(8080, false)?.site).toBe(site.site);
    expect(table.fallback(8080, false)?.sitePort).toBe(8080);
    expect(table.fallback(9090, false)).toBeUndefined();
    expect(table.get('*:8080')?.domain).toBe('*:8080');
  });

  it('drops a catch-all that leaves the routes, by changes or by comparison', () => {
    const main = catchAll(null);
    const table = new RouteTable([route('a.test'), main]);
    table.update(whole([route('a.test')], 1));
    expect(table.hasFallbacks).toBe(false);
    expect(table.fallback(80, true)).toBeUndefined();
    const routes = [main];
    table.update(whole(routes, 2));
    expect(table.fallback(80, true)?.domain).toBe('*');
    const next = [route('b.test')];
    table.update({ routes: next, version: 3, changes: { base: new WeakRef(routes), upserted: next, removed: ['*'] } });
    expect(table.hasFallbacks).toBe(false);
    expect(table.size).toBe(1);
  });

  it('keeps the other catch-all of a listener when one of two leaves (":80" and "http://" from different sources)', () => {
    const a = catchAll(null);
    const b = catchAll(80);
    const table = new RouteTable([a, b]);
    expect(table.fallback(80, true)?.domain).toBe('*:80');
    table.update(whole([a], 1));
    expect(table.fallback(80, true)?.domain).toBe('*');
  });
});
