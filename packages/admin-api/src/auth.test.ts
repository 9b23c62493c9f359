import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createBearerCheck } from './auth.js';
import { AUTH, TOKEN, testApp } from './memory-ports.test-helpers.js';

function get(target: { socketPath: string } | { port: number }, path: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest({ ...target, host: '127.0.0.1', path, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('bearer check', () => {
  it('accepts only the exact token, scheme case-insensitive', () => {
    const check = createBearerCheck('s3cret');
    expect(check('Bearer s3cret')).toBe(true);
    expect(check('bearer s3cret')).toBe(true);
    expect(check('Bearer s3cret2')).toBe(false);
    expect(check('Bearer s3cre')).toBe(false);
    expect(check('Basic s3cret')).toBe(false);
    expect(check('s3cret')).toBe(false);
    expect(check(undefined)).toBe(false);
  });

  it('rejects everything when no token is configured', () => {
    expect(createBearerCheck(undefined)('Bearer ')).toBe(false);
    expect(createBearerCheck('')('Bearer x')).toBe(false);
  });
});

describe('authentication (spec §5)', () => {
  it('401 unauthorized without a token, with a wrong token, and for every endpoint', async () => {
    const { app, store } = testApp();
    const cases = [
      { method: 'GET', url: '/routes' },
      { method: 'POST', url: '/routes', payload: { domain: 'a.example', upstream: '127.0.0.1:80', tls: false } },
      { method: 'DELETE', url: '/routes/a.example' },
      { method: 'PUT', url: '/routes/snapshot', payload: { source: 'c' } },
      { method: 'GET', url: '/metrics' },
      { method: 'GET', url: '/analytics' },
      { method: 'GET', url: '/analytics/a.example' },
      { method: 'GET', url: '/certificates' },
      { method: 'GET', url: '/discovery' },
      { method: 'PURGE', url: '/cache/a.example/x' },
      { method: 'POST', url: '/reload' },
      { method: 'GET', url: '/openapi.json' },
      { method: 'GET', url: '/unknown' },
    ] as const;
    for (const c of cases) {
      for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: `Basic ${TOKEN}` }]) {
        const res = await app.inject({ ...c, headers });
        expect(res.statusCode, `${c.method} ${c.url}`).toBe(401);
        expect(res.json()).toEqual({ error: 'unauthorized' });
        expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
        expect(res.headers['access-control-allow-origin']).toBe('null');
      }
    }
    expect(store.writes).toBe(0);
    await app.close();
  });

  it('with PROXY_ADMIN_TOKEN unset every authenticated TCP request is 401, even with an empty bearer', async () => {
    const { app } = testApp({ token: undefined });
    for (const authorization of ['Bearer ', 'Bearer undefined', `Bearer ${TOKEN}`]) {
      const res = await app.inject({ method: 'GET', url: '/routes', headers: { authorization } });
      expect(res.statusCode).toBe(401);
    }
    await app.close();
  });

  it('transport unix needs no token', async () => {
    const { app } = testApp({ transport: 'unix', token: undefined });
    const res = await app.inject({ method: 'GET', url: '/routes' });
    expect(res.statusCode).toBe(200);
    await app.close();
  });

  it('auto: one app needs the token over TCP and none over a Unix socket', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'admin-api-'));
    const socketPath = join(dir, 'admin.sock');
    const { app } = testApp({ transport: 'auto' });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const unix = createServer(app.routing);
    await new Promise<void>((resolve) => unix.listen(socketPath, resolve));
    try {
      const address = app.server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      expect((await get({ port }, '/routes')).status).toBe(401);
      expect((await get({ port }, '/routes', AUTH)).status).toBe(200);
      const overSocket = await get({ socketPath }, '/routes');
      expect(overSocket.status).toBe(200);
      expect(JSON.parse(overSocket.body)).toEqual([]);
      expect((await get({ socketPath }, '/health')).status).toBe(200);
    } finally {
      await new Promise((resolve) => unix.close(resolve));
      await app.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('auto: inject() (no real server) counts as TCP and needs the token', async () => {
    const { app } = testApp({ transport: 'auto' });
    expect((await app.inject({ method: 'GET', url: '/routes' })).statusCode).toBe(401);
    await app.close();
  });
});
