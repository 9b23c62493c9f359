import { describe, expect, it } from 'vitest';
import { CacheRegistry, cacheLifetimeMs, entrySize, ResponseCache } from './response-cache.js';

const entry = (bytes: number, expiresAt = Date.now() + 60_000) => {
  const body = Buffer.alloc(bytes);
  return { status: 200, headers: {}, body, storedAt: Date.now(), baseAge: 0, expiresAt, size: bytes };
};

describe('cacheLifetimeMs', () => {
  const ttl = 300_000;
  it('stores what Cache-Control allows, capped by the ttl', () => {
    expect(cacheLifetimeMs(200, { 'cache-control': 'public, max-age=60' }, ttl)).toBe(60_000);
    expect(cacheLifetimeMs(200, { 'cache-control': 'max-age=60, s-maxage=10' }, ttl)).toBe(10_000);
    expect(cacheLifetimeMs(200, { 'cache-control': 'public' }, ttl)).toBe(ttl);
    expect(cacheLifetimeMs(200, { 'cache-control': 'max-age=99999' }, ttl)).toBe(ttl);
  });
  it('never stores private, no-store, no-cache, Set-Cookie, Vary, non-200 or no Cache-Control', () => {
    expect(cacheLifetimeMs(200, { 'cache-control': 'private, max-age=60' }, ttl)).toBe(-1);
    expect(cacheLifetimeMs(200, { 'cache-control': 'no-store' }, ttl)).toBe(-1);
    expect(cacheLifetimeMs(200, { 'cache-control': 'no-cache, max-age=5' }, ttl)).toBe(-1);
    expect(cacheLifetimeMs(200, { 'cache-control': 'max-age=60', 'set-cookie': ['a=b'] }, ttl)).toBe(-1);
    expect(cacheLifetimeMs(200, { 'cache-control': 'max-age=60', vary: 'cookie' }, ttl)).toBe(-1);
    expect(cacheLifetimeMs(404, { 'cache-control': 'max-age=60' }, ttl)).toBe(-1);
    expect(cacheLifetimeMs(200, {}, ttl)).toBe(-1);
    expect(cacheLifetimeMs(200, { 'cache-control': 'max-age=0' }, ttl)).toBe(-1);
  });
});

describe('ResponseCache', () => {
  it('evicts the least recently used entries to stay under the byte bound', () => {
    const cache = new ResponseCache({ max_size_bytes: 300, ttl_ms: 60_000 });
    cache.set('h/a', entry(100));
    cache.set('h/b', entry(100));
    cache.set('h/c', entry(100));
    cache.get('h/a');
    cache.set('h/d', entry(100));
    expect(cache.get('h/b')).toBeUndefined();
    expect(cache.get('h/a')).toBeDefined();
    expect(cache.bytes).toBeLessThanOrEqual(300);
    expect(cache.set('h/huge', entry(301))).toBe(false);
  });
  it('drops stale entries on read', () => {
    const cache = new ResponseCache({ max_size_bytes: 1000, ttl_ms: 60_000 });
    cache.set('h/a', entry(10, Date.now() - 1));
    expect(cache.get('h/a')).toBeUndefined();
    expect(cache.bytes).toBe(0);
  });
  it('charges headers and key', () => {
    expect(entrySize({ 'content-type': 'text/plain' }, Buffer.alloc(10), 'h/a')).toBeGreaterThan(10 + 22);
  });
});

describe('CacheRegistry', () => {
  const config = { max_size_bytes: 1000, ttl_ms: 1000 };
  it('purges across sites, normalising the host case and the leading slash', () => {
    const reg = new CacheRegistry();
    const site = { cache: config };
    reg.retain(new Set([site]));
    const cache = reg.forSite(site, config);
    cache.set('example.com/a?x=1', entry(1));
    expect(reg.purge('EXAMPLE.com/a?x=1')).toBe(true);
    expect(reg.purge('example.com/a?x=1')).toBe(false);
    cache.set('example.com/b', entry(1));
    reg.retain(new Set([{ cache: config }]));
    expect(reg.purge('example.com/b')).toBe(false);
  });

  it('is enabled as soon as a published site has cache, before any cache exists, and follows every swap', () => {
    const reg = new CacheRegistry();
    expect(reg.enabled).toBe(false);
    const plain = { cache: null };
    reg.retain(new Set([plain]));
    expect(reg.enabled).toBe(false);
    reg.retain(new Set([plain, { cache: config }]));
    expect(reg.enabled).toBe(true);
    expect(reg.purge('example.com/never-cached')).toBe(false);
    reg.retain(new Set([{ cache: config }]));
    expect(reg.enabled).toBe(true);
    reg.retain(new Set([plain]));
    expect(reg.enabled).toBe(false);
    reg.retain(new Set());
    expect(reg.enabled).toBe(false);
  });
});
