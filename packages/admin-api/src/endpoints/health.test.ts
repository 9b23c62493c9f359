import { afterEach, describe, expect, it } from 'vitest';
import { AUTH, testApp } from '../memory-ports.test-helpers.js';

describe('GET /health', () => {
  let t = testApp();
  afterEach(async () => {
    await t.app.close();
    t = testApp();
  });

  it('answers ok with whole seconds of uptime, without a token', async () => {
    t = testApp({ startedAt: 1_800_000_000_000 - 3_500, clock: () => 1_800_000_000_000 });
    const res = await t.app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['access-control-allow-origin']).toBe('null');
    expect(res.json()).toEqual({ status: 'ok', uptime_secs: 3 });
  });

  it('issue 31: with storage redis, says whether Redis answers, and stays 200 "ok" while it does not', async () => {
    let reachable = true;
    t = testApp({ storage: { state: () => ({ backend: 'redis', reachable }) } });
    expect((await t.app.inject({ method: 'GET', url: '/health' })).json()).toMatchObject({
      status: 'ok',
      storage: { backend: 'redis', reachable: true },
    });
    reachable = false;
    const res = await t.app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: 'ok', storage: { backend: 'redis', reachable: false } });
  });

  it('ignores a wrong token and works with no token configured', async () => {
    t = testApp({ token: undefined });
    const res = await t.app.inject({ method: 'GET', url: '/health', headers: { authorization: 'Bearer nope' } });
    expect(res.statusCode).toBe(200);
  });

  it('issue 20: HEAD /health is GET without a body: 200, no token, same headers, not rate limited', async () => {
    t = testApp({ rateLimit: { max: 0, windowMs: 60_000 } });
    const get = await t.app.inject({ method: 'GET', url: '/health' });
    for (const headers of [{}, { authorization: 'Bearer nope' }]) {
      const head = await t.app.inject({ method: 'HEAD', url: '/health', headers });
      expect(head.statusCode).toBe(200);
      expect(head.body).toBe('');
      expect(head.headers['content-type']).toBe(get.headers['content-type']);
      expect(head.headers['content-length']).toBe(get.headers['content-length']);
      expect(head.headers['access-control-allow-origin']).toBe('null');
    }
  });

  it('issue 20: HEAD on the other GET paths is authenticated and counted like GET, and sends no body', async () => {
    t = testApp({ rateLimit: { max: 1, windowMs: 60_000 } });
    const unauthorized = await t.app.inject({ method: 'HEAD', url: '/routes' });
    expect(unauthorized.statusCode).toBe(401);
    expect(unauthorized.body).toBe('');
    const head = await t.app.inject({ method: 'HEAD', url: '/routes', headers: AUTH });
    expect(head.statusCode).toBe(200);
    expect(head.body).toBe('');
    expect(head.headers['content-length']).toBe('2');
    expect((await t.app.inject({ method: 'HEAD', url: '/routes', headers: AUTH })).statusCode).toBe(429);
  });

  it('is exempt from the global rate limit and does not consume it', async () => {
    for (let i = 0; i < 100; i++) {
      expect((await t.app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
    }
    expect((await t.app.inject({ method: 'GET', url: '/routes', headers: AUTH })).statusCode).toBe(200);
    for (let i = 0; i < 59; i++) await t.app.inject({ method: 'GET', url: '/routes', headers: AUTH });
    expect((await t.app.inject({ method: 'GET', url: '/routes', headers: AUTH })).statusCode).toBe(429);
    expect((await t.app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
  });
});
