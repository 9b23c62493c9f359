import { describe, expect, it } from 'vitest';
import type { SiteAddress } from './addresses.js';
import { type AutoHttpsDecision, type AutoHttpsOptions, autoHttpsFor, isHttpsSite } from './auto-https.js';
import { addressDomain } from './catch-all.js';
import { defaultGlobalOptions, emptySite } from './defaults.js';
import type { RouteSpec } from './routes.js';
import type { TlsPolicy } from './tls.js';

/** A route for the first address, as the Proxyfile compiles one (its domain: the address's host, or a catch-all's). */
function route(addresses: SiteAddress[], tls: Partial<TlsPolicy> = {}, domain?: string): RouteSpec {
  const site = emptySite(addresses);
  site.tls = { ...site.tls, ...tls };
  return { domain: domain ?? addressDomain(addresses[0] as SiteAddress), origin: 'proxyfile', source: null, site };
}
const at = (host: string, scheme: SiteAddress['scheme'] = null, port: number | null = null): SiteAddress => ({
  scheme,
  host,
  port,
});

const on: AutoHttpsOptions = defaultGlobalOptions();
const managed = (redirect: boolean): AutoHttpsDecision => ({ certificate: 'managed', redirect });
const none = (redirect: boolean): AutoHttpsDecision => ({ certificate: null, redirect });

// Every case the data plane's redirect and the app's certificate names handled, in one table.
describe('autoHttpsFor', () => {
  it.each<[string, RouteSpec, AutoHttpsOptions, AutoHttpsDecision]>([
    ['a name without a scheme', route([at('app.example.com')]), on, managed(true)],
    ['https://', route([at('secure.example.com', 'https')]), on, managed(true)],
    ['http://: plain HTTP', route([at('plain.example.com', 'http')]), on, none(false)],
    ['tls off', route([at('off.example.com')], { mode: 'off' }), on, none(false)],
    ['https:// with tls off', route([at('off.example.com', 'https')], { mode: 'off' }), on, none(false)],
    [
      'tls <cert> <key>: its own certificate, still redirected',
      route([at('manual.example.com')], { mode: 'manual', cert_file: '/c', key_file: '/k' }),
      on,
      none(true),
    ],
    ['tls internal', route([at('intranet.example.com')], { mode: 'internal' }), on, managed(true)],
    [
      'tls { on_demand }',
      route([at('*.tenants.example.com')], { on_demand: true }),
      on,
      { certificate: 'on_demand', redirect: true },
    ],
    [
      'tls internal { on_demand }',
      route([at('*.lab.test')], { mode: 'internal', on_demand: true }),
      on,
      { certificate: 'on_demand', redirect: true },
    ],
    ['a wildcard', route([at('*.example.com')]), on, managed(true)],
    ['an IPv4 address', route([at('127.0.0.1')]), on, managed(true)],
    ['an IPv6 address', route([at('::1')]), on, managed(true)],
    ['localhost', route([at('localhost')]), on, managed(true)],
    ['a .localhost name', route([at('app.localhost')]), on, managed(true)],
    ['the catch-all of the http_port (http://)', route([at('*', 'http')]), on, none(false)],
    ['the catch-all of a port (:8080)', route([at('*', 'http', 8080)]), on, none(false)],
    [
      'a site port: certified, served by its own listener, never redirected',
      route([at('a.test', null, 8443)]),
      on,
      managed(false),
    ],
    ['the https_port written out', route([at('a.test', null, 443)]), on, managed(true)],
    ['the http_port written out, no scheme', route([at('a.test', null, 80)]), on, managed(true)],
    ['http:// on a site port', route([at('a.test', 'http', 8080)]), on, none(false)],
    [
      'moved main ports: the https_port is not a site port',
      route([at('a.test', null, 8443)]),
      { ...on, http_port: 8080, https_port: 8443 },
      managed(true),
    ],
    [
      'moved main ports: the old https_port is one',
      route([at('a.test', null, 443)]),
      { ...on, http_port: 8080, https_port: 8443 },
      managed(false),
    ],
    ['auto_https off', route([at('app.example.com')]), { ...on, auto_https: 'off' }, none(false)],
    [
      'auto_https disable_redirects',
      route([at('app.example.com')]),
      { ...on, auto_https: 'disable_redirects' },
      managed(false),
    ],
    ['auto_https disable_certs', route([at('app.example.com')]), { ...on, auto_https: 'disable_certs' }, none(true)],
    [
      'auto_https off, on_demand',
      route([at('*.tenants.example.com')], { on_demand: true }),
      { ...on, auto_https: 'off' },
      none(false),
    ],
    [
      'the address that names the domain decides, not the first one (http://)',
      route([at('secure.test'), at('plain.test', 'http')], {}, 'plain.test'),
      on,
      none(false),
    ],
    [
      'the address that names the domain decides, not the first one (no scheme)',
      route([at('plain.test', 'http'), at('secure.test')], {}, 'secure.test'),
      on,
      managed(true),
    ],
    ['a domain written in capitals', route([at('App.Example.com')], {}, 'App.Example.com'), on, managed(true)],
    ['a domain no address names', route([at('a.test')], {}, 'b.test'), on, none(false)],
  ])('%s', (_, spec, global, decision) => {
    expect(autoHttpsFor(spec, global)).toEqual(decision);
  });
});

describe('isHttpsSite', () => {
  it.each([
    // address scheme, tls mode, HTTPS site
    [null, 'auto', true],
    ['https', 'auto', true],
    [null, 'manual', true],
    [null, 'internal', true],
    ['http', 'auto', false],
    [null, 'off', false],
    ['https', 'off', false],
  ] as const)('scheme %s, tls %s: %s', (scheme: SiteAddress['scheme'], mode, https) => {
    const site = emptySite([{ scheme, host: 'a.test', port: null }]);
    site.tls.mode = mode;
    expect(isHttpsSite(site, 'a.test')).toBe(https);
  });

  it('reads the address that named the domain, not the first one', () => {
    const site = emptySite([
      { scheme: 'http', host: 'plain.test', port: null },
      { scheme: null, host: 'secure.test', port: null },
    ]);
    expect(isHttpsSite(site, 'plain.test')).toBe(false);
    expect(isHttpsSite(site, 'secure.test')).toBe(true);
    expect(isHttpsSite(site, 'other.test')).toBe(false);
  });
});
