import type http from 'node:http';
import { defaultReverseProxy, emptySite, type RouteSpec } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import { proxy, get as request, until, upstream, wait } from '../loopback.test-helpers.js';
import type { CacheFills } from './response-cache.js';

/** An upstream that answers with the headers the test asks for and counts hits per URL. */
async function setup(
  headersFor: (url: string) => http.OutgoingHttpHeaders,
  bodyFor: (url: string, hit: number) => string | ((res: http.ServerResponse) => void) = (url, hit) =>
    `body of ${url} #${hit}`,
) {
  const hits = new Map<string, number>();
  const up = await upstream((req, res) => {
    const url = req.url ?? '/';
    hits.set(url, (hits.get(url) ?? 0) + 1);
    res.writeHead(200, { 'content-type': 'text/plain', ...headersFor(url) });
    const body = bodyFor(url, hits.get(url) ?? 0);
    if (typeof body === 'string') res.end(body);
    else body(res);
  });
  const site = emptySite([{ scheme: 'http', host: 'c.test', port: null }]);
  site.handler = defaultReverseProxy([{ host: '127.0.0.1', port: up.port }]);
  site.cache = { max_size_bytes: 1024 * 1024, ttl_ms: 60_000 };
  const plain = emptySite([{ scheme: 'http', host: 'nocache.test', port: null }]);
  plain.handler = site.handler;
  const routes: RouteSpec[] = [
    { domain: 'c.test', origin: 'proxyfile', source: null, site },
    { domain: 'nocache.test', origin: 'proxyfile', source: null, site: plain },
  ];
  const { server, port } = await proxy(routes);
  const get = (path: string, headers: http.OutgoingHttpHeaders = {}, method = 'GET', host = 'c.test') =>
    request(port, host, path, headers, false, method);
  return { hits, get, caches: server.forwarder.caches, server, routes };
}

