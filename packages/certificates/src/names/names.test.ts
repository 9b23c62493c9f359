import { defaultGlobalOptions, emptySite, type RouteSnapshot, type RouteSpec } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import { CertifiedNames, managedNames, onDemandIssuer } from './names.js';

function route(
  address: string,
  tls: Partial<RouteSpec['site']['tls']> = {},
  origin: RouteSpec['origin'] = 'proxyfile',
) {
  const scheme = address.startsWith('http://') ? 'http' : address.startsWith('https://') ? 'https' : null;
  const host = address.replace(/^https?:\/\//, '');
  // API and label routes name their domain as a site address without a scheme, as the route store builds them.
  const site = emptySite([{ scheme, host, port: null }]);
  site.tls = { ...site.tls, ...tls };
  return { domain: host, origin, source: null, site } as RouteSpec;
}

describe('managedNames', () => {
  const global = defaultGlobalOptions();

  it('certifies HTTPS sites and API routes, not http://, tls off, manual files or on-demand routes', () => {
    const routes = [
      route('app.example.com'),
      route('https://secure.example.com'),
      route('http://plain.example.com'),
      route('off.example.com', { mode: 'off' }),
      route('manual.example.com', { mode: 'manual', cert_file: '/c', key_file: '/k' }),
      route('*.tenants.example.com', { on_demand: true }),
      route('api.example.com', {}, 'api'),
    ];
    expect(managedNames(routes, global)).toEqual([
      { name: 'app.example.com', issuer: 'acme' },
      { name: 'secure.example.com', issuer: 'acme' },
      { name: 'api.example.com', issuer: 'acme' },
    ]);
  });

  it('gives names with no public suffix to the local CA unless the Proxyfile names a CA', () => {
    const routes = [route('app.localhost'), route('site.test'), route('127.0.0.1'), route('pub.example.com')];
    expect(managedNames(routes, global)).toEqual([
      { name: 'app.localhost', issuer: 'internal' },
      { name: 'site.test', issuer: 'internal' },
      { name: '127.0.0.1', issuer: 'internal' },
      { name: 'pub.example.com', issuer: 'acme' },
    ]);
    const withCa = { ...global, acme_ca: ['https://127.0.0.1:14000/dir'] };
    expect(managedNames(routes, withCa).map((n) => n.issuer)).toEqual(['acme', 'acme', 'acme', 'acme']);
  });

  it('tls internal always means the local CA', () => {
    const withCa = { ...global, acme_ca: ['https://127.0.0.1:14000/dir'] };
    expect(managedNames([route('intranet.example.com', { mode: 'internal' })], withCa)).toEqual([
      { name: 'intranet.example.com', issuer: 'internal' },
    ]);
  });

  it('is lowercase and lists a domain once', () => {
    expect(managedNames([route('App.Example.com'), route('app.example.com', {}, 'api')], global)).toEqual([
      { name: 'app.example.com', issuer: 'acme' },
    ]);
  });
});

describe('onDemandIssuer', () => {
  const global = { ...defaultGlobalOptions(), on_demand_ask: 'http://127.0.0.1:9/ask' };
  const routes = [
    route('*.tenants.example.com', { on_demand: true }),
    route('fixed.example.com'),
    route('*.lab.test', { mode: 'internal', on_demand: true }),
  ];

  it('allows a name an on-demand route serves, exactly or by a one-label wildcard, with its issuer', () => {
    expect(onDemandIssuer(routes, global, 'Shop.Tenants.example.com')).toBe('acme');
    expect(onDemandIssuer(routes, global, 'box.lab.test')).toBe('internal');
  });

  it('refuses names no on-demand route serves', () => {
    expect(onDemandIssuer(routes, global, 'a.b.tenants.example.com')).toBeNull();
    expect(onDemandIssuer(routes, global, 'fixed.example.com')).toBeNull();
    expect(onDemandIssuer(routes, global, 'tenants.example.com')).toBeNull();
    expect(onDemandIssuer(routes, { ...global, auto_https: 'off' }, 'shop.tenants.example.com')).toBeNull();
  });
});

describe('issue 20: CertifiedNames costs what changed', () => {
  const global = { ...defaultGlobalOptions(), on_demand_ask: 'http://127.0.0.1:9/ask' };

  /** `routes` as the route store publishes them, with their changes from `base`, and a count of element reads. */
  function published(base: readonly RouteSpec[], routes: RouteSpec[], upserted: RouteSpec[], removed: string[]) {
    let reads = 0;
    const view = new Proxy(Object.freeze(routes), {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
    const snapshot: RouteSnapshot = {
      routes: view,
      version: 2,
      changes: { base: new WeakRef(base), upserted, removed },
    };
    return { snapshot, routes: view, reads: () => reads };
  }
  const whole = (routes: readonly RouteSpec[]): RouteSnapshot => ({ routes, version: 1, changes: null });

  it('takes a published change without reading the other routes, and ends where a full computation does', () => {
    const first = Object.freeze(Array.from({ length: 5000 }, (_, i) => route(`r${i}.example.com`, {}, 'api')));
    const names = new CertifiedNames(global);
    expect(names.update(whole(first))).toBe(true);
    const added = route('new.example.com', {}, 'api');
    const plain = route('http://r3.example.com');
    const onDemand = route('*.tenants.example.com', { on_demand: true });
    const next = [...first.filter((r) => r.domain !== 'r1.example.com' && r.domain !== 'r3.example.com')];
    next.push(added, plain, onDemand);
    const change = published(first, next, [added, plain, onDemand], ['r1.example.com']);
    expect(names.takeChanges().add).toHaveLength(5000);
    expect(names.update(change.snapshot)).toBe(true);
    expect(change.reads()).toBe(0);
    // The manager gets what changed (issue 30): one name added, two no longer certified, nothing else.
    expect(names.takeChanges()).toEqual({
      add: [{ name: 'new.example.com', issuer: 'acme' }],
      remove: ['r1.example.com', 'r3.example.com'],
    });
    expect(names.takeChanges()).toEqual({ add: [], remove: [] });
    // Sorted, not `arrayContaining`: that compares 5,000 × 5,000 pairs (~35 s on a loaded 2-core machine).
    const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    expect(names.names().sort(byName)).toEqual(managedNames(next, global).sort(byName));
    expect(names.onDemandIssuer('shop.tenants.example.com')).toBe('acme');
    expect(names.onDemandIssuer('r2.example.com')).toBeNull();
    // A change that leaves the managed names as they were: the manager is not asked.
    const same = route('r2.example.com', {}, 'api');
    const again = published(change.routes, [...next], [same], []);
    expect(names.update(again.snapshot)).toBe(false);
  });

  it('an on-demand lookup reads no route, however many there are', () => {
    let reads = 0;
    const routes = Array.from({ length: 5000 }, (_, i) => {
      const spec = route(`*.t${i}.example.com`, { on_demand: true });
      return new Proxy(spec, {
        get(target, key, receiver) {
          reads++;
          return Reflect.get(target, key, receiver) as unknown;
        },
      });
    });
    const names = new CertifiedNames(global);
    names.update(whole(routes));
    reads = 0;
    expect(names.onDemandIssuer('unknown.example.com')).toBeNull();
    expect(names.onDemandIssuer('a.t42.example.com')).toBe('acme');
    expect(reads).toBeLessThan(10);
  });
});
