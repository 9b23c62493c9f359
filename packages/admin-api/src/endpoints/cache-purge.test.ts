import { describe, expect, it } from 'vitest';
import { AUTH, MemoryCache, testApp } from '../memory-ports.test-helpers.js';
import { cacheKeysOf } from './cache-purge.js';

const purge = (path: string) => ({ method: 'PURGE' as const, url: `/cache/${path}`, headers: AUTH });

describe('cache key', () => {
  it('is {host}/{path}, host lowercased, one leading "/" on the path, raw path and query kept', () => {
    expect(cacheKeysOf('/cache/Example.com/assets/app.js')).toEqual(['example.com/assets/app.js']);
    expect(cacheKeysOf('/cache/example.com//assets/app.js')).toEqual(['example.com/assets/app.js']);
    expect(cacheKeysOf('/cache/example.com//')).toEqual(['example.com/']);
    expect(cacheKeysOf('/cache/example.com/a%20b?x=1')).toEqual(['example.com/a%20b?x=1', 'example.com/a b?x=1']);
  });

  it('issue 21: then the key with host and path percent-decoded once, the form generated clients send', () => {
    // encodeURIComponent, what openapi-fetch and @hey-api/openapi-ts apply to a path parameter.
    const encoded = (host: string, path: string) => `/cache/${encodeURIComponent(host)}/${encodeURIComponent(path)}`;
    expect(cacheKeysOf(encoded('Example.com', 'assets/app.js?v=2'))).toEqual([
      'example.com/assets%2Fapp.js%3Fv%3D2',
      'example.com/assets/app.js?v=2',
    ]);
    expect(cacheKeysOf(encoded('example.com', '/assets/app.js'))).toEqual([
      'example.com/%2Fassets%2Fapp.js',
      'example.com/assets/app.js',
    ]);
    expect(cacheKeysOf(encoded('example.com', '/'))).toEqual(['example.com/%2F', 'example.com/']);
    expect(cacheKeysOf(encoded('[::1]:8080', 'p'))).toEqual(['%5b%3a%3a1%5d%3a8080/p', '[::1]:8080/p']);
    // A query string that does not decode (the path itself is checked by the router): only the key as sent.
    expect(cacheKeysOf('/cache/example.com/a%2Fb?x=%zz')).toEqual(['example.com/a%2Fb?x=%zz']);
  });

  it('issue 20: refuses a host with a character outside ASCII before lowercasing (U+212A is not "k")', () => {
    expect(() => cacheKeysOf('/cache/\u212aelvin.test/x')).toThrow(
      /^invalid domain: "\u212aelvin.test" has a character outside ASCII/,
    );
    // Over HTTP the target arrives ASCII (Node refuses raw bytes): the decoded host is checked too.
    expect(() => cacheKeysOf('/cache/%E2%84%AAelvin.test/x')).toThrow(
      /^invalid domain: "\u212aelvin.test" has a character outside ASCII/,
    );
  });
});

