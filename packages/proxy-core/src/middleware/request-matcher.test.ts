import type { IncomingMessage } from 'node:http';
import { emptySite, type RequestMatcher } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import type { RequestContext } from '../hooks.js';
import { compileMatchers, matcherOf, NO_MATCH, RequestMatch } from './request-matcher.js';

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
