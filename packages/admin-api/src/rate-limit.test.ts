import { describe, expect, it } from 'vitest';
import { AUTH, testApp } from './memory-ports.test-helpers.js';
import { createRateLimiter } from './rate-limit.js';

describe('fixed window limiter', () => {
  it('lets max through per window and reports the seconds left', () => {
    const limiter = createRateLimiter(2, 60_000);
    expect(limiter.take(1_000)).toBe(0);
    expect(limiter.take(2_000)).toBe(0);
    expect(limiter.take(2_500)).toBe(59);
    expect(limiter.take(60_999)).toBe(1);
    expect(limiter.take(61_000)).toBe(0);
  });
});

describe('global admin rate limit (spec §8)', () => {
  it('60 authenticated requests per 60-second window, then 429 with Retry-After until the window ends', async () => {
    const { app, clock } = testApp();
    for (let i = 0; i < 60; i++) {
      expect((await app.inject({ method: 'GET', url: '/routes', headers: AUTH })).statusCode).toBe(200);
    }
    clock.advance(30_000);
    const limited = await app.inject({ method: 'GET', url: '/analytics', headers: AUTH });
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toEqual({ error: 'rate limit exceeded' });
    expect(limited.headers['retry-after']).toBe('30');
    expect(limited.headers['access-control-allow-origin']).toBe('null');
    clock.advance(29_999);
    expect((await app.inject({ method: 'GET', url: '/routes', headers: AUTH })).statusCode).toBe(429);
    clock.advance(1);
    expect((await app.inject({ method: 'GET', url: '/routes', headers: AUTH })).statusCode).toBe(200);
    await app.close();
  });

  it('401s, OPTIONS and /health are not counted; 404s and 405s with a token are', async () => {
    const { app } = testApp({ rateLimit: { max: 3, windowMs: 60_000 } });
    for (let i = 0; i < 10; i++) {
      await app.inject({ method: 'GET', url: '/routes' });
      await app.inject({ method: 'OPTIONS', url: '/routes' });
      await app.inject({ method: 'GET', url: '/health' });
    }
    expect((await app.inject({ method: 'GET', url: '/nope', headers: AUTH })).statusCode).toBe(404);
    expect((await app.inject({ method: 'PATCH', url: '/routes', headers: AUTH })).statusCode).toBe(405);
    expect((await app.inject({ method: 'GET', url: '/routes', headers: AUTH })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/routes', headers: AUTH })).statusCode).toBe(429);
    expect((await app.inject({ method: 'GET', url: '/routes' })).statusCode).toBe(401);
    await app.close();
  });

  it('counts Unix-socket requests too (one global window)', async () => {
    const { app } = testApp({ transport: 'unix', rateLimit: { max: 1, windowMs: 60_000 } });
    expect((await app.inject({ method: 'GET', url: '/routes' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/routes' })).statusCode).toBe(429);
    await app.close();
  });
});
