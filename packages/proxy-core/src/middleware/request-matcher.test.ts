import type { IncomingMessage } from 'node:http';
import { emptySite, type RequestMatcher } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import type { RequestContext } from '../hooks.js';
import { capturesOf, compileMatchers, matcherOf, NO_MATCH, RequestMatch } from './request-matcher.js';

function request(method: string, path: string, headers: IncomingMessage['headers'] = {}) {
  const req = {
    method,
    url: path,
    headers,
    socket: { remoteAddress: '::ffff:192.0.2.1' },
  } as unknown as IncomingMessage;
  const ctx: RequestContext = {
    domain: 'a.test',
    host: 'a.test',
    path: path.split('?')[0] as string,
    clientIp: '192.0.2.1',
    secure: false,
    site: emptySite([{ scheme: null, host: 'a.test', port: null }]),
  };
  return { req, ctx };
}

const matches = (m: RequestMatcher, method: string, path: string, headers: IncomingMessage['headers'] = {}) => {
  const { req, ctx } = request(method, path, headers);
  return new RequestMatch(m).matches(req, ctx);
};

describe('RequestMatch (named matchers)', () => {
  it('path: any pattern, on the normalised lowercase path', () => {
    const m: RequestMatcher = { path: ['/api/*', '/exact', '*.php'], method: null, header: [] };
    expect(matches(m, 'GET', '/api/x')).toBe(true);
    expect(matches(m, 'GET', '/API/x')).toBe(true);
    expect(matches(m, 'GET', '/%61pi/x')).toBe(true);
    expect(matches(m, 'GET', '/exact')).toBe(true);
    expect(matches(m, 'GET', '/a/b.php')).toBe(true);
    expect(matches(m, 'GET', '/exact/no')).toBe(false);
  });

  it('method: any of them, exactly', () => {
    const m: RequestMatcher = { path: null, method: ['GET', 'POST'], header: [] };
    expect(matches(m, 'POST', '/')).toBe(true);
    expect(matches(m, 'HEAD', '/')).toBe(false);
  });

  it('header: exact, prefix, suffix, substring, present, absent; every field must hold', () => {
    const m = (values: string[] | null): RequestMatcher => ({
      path: null,
      method: null,
      header: [{ name: 'X-Foo', values }],
    });
    expect(matches(m(['bar']), 'GET', '/', { 'x-foo': 'bar' })).toBe(true);
    expect(matches(m(['bar']), 'GET', '/', { 'x-foo': 'Bar' })).toBe(false);
    expect(matches(m(['ba*']), 'GET', '/', { 'x-foo': 'baz' })).toBe(true);
    expect(matches(m(['*az']), 'GET', '/', { 'x-foo': 'baz' })).toBe(true);
    expect(matches(m(['*a*']), 'GET', '/', { 'x-foo': 'baz' })).toBe(true);
    expect(matches(m(['*']), 'GET', '/', { 'x-foo': '' })).toBe(true);
    expect(matches(m(['*']), 'GET', '/', {})).toBe(false);
    expect(matches(m(['no', 'bar']), 'GET', '/', { 'x-foo': 'bar' })).toBe(true);
    expect(matches(m(null), 'GET', '/', {})).toBe(true);
    expect(matches(m(null), 'GET', '/', { 'x-foo': 'bar' })).toBe(false);
    const both: RequestMatcher = {
      path: ['/a/*'],
      method: ['PUT'],
      header: [
        { name: 'X-Foo', values: ['1'] },
        { name: 'X-Bar', values: null },
      ],
    };
    expect(matches(both, 'PUT', '/a/b', { 'x-foo': '1' })).toBe(true);
    expect(matches(both, 'PUT', '/a/b', { 'x-foo': '1', 'x-bar': 'y' })).toBe(false);
    expect(matches(both, 'GET', '/a/b', { 'x-foo': '1' })).toBe(false);
    expect(matches(both, 'PUT', '/b', { 'x-foo': '1' })).toBe(false);
  });

  it('ranks by its first path (as a handle pattern), else after every pattern', () => {
    expect(new RequestMatch({ path: ['/api/*'], method: null, header: [] }).specificity).toBeGreaterThan(1_000_000);
    expect(new RequestMatch({ path: null, method: ['GET'], header: [] }).specificity).toBe(1);
  });

  it('a name the site does not define matches nothing; no name is no matcher', () => {
    const compiled = compileMatchers({ api: { path: ['/api/*'], method: null, header: [] } });
    expect(matcherOf(compiled, undefined)).toBeNull();
    expect(matcherOf(compiled, 'missing')).toBe(NO_MATCH);
    const { req, ctx } = request('GET', '/api/x');
    expect(NO_MATCH.matches(req, ctx)).toBe(false);
    expect(matcherOf(compiled, 'api')?.matches(req, ctx)).toBe(true);
  });
});

