import { emptySite, type RouteSpec, type Site, type SiteAddress } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import { SitePortTable, servedOn, sitePortsOf } from './site-ports.js';

/** The routes a Proxyfile site block with these addresses gives (one per address host). */
function routes(addresses: SiteAddress[], edit?: (s: Site) => void): RouteSpec[] {
  const site = emptySite(addresses);
  edit?.(site);
  return addresses.map((a) => ({ domain: a.host, origin: 'proxyfile', source: null, site }));
}

describe('sitePortsOf', () => {
  // http_port 8080, https_port 8443:
  //   http://plain.test:9001, secure.test:9002 { respond }
  //   off.test:9003 { tls off; respond }
  //   main.test, local.test:8080, other.test:8443 { respond }
  const all = [
    ...routes([
      { scheme: 'http', host: 'plain.test', port: 9001 },
      { scheme: null, host: 'secure.test', port: 9002 },
    ]),
    ...routes([{ scheme: null, host: 'off.test', port: 9003 }], (s) => {
      s.tls.mode = 'off';
    }),
    ...routes([
      { scheme: null, host: 'main.test', port: null },
      { scheme: null, host: 'local.test', port: 8080 },
      { scheme: null, host: 'other.test', port: 8443 },
    ]),
  ];

  it('lists the ports addresses name besides http_port and https_port, with their protocol', () => {
    const { ports, byDomain, conflicts } = sitePortsOf(all, 8080, 8443);
    expect([...ports.values()]).toEqual([
      { port: 9001, tls: false, domain: 'plain.test' },
      { port: 9002, tls: true, domain: 'secure.test' },
      { port: 9003, tls: false, domain: 'off.test' },
    ]);
    expect(Object.fromEntries(byDomain)).toEqual({ 'plain.test': 9001, 'secure.test': 9002, 'off.test': 9003 });
    expect(conflicts).toEqual([]);
  });

  it('keeps the first protocol of a port and serves a route that asks otherwise nowhere', () => {
    const a = routes([{ scheme: 'http', host: 'a.test', port: 9001 }]);
    const b = routes([{ scheme: null, host: 'b.test', port: 9001 }]);
    const { ports, byDomain, conflicts } = sitePortsOf([...a, ...b], 80, 443);
    expect([...ports.values()]).toEqual([{ port: 9001, tls: false, domain: 'a.test' }]);
    expect(conflicts).toEqual([{ port: 9001, kept: 'a.test', refused: 'b.test' }]);
    const main = new Set([80, 443]);
    expect(servedOn(byDomain.get('b.test') ?? null, 9001, main)).toBe(false);
    expect(servedOn(byDomain.get('a.test') ?? null, 9001, main)).toBe(true);
  });
});

describe('SitePortTable', () => {
  const plain = (host: string) => routes([{ scheme: null, host, port: null }]);

  it('takes a change of routes naming no site port without looking at the others', () => {
    const pinned = routes([{ scheme: 'http', host: 'pinned.test', port: 9001 }]);
    const table = new SitePortTable([...pinned, ...plain('a.test')], 80, 443);
    const before = table.current;
    expect(table.apply(plain('b.test'), ['a.test'])).toBe(false);
    expect(table.current).toBe(before);
    expect(Object.fromEntries(table.current.byDomain)).toEqual({ 'pinned.test': 9001 });
  });

  it('recomputes when a route naming a site port comes or goes, as sitePortsOf of the whole set', () => {
    const a = routes([{ scheme: 'http', host: 'a.test', port: 9001 }]);
    const b = routes([{ scheme: null, host: 'b.test', port: 9001 }]);
    const c = routes([{ scheme: null, host: 'c.test', port: 9002 }]);
    const table = new SitePortTable([...a, ...plain('x.test')], 80, 443);
    expect(table.apply([...b, ...c], [])).toBe(true);
    expect(table.current).toEqual(sitePortsOf([...a, ...b, ...c], 80, 443));
    // The same route again (a new object, same address): nothing changed.
    expect(table.apply(routes([{ scheme: null, host: 'c.test', port: 9002 }]), [])).toBe(false);
    expect(table.apply([], ['a.test'])).toBe(true);
    expect(table.current).toEqual(sitePortsOf([...b, ...c], 80, 443));
    // c.test moves to the main listeners.
    expect(table.apply(plain('c.test'), [])).toBe(true);
    expect(Object.fromEntries(table.current.byDomain)).toEqual({ 'b.test': 9001 });
    expect(table.reset([...plain('x.test')])).toBe(true);
    expect(table.current.ports.size).toBe(0);
  });
});

describe('servedOn', () => {
  const main = new Set([80, 443]);
  it.each([
    // sitePort, localPort, served
    [null, 80, true],
    [null, 443, true],
    [null, 9001, false],
    [null, undefined, false],
    [9001, 9001, true],
    [9001, 80, false],
    // Pinned to 0 after a conflict: no listener is bound to port 0.
    [0, 9001, false],
    [0, 80, false],
  ] as const)('a route pinned to %s, a request on %s: %s', (sitePort, localPort, served) => {
    expect(servedOn(sitePort, localPort, main)).toBe(served);
  });
});
