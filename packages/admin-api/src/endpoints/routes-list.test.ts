import { describe, expect, it } from 'vitest';
import { AUTH, MemoryRouteStore, testApp } from '../memory-ports.test-helpers.js';
import type { AdminRoute } from '../ports.js';

describe('GET /routes', () => {
  it('200 with every route, sorted by domain', async () => {
    const { app, store } = testApp();
    await store.upsert({ domain: 'b.example', upstream: 'h:2', tls: false, source: null });
    await store.upsert({ domain: 'a.example', upstream: 'h:1', tls: true, source: 'ctl' });
    const res = await app.inject({ method: 'GET', url: '/routes', headers: AUTH });
    expect(res.statusCode).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe('null');
    expect(res.json()).toEqual([
      { domain: 'a.example', upstream: 'h:1', tls: true, rate_limit_rps: null, under_attack: false, source: 'ctl' },
      { domain: 'b.example', upstream: 'h:2', tls: false, rate_limit_rps: null, under_attack: false, source: null },
    ]);
    await app.close();
  });

  it('shows file-server-only routes (upstream null) and rate limits', async () => {
    const store = new MemoryRouteStore();
    const route: AdminRoute = {
      domain: 'f.example',
      upstream: null,
      tls: false,
      rate_limit_rps: 5,
      under_attack: true,
      source: 'proxyfile',
    };
    store.table.set(route.domain, route);
    const { app } = testApp({ routes: store });
    expect((await app.inject({ method: 'GET', url: '/routes', headers: AUTH })).json()).toEqual([route]);
    await app.close();
  });

  it('401 without token, 429 over the limit', async () => {
    const { app } = testApp({ rateLimit: { max: 1, windowMs: 60_000 } });
    expect((await app.inject({ method: 'GET', url: '/routes' })).statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/routes', headers: AUTH })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/routes', headers: AUTH })).statusCode).toBe(429);
    await app.close();
  });

  it('500 serialize error when a route cannot be serialized', async () => {
    const store = new MemoryRouteStore();
    store.table.set('x.example', { domain: 'x.example', tls: false } as unknown as AdminRoute);
    const { app } = testApp({ routes: store });
    const res = await app.inject({ method: 'GET', url: '/routes', headers: AUTH });
    expect(res.statusCode).toBe(500);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['access-control-allow-origin']).toBe('null');
    expect((res.json() as { error: string }).error).toMatch(/^serialize error: .+/);
    await app.close();
  });
});