/** A request from `peer`, resolved to `clientIp` (trusted_proxies), for `host`. */
function from(peer: string, clientIp: string, url = '/', host = 'a.test', headers: IncomingMessage['headers'] = {}) {
  const { req, ctx } = request('GET', url, headers);
  (req.socket as { remoteAddress: string }).remoteAddress = peer;
  return { req, ctx: { ...ctx, clientIp, host } };
}

const base: RequestMatcher = { path: null, method: null, header: [] };

describe('RequestMatch: Caddy matchers of issue 34', () => {
  it('client_ip tests the client after trusted_proxies; remote_ip the peer', () => {
    const lan = new RequestMatch({ ...base, client_ip: ['10.0.0.0/8', 'fd00::/8'] });
    const peer = new RequestMatch({ ...base, remote_ip: ['127.0.0.1'] });
    // A trusted proxy at 127.0.0.1 forwarding a LAN client.
    const viaProxy = from('::ffff:127.0.0.1', '10.1.2.3');
    expect(lan.matches(viaProxy.req, viaProxy.ctx)).toBe(true);
    expect(peer.matches(viaProxy.req, viaProxy.ctx)).toBe(true);
    const outside = from('203.0.113.9', '203.0.113.9');
    expect(lan.matches(outside.req, outside.ctx)).toBe(false);
    expect(peer.matches(outside.req, outside.ctx)).toBe(false);
    const v6 = from('fd00::5', 'fd00::5');
    expect(lan.matches(v6.req, v6.ctx)).toBe(true);
  });

  it('not: the request must match none of the sets; each set is all of its conditions', () => {
    const m = new RequestMatch({
      ...base,
      not: [
        { ...base, client_ip: ['10.0.0.0/8'] },
        { ...base, path: ['/public/*'], method: ['POST'] },
      ],
    });
    expect(m.matches(from('203.0.113.9', '203.0.113.9', '/admin').req, from('x', '203.0.113.9', '/admin').ctx)).toBe(
      true,
    );
    const lan = from('10.0.0.1', '10.0.0.1', '/admin');
    expect(m.matches(lan.req, lan.ctx)).toBe(false);
    const get = from('203.0.113.9', '203.0.113.9', '/public/x');
    expect(m.matches(get.req, get.ctx)).toBe(true);
    const post = from('203.0.113.9', '203.0.113.9', '/public/x');
    (post.req as { method: string }).method = 'POST';
    expect(m.matches(post.req, post.ctx)).toBe(false);
  });

  it('host: exact, and * standing for one label', () => {
    const m = new RequestMatch({ ...base, host: ['a.test', '*.b.test'] });
    const at = (host: string) => {
      const r = from('192.0.2.1', '192.0.2.1', '/', host);
      return m.matches(r.req, r.ctx);
    };
    expect(at('a.test')).toBe(true);
    expect(at('x.b.test')).toBe(true);
    expect(at('b.test')).toBe(false);
    expect(at('x.y.b.test')).toBe(false);
    expect(at('c.test')).toBe(false);
  });

  it('query: every key, any of its values, decoded; * any value', () => {
    const m = new RequestMatch({
      ...base,
      query: [
        { name: 'format', values: ['json', 'a b'] },
        { name: 'debug', values: ['*'] },
      ],
    });
    const q = (url: string) => {
      const r = from('192.0.2.1', '192.0.2.1', url);
      return m.matches(r.req, r.ctx);
    };
    expect(q('/?format=json&debug=1')).toBe(true);
    expect(q('/?format=a%20b&debug')).toBe(true);
    expect(q('/?format=json')).toBe(false);
    expect(q('/?format=xml&debug=1')).toBe(false);
    expect(q('/')).toBe(false);
  });

  it('path_regexp and header_regexp keep their captures for {re.*}; a failed set keeps none', () => {
    const m = new RequestMatch(
      {
        ...base,
        path_regexp: { name: '', pattern: '^/users/(?<id>[0-9]+)$' },
        header_regexp: [{ name: 'c', field: 'Cookie', pattern: 'beta=(\\w+)' }],
      },
      'user',
    );
    const ok = from('192.0.2.1', '192.0.2.1', '/users/42', 'a.test', { cookie: 'x=1; beta=on' });
    expect(m.matches(ok.req, ok.ctx)).toBe(true);
    const captures = capturesOf(ok.req);
    expect(captures?.get('user')?.groups?.id).toBe('42');
    expect(captures?.get('c')?.[1]).toBe('on');
    expect(captures?.get('')?.[1]).toBe('on');
    const noCookie = from('192.0.2.1', '192.0.2.1', '/users/42');
    expect(m.matches(noCookie.req, noCookie.ctx)).toBe(false);
    expect(capturesOf(noCookie.req)).toBeUndefined();
    const other = from('192.0.2.1', '192.0.2.1', '/users/abc', 'a.test', { cookie: 'beta=on' });
    expect(m.matches(other.req, other.ctx)).toBe(false);
  });
});
