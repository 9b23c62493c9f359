// Issue 30: an API route costs its domain, not a site of its own.
import { describe, expect, it } from 'vitest';
import { apiRouteSpec, toApiRecord } from './api-route.js';

const record = (domain: string, upstream = '127.0.0.1:3000', tls = false) => ({ domain, upstream, tls, source: null });

describe('apiRouteSpec', () => {
  it('shares everything but the address between routes to one upstream', () => {
    const a = apiRouteSpec(record('a.test'));
    const b = apiRouteSpec(record('b.test'));
    expect(a.site).not.toBe(b.site);
    expect(a.site.addresses).toEqual([{ scheme: null, host: 'a.test', port: null }]);
    expect(b.site.addresses).toEqual([{ scheme: null, host: 'b.test', port: null }]);
    expect(b.site.handler).toBe(a.site.handler);
    expect(b.site.tls).toBe(a.site.tls);
    expect(toApiRecord(b)).toEqual(record('b.test'));
  });

  it('gives another upstream or upstream TLS its own handler', () => {
    const plain = apiRouteSpec(record('a.test'));
    const secure = apiRouteSpec(record('b.test', '127.0.0.1:3000', true));
    const other = apiRouteSpec(record('c.test', '127.0.0.1:3001'));
    expect(secure.site.handler).not.toBe(plain.site.handler);
    expect(other.site.handler).not.toBe(plain.site.handler);
    expect(toApiRecord(secure)).toEqual(record('b.test', '127.0.0.1:3000', true));
    expect(toApiRecord(other)).toEqual(record('c.test', '127.0.0.1:3001'));
  });
});
