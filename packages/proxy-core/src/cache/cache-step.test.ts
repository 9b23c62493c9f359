import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { PassThrough } from 'node:stream';
import { defaultReverseProxy, emptySite, type Site } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import type { RequestContext } from '../hooks.js';
import type { Forwarder, ForwardOptions } from '../pipeline.js';
import { CacheFill, forwardThroughCache } from './cache-step.js';
import { CacheRegistry, type ResponseCache } from './response-cache.js';

const handler = defaultReverseProxy([{ host: '127.0.0.1', port: 8080 }]);

/** A forwarder that records what the cache step asked of it. */
function recorder() {
  const forwarded: ForwardOptions[] = [];
  const delivered: { status: number; headers: IncomingHttpHeaders; body: string }[] = [];
  const forwarder: Forwarder = {
    forward: (_req, _res, _ctx, _handler, options) => forwarded.push(options),
    deliver: (_req, _res, _ctx, _options, status, headers, body) =>
      delivered.push({ status, headers, body: body.toString() }),
  };
  return { forwarder, forwarded, delivered };
}

function exchange(site: Site, headers: IncomingHttpHeaders = {}, method = 'GET') {
  const set: Record<string, string> = {};
  const req = { method, url: '/p?x=1', headers } as IncomingMessage;
  const res = { setHeader: (name: string, value: string) => (set[name] = value) } as unknown as ServerResponse;
  const ctx = { host: 'c.test', site } as RequestContext;
  return { req, res, ctx, set };
}

function cachingSite(): Site {
  const site = emptySite([{ scheme: 'http', host: 'c.test', port: null }]);
  site.handler = handler;
  site.cache = { max_size_bytes: 1024 * 1024, ttl_ms: 60_000 };
  return site;
}

describe('the cache step', () => {
  it('hands a site without cache, and a request with Authorization, straight to the forwarder', () => {
    const { forwarder, forwarded } = recorder();
    const caches = new CacheRegistry();
    const options: ForwardOptions = { path: '/p?x=1' };
    const plain = emptySite([{ scheme: 'http', host: 'c.test', port: null }]);
    for (const [site, headers] of [
      [plain, {}],
      [cachingSite(), { authorization: 'Basic x' }],
    ] as const) {
      const { req, res, ctx, set } = exchange(site, headers);
      forwardThroughCache(forwarder, caches, req, res, ctx, handler, options);
      expect(set).toEqual({});
    }
    expect(forwarded).toEqual([options, options]);
  });

  it('forwards a MISS with a fill observer, then answers the next request from memory', async () => {
    const { forwarder, forwarded, delivered } = recorder();
    const caches = new CacheRegistry();
    const site = cachingSite();
    const edit = () => {};
    const first = exchange(site);
    forwardThroughCache(forwarder, caches, first.req, first.res, first.ctx, handler, {
      path: '/p?x=1',
      editResponseHeaders: edit,
    });
    expect(first.set).toEqual({ 'x-cache': 'MISS' });
    const options = forwarded[0] as ForwardOptions;
    expect(options.path).toBe('/p?x=1');
    expect(options.editResponseHeaders).toBe(edit);
    expect(options.observer).toBeInstanceOf(CacheFill);

    const upstream = new PassThrough() as PassThrough & { complete?: boolean };
    const headers: IncomingHttpHeaders = { 'cache-control': 'max-age=60', 'content-length': '2' };
    options.observer?.onUpstreamResponse(upstream as unknown as IncomingMessage, 200, headers);
    expect(headers['x-cache']).toBe('MISS');
    upstream.complete = true;
    upstream.end(Buffer.from('ok'));
    upstream.resume();
    await new Promise((resolve) => upstream.on('close', resolve));
    expect((caches.forSite(site, site.cache as NonNullable<Site['cache']>) as ResponseCache).size).toBe(1);

    const second = exchange(site);
    forwardThroughCache(forwarder, caches, second.req, second.res, second.ctx, handler, { path: '/p?x=1' });
    expect(forwarded).toHaveLength(1);
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toMatchObject({ status: 200, body: 'ok' });
    expect(delivered[0]?.headers).toMatchObject({ age: '0', 'x-cache': 'HIT', 'content-length': '2' });
    expect(delivered[0]?.headers['cache-control']).toBe('max-age=60');
  });

  it('forwards a no-store request and a HEAD miss with X-Cache: MISS and no fill', () => {
    const { forwarder, forwarded } = recorder();
    const caches = new CacheRegistry();
    const site = cachingSite();
    const options: ForwardOptions = { path: '/p?x=1' };
    for (const [headers, method] of [
      [{ 'cache-control': 'no-store' }, 'GET'],
      [{}, 'HEAD'],
    ] as const) {
      const { req, res, ctx, set } = exchange(site, headers, method);
      forwardThroughCache(forwarder, caches, req, res, ctx, handler, options);
      expect(set).toEqual({ 'x-cache': 'MISS' });
    }
    expect(forwarded).toEqual([options, options]);
  });
});
