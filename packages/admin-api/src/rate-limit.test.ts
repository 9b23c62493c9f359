import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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

  it('counts Unix-socket requests in a window of their own (socketRateLimit, default the same 60 per 60 s)', async () => {
    const { app } = testApp({ transport: 'unix', rateLimit: { max: 1, windowMs: 60_000 } });
    for (let i = 0; i < 60; i++) expect((await app.inject({ method: 'GET', url: '/routes' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/routes' })).statusCode).toBe(429);
    await app.close();
    const small = testApp({ transport: 'unix', socketRateLimit: { max: 1, windowMs: 60_000 } });
    expect((await small.app.inject({ method: 'GET', url: '/routes' })).statusCode).toBe(200);
    const limited = await small.app.inject({ method: 'GET', url: '/routes' });
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toEqual({ error: 'rate limit exceeded' });
    expect(limited.headers['retry-after']).toBe('60');
    await small.app.close();
  });

  it('issue 20: TCP clients that use up the global window do not lock the Unix socket out, nor the reverse', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'admin-limit-'));
    const socketPath = join(dir, 'admin.sock');
    const { app } = testApp({
      transport: 'auto',
      rateLimit: { max: 3, windowMs: 60_000 },
      socketRateLimit: { max: 2, windowMs: 60_000 },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const unix = createServer(app.routing);
    await new Promise<void>((resolve) => unix.listen(socketPath, resolve));
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const status = async (target: { port: number } | { socketPath: string }, headers: Record<string, string> = {}) =>
      new Promise<number>((resolve, reject) => {
        request({ ...target, host: '127.0.0.1', path: '/routes', headers }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        })
          .on('error', reject)
          .end();
      });
    try {
      for (let i = 0; i < 3; i++) expect(await status({ port }, AUTH)).toBe(200);
      expect(await status({ port }, AUTH)).toBe(429);
      expect(await status({ socketPath })).toBe(200);
      expect(await status({ socketPath })).toBe(200);
      expect(await status({ socketPath })).toBe(429);
      expect(await status({ port }, AUTH)).toBe(429);
    } finally {
      await new Promise((resolve) => unix.close(resolve));
      await app.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
