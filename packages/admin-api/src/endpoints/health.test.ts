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

  it('ignores a wrong token and works with no token configured', async () => {
    t = testApp({ token: undefined });
    const res = await t.app.inject({ method: 'GET', url: '/health', headers: { authorization: 'Bearer nope' } });
    expect(res.statusCode).toBe(200);
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
