import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createBearerCheck } from './auth.js';
import type { AuthEvent } from './auth-throttle.js';
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
    // 26 wrong tokens from one client: over the failed-auth throttle's default, which has its own tests.
    const { app, store } = testApp({ authThrottle: { maxFailures: 1_000 } });
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

describe('issue 20: wrong tokens are throttled per client and logged', () => {
  const from = (remoteAddress: string, authorization?: string) => ({
    method: 'GET' as const,
    url: '/routes',
    remoteAddress,
    headers: authorization === undefined ? {} : { authorization },
  });

  it('10 wrong tokens in a minute lock the client out: 429 with Retry-After, even with the right token', async () => {
    const { app, clock } = testApp();
    for (let i = 0; i < 10; i++) {
      expect((await app.inject(from('192.0.2.7', `Bearer guess-${i}`))).statusCode).toBe(401);
    }
    clock.advance(15_000);
    for (const authorization of ['Bearer guess-10', AUTH.authorization, undefined]) {
      const locked = await app.inject(from('192.0.2.7', authorization));
      expect(locked.statusCode).toBe(429);
      expect(locked.json()).toEqual({ error: 'rate limit exceeded' });
      expect(locked.headers['retry-after']).toBe('45');
      expect(locked.headers['access-control-allow-origin']).toBe('null');
    }
    // Another client is not affected, and neither is /health.
    expect((await app.inject(from('192.0.2.8', AUTH.authorization))).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/health', remoteAddress: '192.0.2.7' })).statusCode).toBe(200);
    clock.advance(45_000);
    expect((await app.inject(from('192.0.2.7', AUTH.authorization))).statusCode).toBe(200);
    await app.close();
  });

  it('a correct token clears earlier failures; requests without credentials are not counted', async () => {
    const { app } = testApp();
    for (let i = 0; i < 9; i++) await app.inject(from('192.0.2.9', 'Bearer typo'));
    expect((await app.inject(from('192.0.2.9', AUTH.authorization))).statusCode).toBe(200);
    for (let i = 0; i < 9; i++) expect((await app.inject(from('192.0.2.9', 'Bearer typo'))).statusCode).toBe(401);
    for (let i = 0; i < 50; i++) expect((await app.inject(from('192.0.2.9'))).statusCode).toBe(401);
    expect((await app.inject(from('192.0.2.9', AUTH.authorization))).statusCode).toBe(200);
    await app.close();
  });

  it('one IPv6 /64 is one client', async () => {
    const { app } = testApp();
    for (let i = 0; i < 10; i++) await app.inject(from(`2001:db8:1:2::${i + 1}`, 'Bearer guess'));
    expect((await app.inject(from('2001:db8:1:2:ffff::1', AUTH.authorization))).statusCode).toBe(429);
    expect((await app.inject(from('2001:db8:1:3::1', AUTH.authorization))).statusCode).toBe(200);
    await app.close();
  });

  it('logs the first failure per client and window and the lockout, never the token, to proxy::admin::audit', async () => {
    const events: AuthEvent[] = [];
    const { app } = testApp({ authEvents: (e) => events.push(e) });
    for (let i = 0; i < 30; i++) await app.inject(from('192.0.2.10', 'Bearer s3cret-guess'));
    expect(events).toEqual([
      { action: 'auth_failure', client: '192.0.2.10', failures: 1 },
      { action: 'auth_lockout', client: '192.0.2.10', failures: 10, retry_after: 60 },
    ]);
    await app.close();

    // The default sink: a WARN line with the audit target on the app's logger.
    const lines: unknown[] = [];
    const noop = () => {};
    const logger = {
      level: 'info',
      info: noop,
      error: noop,
      debug: noop,
      trace: noop,
      fatal: noop,
      silent: noop,
      warn: (...args: unknown[]) => lines.push(args),
      child() {
        return this;
      },
    };
    const logged = testApp({ logger: logger as never });
    await logged.app.inject(from('192.0.2.11', 'Bearer s3cret-guess'));
    expect(lines).toEqual([
      [
        { target: 'proxy::admin::audit', action: 'auth_failure', client: '192.0.2.11', failures: 1 },
        'auth_failure 192.0.2.11 (1 failed)',
      ],
    ]);
    expect(JSON.stringify(lines)).not.toContain('s3cret');
    await logged.app.close();
  });

  it('issue 28: with PROXY_ADMIN_TOKEN unset, bearers are never counted: always 401, never a lockout', async () => {
    const events: AuthEvent[] = [];
    for (const token of [undefined, '']) {
      const { app } = testApp({ token, authEvents: (e) => events.push(e) });
      for (let i = 0; i < 30; i++) {
        const res = await app.inject(from('192.0.2.13', `Bearer guess-${i}`));
        expect(res.statusCode, `request ${i + 1}`).toBe(401);
        expect(res.json()).toEqual({ error: 'unauthorized' });
        expect(res.headers['retry-after']).toBeUndefined();
      }
      await app.close();
    }
    expect(events).toEqual([]);
  });

  it('the Unix socket is never throttled: its requests need no token', async () => {
    const { app } = testApp({ transport: 'unix' });
    for (let i = 0; i < 20; i++) {
      expect((await app.inject(from('192.0.2.12', 'Bearer wrong'))).statusCode).toBe(200);
    }
    await app.close();
  });
});