describe('response cache', () => {
  it('MISS then HIT with Age, and PURGE makes the next request a MISS', async () => {
    const { hits, get, caches } = await setup(() => ({ 'cache-control': 'public, max-age=60' }));
    const miss = await get('/page');
    expect(miss.headers['x-cache']).toBe('MISS');
    const hit = await get('/page');
    expect(hit.headers['x-cache']).toBe('HIT');
    expect(hit.headers.age).toBe('0');
    expect(hit.body).toBe(miss.body);
    expect(hit.headers['x-content-type-options']).toBe('nosniff');
    expect(hits.get('/page')).toBe(1);
    expect(caches.enabled).toBe(true);
    expect(caches.purge('C.test/page')).toBe(true);
    expect(caches.purge('c.test/page')).toBe(false);
    expect((await get('/page')).headers['x-cache']).toBe('MISS');
    expect(hits.get('/page')).toBe(2);
  });

  it('keys on the query string, and HEAD reads GET entries without filling the cache', async () => {
    const { hits, get, caches } = await setup(() => ({ 'cache-control': 'max-age=60' }));
    await get('/q?a=1');
    expect((await get('/q?a=2')).headers['x-cache']).toBe('MISS');
    const head = await get('/q?a=1', {}, 'HEAD');
    expect(head.headers['x-cache']).toBe('HIT');
    expect(head.body).toBe('');
    await get('/h', {}, 'HEAD');
    expect((await get('/h')).headers['x-cache']).toBe('MISS');
    expect(caches.purge('c.test/q?a=1')).toBe(true);
    expect(hits.get('/q?a=1')).toBe(1);
  });

  it('never stores private, no-store, Set-Cookie or Authorization requests', async () => {
    const { hits, get } = await setup((url) =>
      url === '/private'
        ? { 'cache-control': 'private, max-age=60' }
        : url === '/nostore'
          ? { 'cache-control': 'no-store' }
          : url === '/cookie'
            ? { 'cache-control': 'max-age=60', 'set-cookie': 'a=b' }
            : { 'cache-control': 'max-age=60' },
    );
    for (const path of ['/private', '/nostore', '/cookie']) {
      await get(path);
      expect((await get(path)).headers['x-cache']).toBe('MISS');
      expect(hits.get(path)).toBe(2);
    }
    await get('/auth', { authorization: 'Bearer x' });
    const second = await get('/auth', { authorization: 'Bearer x' });
    expect(second.headers['x-cache']).toBeUndefined();
    expect(hits.get('/auth')).toBe(2);
  });

  it('does nothing for a site without cache', async () => {
    const { hits, get } = await setup(() => ({ 'cache-control': 'public, max-age=60' }));
    await get('/n', {}, 'GET', 'nocache.test');
    const again = await get('/n', {}, 'GET', 'nocache.test');
    expect(again.headers['x-cache']).toBeUndefined();
    expect(hits.get('/n')).toBe(2);
  });

  it('is enabled from the published table: before any traffic, and after a swap that drops or adds the cached site', async () => {
    const { get, caches, server, routes } = await setup(() => ({ 'cache-control': 'public, max-age=60' }));
    expect(caches.enabled).toBe(true);
    expect(caches.purge('c.test/never-requested')).toBe(false);
    await get('/page');
    const [cached, plain] = routes as [RouteSpec, RouteSpec];
    server.setRoutes({ routes: [plain], version: 2, changes: null });
    expect(caches.enabled).toBe(false);
    server.setRoutes({ routes: [{ ...cached, site: { ...cached.site } }, plain], version: 3, changes: null });
    expect(caches.enabled).toBe(true);
    expect(caches.purge('c.test/page')).toBe(false);
    expect((await get('/page')).headers['x-cache']).toBe('MISS');
  });

  it('follows the request: no-cache and Pragma refresh the entry, no-store stores nothing, Range bypasses', async () => {
    const { hits, get } = await setup(() => ({ 'cache-control': 'public, max-age=60' }));
    await get('/r');
    const refreshed = await get('/r', { 'cache-control': 'no-cache' });
    expect(refreshed.headers['x-cache']).toBe('MISS');
    expect(refreshed.body).toBe('body of /r #2');
    expect((await get('/r')).body).toBe('body of /r #2');
    expect((await get('/r', { pragma: 'no-cache' })).body).toBe('body of /r #3');
    expect((await get('/r', { 'cache-control': 'no-store' })).headers['x-cache']).toBe('HIT');
    await get('/ns', { 'cache-control': 'no-store' });
    expect((await get('/ns')).headers['x-cache']).toBe('MISS');
    expect(hits.get('/ns')).toBe(2);
    const ranged = await get('/g', { range: 'bytes=0-3' });
    expect(ranged.headers['x-cache']).toBeUndefined();
    expect((await get('/g')).headers['x-cache']).toBe('MISS');
    expect(hits.get('/g')).toBe(2);
  });

  it("counts the upstream's Age against freshness", async () => {
    const { hits, get } = await setup((url) => ({
      'cache-control': 'max-age=10',
      age: url === '/old' ? '20' : '8',
    }));
    await get('/young');
    const hit = await get('/young');
    expect(hit.headers['x-cache']).toBe('HIT');
    expect(hit.headers.age).toBe('8');
    await get('/old');
    expect((await get('/old')).headers['x-cache']).toBe('MISS');
    expect(hits.get('/old')).toBe(2);
  });

  it('stores no entry over an eighth of max_size, and buffers one body for a burst of misses', async () => {
    const big = 'b'.repeat(200 * 1024);
    const { hits, get, caches, routes } = await setup(
      () => ({ 'cache-control': 'max-age=60' }),
      (url) =>
        url === '/big'
          ? big
          : (res) => {
              // 60 KB now, 40 KB later: every miss of the burst is mid-body at once.
              res.write('s'.repeat(60 * 1024));
              setTimeout(() => res.end('s'.repeat(40 * 1024)), 300);
            },
    );
    expect((await get('/big')).body.length).toBe(big.length);
    expect((await get('/big')).headers['x-cache']).toBe('MISS');
    expect(hits.get('/big')).toBe(2);
    const cache = caches.forSite((routes[0] as RouteSpec).site, {
      max_size_bytes: 0,
      ttl_ms: 0,
    }) as unknown as CacheFills;
    const burst = Promise.all(Array.from({ length: 8 }, () => get('/burst')));
    await until(() => hits.get('/burst') === 8);
    await wait(100);
    expect(cache.fillingBytes).toBe(60 * 1024);
    const replies = await burst;
    expect(replies.every((r) => r.body.length === 100 * 1024)).toBe(true);
    expect(cache.fillingBytes).toBe(0);
    expect((await get('/burst')).headers['x-cache']).toBe('HIT');
  });
});
