import { describe, expect, it } from 'vitest';
import { emptySite, type RouteSpec, type SiteAddress } from './model/index.js';
import type { CompiledSite } from './pipeline.js';
import { normalizeHost, RouteTable } from './route-table.js';

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

  it('compiles each Site once and reuses compiled sites across tables', () => {
    let compiles = 0;
    const compile = (): CompiledSite => {
      compiles++;
      return { handle() {} };
    };
    const a = route('a.test');
    const shared = { ...route('b.test'), site: a.site };
    const first = new RouteTable([a, shared], 1, compile);
    expect(compiles).toBe(1);
    expect(first.match('a.test')?.compiled).toBe(first.match('b.test')?.compiled);
    const second = new RouteTable([a, route('c.test')], 2, compile, first);
    expect(compiles).toBe(2);
    expect(second.match('a.test')?.compiled).toBe(first.match('a.test')?.compiled);
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
