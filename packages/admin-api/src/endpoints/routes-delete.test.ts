import { describe, expect, it } from 'vitest';
import { AUTH, testApp } from '../memory-ports.test-helpers.js';

const del = (segment: string) => ({ method: 'DELETE' as const, url: `/routes/${segment}`, headers: AUTH });

describe('DELETE /routes/{domain}', () => {
  it('200 {deleted} matching case-insensitively; audit route_delete', async () => {
    const { app, store, audit } = testApp();
    await store.upsert({ domain: 'app.example', upstream: 'h:1', tls: false, source: null });
    const res = await app.inject(del('App.EXAMPLE'));
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('null');
    expect(res.json()).toEqual({ deleted: 'app.example' });
    expect(store.table.size).toBe(0);
    expect(audit).toEqual([{ action: 'route_delete', principal: 'admin', resource: 'app.example' }]);
    await app.close();
  });

  it('deletes wildcard routes through a percent-encoded or literal "*"', async () => {
    const { app, store } = testApp();
    await store.upsert({ domain: '*.example', upstream: 'h:1', tls: false, source: null });
    expect((await app.inject(del('%2A.example'))).json()).toEqual({ deleted: '*.example' });
    await store.upsert({ domain: '*.example', upstream: 'h:1', tls: false, source: null });
    expect((await app.inject(del('*.example'))).statusCode).toBe(200);
    await app.close();
  });

  it('404 route not found (envelope), nothing audited', async () => {
    const { app, audit } = testApp();
    const res = await app.inject(del('missing.example'));
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: 'route not found' });
    expect(audit).toEqual([]);
    await app.close();
  });

  it('400 missing domain for an empty segment', async () => {
    const { app } = testApp();
    const res = await app.inject(del(''));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'missing domain' });
    const withQuery = await app.inject(del('?x=1'));
    expect(withQuery.json()).toEqual({ error: 'missing domain' });
    await app.close();
  });

  it('400 missing domain for an empty segment followed by "/" (/routes//); other methods there are 405 Allow: DELETE', async () => {
    const { app, store } = testApp();
    await store.upsert({ domain: 'a.example', upstream: 'h:1', tls: false, source: null });
    for (const segment of ['/', '//', '/a.example', '/?x=1']) {
      const res = await app.inject(del(segment));
      expect(res.statusCode, segment).toBe(400);
      expect(res.json()).toEqual({ error: 'missing domain' });
      expect(res.headers['access-control-allow-origin']).toBe('null');
    }
    expect(store.table.has('a.example')).toBe(true);
    const get = await app.inject({ method: 'GET', url: '/routes//', headers: AUTH });
    expect(get.statusCode).toBe(405);
    expect(get.headers.allow).toBe('DELETE');
    expect((await app.inject({ method: 'DELETE', url: '/routes//' })).statusCode).toBe(401);
    expect((await app.inject(del('a.example/'))).json()).toEqual({ error: 'not found' });
    await app.close();
  });

  it('414 over 253 bytes; 253 bytes goes on to the lookup', async () => {
    const { app } = testApp();
    const over = await app.inject(del('a'.repeat(254)));
    expect(over.statusCode).toBe(414);
    expect(over.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(over.headers['access-control-allow-origin']).toBe('null');
    expect((over.json() as { error: string }).error).toBe('domain segment too long: 254 bytes, the maximum is 253');
    expect((await app.inject(del('a'.repeat(253)))).statusCode).toBe(404);
    expect((await app.inject(del('a'.repeat(10_000)))).statusCode).toBe(414);
    await app.close();
  });

  it('414 is decided on bytes before lowercasing', async () => {
    const { app } = testApp();
    // U+212A KELVIN SIGN is 3 bytes and lowercases to ASCII "k" (1 byte): 85 of them are 255 bytes, 85 after.
    const kelvin = encodeURIComponent('\u212a'.repeat(85));
    expect((await app.inject(del(kelvin))).statusCode).toBe(414);
    // 254 uppercase ASCII letters: 414 as well, whatever lowercasing would give.
    expect((await app.inject(del('A'.repeat(254)))).statusCode).toBe(414);
    // A multi-byte segment under the limit is measured in bytes, not characters: 84 × 3 = 252 bytes goes on,
    // to the ASCII check (issue 20).
    const under = await app.inject(del(encodeURIComponent('\u212a'.repeat(84))));
    expect((under.json() as { error: string }).error).toMatch(/^invalid domain: /);
    await app.close();
  });

  it('issue 20: a segment with U+212A KELVIN SIGN is 400 invalid domain and deletes nothing (not kelvin.test)', async () => {
    const { app, store, audit } = testApp();
    await store.upsert({ domain: 'kelvin.test', upstream: 'h:1', tls: false, source: null });
    for (const segment of [encodeURIComponent('\u212aelvin.test'), encodeURIComponent('caf\u00e9.test')]) {
      const res = await app.inject(del(segment));
      expect(res.statusCode, segment).toBe(400);
      expect(res.headers['access-control-allow-origin']).toBe('null');
      expect((res.json() as { error: string }).error).toMatch(/^invalid domain: ".*" has a character outside ASCII/);
    }
    expect(store.table.has('kelvin.test')).toBe(true);
    expect(audit).toEqual([]);
    expect((await app.inject(del('KELVIN.test'))).json()).toEqual({ deleted: 'kelvin.test' });
    await app.close();
  });

  it('400 invalid URL for malformed percent-encoding', async () => {
    const { app } = testApp();
    const res = await app.inject(del('a%ZZ'));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid URL: malformed percent-encoding in the path' });
    expect(res.headers['access-control-allow-origin']).toBe('null');
    await app.close();
  });

  it('401 without token, 429 over the limit', async () => {
    const { app } = testApp({ rateLimit: { max: 1, windowMs: 60_000 } });
    expect((await app.inject({ method: 'DELETE', url: '/routes/a.example' })).statusCode).toBe(401);
    expect((await app.inject(del('a.example'))).statusCode).toBe(404);
    expect((await app.inject(del('a.example'))).statusCode).toBe(429);
    await app.close();
  });
});
