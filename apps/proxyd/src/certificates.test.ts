import { defaultGlobalOptions, emptySite, type RouteSpec } from '@proxyd/proxy-core/model';
import { describe, expect, it } from 'vitest';
import { managedNames, onDemandIssuer } from './certificates.js';

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