describe('PURGE /cache/{host}/{path}', () => {
  it('200 {purged: true} and the entry is gone; audit cache_purge with the key', async () => {
    const cache = new MemoryCache(['example.com/assets/app.js']);
    const { app, audit } = testApp({ cache });
    const res = await app.inject(purge('Example.com/assets/app.js'));
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('null');
    expect(res.json()).toEqual({ purged: true });
    expect(cache.keys.size).toBe(0);
    expect(audit).toEqual([{ action: 'cache_purge', principal: 'admin', resource: 'example.com/assets/app.js' }]);
    await app.close();
  });

  it('awaits a cache port that answers later (every worker purged)', async () => {
    const keys = new Set(['example.com/a']);
    const cache = {
      enabled: true,
      purge: (key: string) => new Promise<boolean>((r) => setTimeout(() => r(keys.delete(key)), 20)),
    };
    const { app } = testApp({ cache });
    expect((await app.inject(purge('example.com/a'))).json()).toEqual({ purged: true });
    const again = await app.inject(purge('example.com/a'));
    expect(again.statusCode).toBe(404);
    expect(again.json()).toEqual({ purged: false, reason: 'not found' });
    await app.close();
  });

  it('a body is never read: 70 KB or an invalid Content-Type changes nothing', async () => {
    const cache = new MemoryCache(['example.com/a', 'example.com/b']);
    const { app } = testApp({ cache });
    const big = await app.inject({ ...purge('example.com/a'), payload: 'x'.repeat(70_000) });
    expect(big.statusCode).toBe(200);
    const badType = await app.inject({
      ...purge('example.com/b'),
      headers: { ...AUTH, 'content-type': ';;' },
      payload: '{}',
    });
    expect(badType.json()).toEqual({ purged: true });
    await app.close();
  });

  it('a path that already starts with "/" gives the same key', async () => {
    const cache = new MemoryCache(['example.com/page']);
    const { app } = testApp({ cache });
    expect((await app.inject(purge('example.com//page'))).json()).toEqual({ purged: true });
    await app.close();
  });

  it('404 {purged: false, reason: "not found"} (not the envelope), nothing audited', async () => {
    const { app, audit } = testApp({ cache: new MemoryCache([]) });
    const res = await app.inject(purge('example.com/missing'));
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.json()).toEqual({ purged: false, reason: 'not found' });
    expect(audit).toEqual([]);
    await app.close();
  });

  it('400 for an empty host or path segment', async () => {
    const { app } = testApp({ cache: new MemoryCache([]) });
    for (const path of ['', '/x', 'example.com', 'example.com/', '?q']) {
      const res = await app.inject(purge(path));
      expect(res.statusCode, path).toBe(400);
      expect((res.json() as { error: string }).error).toMatch(/^invalid cache key: empty (host|path) segment/);
    }
    await app.close();
  });

  it('501 cache not enabled, without a cache and with a disabled one', async () => {
    for (const cache of [undefined, new MemoryCache(['example.com/x'], false)]) {
      const { app } = testApp(cache ? { cache } : {});
      const res = await app.inject(purge('example.com/x'));
      expect(res.statusCode).toBe(501);
      expect(res.json()).toEqual({ error: 'cache not enabled' });
      await app.close();
    }
  });

  it('401 without token, 429 over the limit', async () => {
    const { app } = testApp({ rateLimit: { max: 1, windowMs: 60_000 }, cache: new MemoryCache([]) });
    expect((await app.inject({ method: 'PURGE', url: '/cache/a/b' })).statusCode).toBe(401);
    expect((await app.inject(purge('a/b'))).statusCode).toBe(404);
    expect((await app.inject(purge('a/b'))).statusCode).toBe(429);
    await app.close();
  });
});

describe('issue 21: DELETE /cache/{host}/{path}, the alias generated clients can call, and encoded paths', () => {
  const call = (method: 'PURGE' | 'DELETE', url: string) => ({ method, url, headers: AUTH });

  it('answers every request exactly as PURGE does: status, headers that matter, body, cache and audit', async () => {
    const keys = ['example.com/a/b?v=1', 'example.com/', 'example.com/x', 'example.com/a%2Fb'];
    const urls = [
      '/cache/Example.com/a/b?v=1',
      '/cache/example.com/a%2Fb%3Fv%3D1',
      '/cache/example.com//',
      '/cache/example.com/%2F',
      '/cache/example.com/x',
      '/cache/example.com/x',
      '/cache/example.com/a%2Fb',
      '/cache/example.com/missing',
      '/cache/example.com/',
      '/cache//x',
      '/cache/%E2%84%AAelvin.test/x',
      '/cache/example.com/%zz',
    ];
    const make = () => {
      const cache = new MemoryCache(keys);
      return { cache, ...testApp({ cache }) };
    };
    const [purge, del] = [make(), make()];
    const seen = new Set<number>();
    for (const url of urls) {
      const [p, d] = [await purge.app.inject(call('PURGE', url)), await del.app.inject(call('DELETE', url))];
      expect({ url, status: d.statusCode, body: d.json() }).toEqual({ url, status: p.statusCode, body: p.json() });
      expect(d.headers['content-type']).toBe(p.headers['content-type']);
      expect(d.headers['access-control-allow-origin']).toBe('null');
      expect([...del.cache.keys]).toEqual([...purge.cache.keys]);
      seen.add(d.statusCode);
    }
    expect([...seen].sort()).toEqual([200, 400, 404]);
    expect(del.audit).toEqual(purge.audit);
    expect(del.audit.map((e) => e.resource)).toEqual([
      'example.com/a/b?v=1',
      'example.com/',
      'example.com/x',
      'example.com/a%2Fb',
    ]);
    await purge.app.close();
    await del.app.close();
  });

  for (const method of ['PURGE', 'DELETE'] as const) {
    it(`${method}: the raw and the percent-encoded path purge the same entry; the key as sent wins`, async () => {
      const cache = new MemoryCache(['example.com/assets/app.js?v=2']);
      const { app, audit } = testApp({ cache });
      const encoded = `/cache/example.com/${encodeURIComponent('/assets/app.js?v=2')}`;
      expect(encoded).toBe('/cache/example.com/%2Fassets%2Fapp.js%3Fv%3D2');
      expect((await app.inject(call(method, encoded))).json()).toEqual({ purged: true });
      expect(cache.keys.size).toBe(0);
      cache.keys.add('example.com/assets/app.js?v=2');
      expect((await app.inject(call(method, '/cache/example.com/assets/app.js?v=2'))).json()).toEqual({
        purged: true,
      });
      expect(cache.keys.size).toBe(0);
      expect(audit.map((e) => e.resource)).toEqual(['example.com/assets/app.js?v=2', 'example.com/assets/app.js?v=2']);
      // An entry whose request target itself held %2F is purged by that target first, the decoded one next.
      for (const key of ['example.com/a%2Fb', 'example.com/a/b']) cache.keys.add(key);
      expect((await app.inject(call(method, '/cache/example.com/a%2Fb'))).json()).toEqual({ purged: true });
      expect([...cache.keys]).toEqual(['example.com/a/b']);
      expect((await app.inject(call(method, '/cache/example.com/a%2Fb'))).json()).toEqual({ purged: true });
      expect(cache.keys.size).toBe(0);
      await app.close();
    });
  }

  it('DELETE: 501 without a cache, 401 without the token, 429 over the limit, like PURGE', async () => {
    const off = testApp();
    expect((await off.app.inject(call('DELETE', '/cache/a/b'))).json()).toEqual({ error: 'cache not enabled' });
    await off.app.close();
    const { app } = testApp({ rateLimit: { max: 1, windowMs: 60_000 }, cache: new MemoryCache([]) });
    const anonymous = await app.inject({ method: 'DELETE', url: '/cache/a/b' });
    expect([anonymous.statusCode, anonymous.json()]).toEqual([401, { error: 'unauthorized' }]);
    expect((await app.inject(call('DELETE', '/cache/a/b'))).statusCode).toBe(404);
    const limited = await app.inject(call('DELETE', '/cache/a/b'));
    expect([limited.statusCode, limited.headers['retry-after']]).toEqual([429, '60']);
    await app.close();
  });

  it('DELETE reads its body, as every DELETE: over 64 KB is 413, an invalid Content-Type 400; nothing purged', async () => {
    const cache = new MemoryCache(['example.com/a']);
    const { app, audit } = testApp({ cache });
    const big = await app.inject({ ...call('DELETE', '/cache/example.com/a'), payload: 'x'.repeat(70_000) });
    expect([big.statusCode, big.json()]).toEqual([413, { error: 'request body too large' }]);
    const badType = await app.inject({
      ...call('DELETE', '/cache/example.com/a'),
      headers: { ...AUTH, 'content-type': ';;' },
      payload: '{}',
    });
    expect(badType.statusCode).toBe(400);
    expect(badType.json()).toEqual({ error: expect.stringMatching(/^invalid JSON: /) });
    expect([...cache.keys, ...audit]).toEqual(['example.com/a']);
    const small = await app.inject({ ...call('DELETE', '/cache/example.com/a'), payload: '{"ignored":true}' });
    expect(small.json()).toEqual({ purged: true });
    await app.close();
  });

  it('OPTIONS and other methods on a cache path: 405 with Allow: DELETE, PURGE', async () => {
    const { app } = testApp({ cache: new MemoryCache([]) });
    for (const method of ['OPTIONS', 'GET', 'POST', 'PUT'] as const) {
      const res = await app.inject({ method, url: '/cache/example.com/a/b', headers: AUTH });
      expect([res.statusCode, res.headers.allow]).toEqual([405, 'DELETE, PURGE']);
    }
    await app.close();
  });
});
