import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { connect, type NetConnectOpts } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { InjectOptions } from 'fastify';
import { describe, expect, it } from 'vitest';
import { AUTH, MemoryCache, ScriptedReload, testApp } from './memory-ports.test-helpers.js';
import { attachAdminServerHandlers } from './server-events.js';

/** Sends raw bytes and resolves with everything read until the server closes (or 2 s pass: "<no close>"). */
function exchange(target: NetConnectOpts, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(target, () => socket.write(text));
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(`${data}<no close>`);
    }, 2_000);
    socket.on('data', (c) => (data += c));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(data);
    });
    socket.on('error', reject);
  });
}

/** Spec §7, one row each: the request that causes it and the expected status and error. */
const ROWS: Array<{
  row: string;
  status: number;
  error: string | RegExp;
  req: InjectOptions;
}> = [
  {
    row: 'invalid JSON',
    status: 400,
    error: /^invalid JSON: .+/,
    req: {
      method: 'POST',
      url: '/routes',
      headers: { ...AUTH, 'content-type': 'application/json' },
      payload: '{"domain" "x"}',
    },
  },
  {
    row: 'invalid domain',
    status: 400,
    error: /^invalid domain: .+/,
    req: {
      method: 'POST',
      url: '/routes',
      headers: AUTH,
      payload: { domain: 'bad..example', upstream: 'h:1', tls: false },
    },
  },
  {
    row: 'invalid upstream address',
    status: 400,
    error: /^invalid upstream address: .+/,
    req: {
      method: 'POST',
      url: '/routes',
      headers: AUTH,
      payload: { domain: 'a.example', upstream: 'nope', tls: false },
    },
  },
  {
    row: 'missing domain',
    status: 400,
    error: 'missing domain',
    req: { method: 'DELETE', url: '/routes/', headers: AUTH },
  },
  { row: 'unauthorized', status: 401, error: 'unauthorized', req: { method: 'GET', url: '/routes' } },
  {
    row: 'method not allowed',
    status: 405,
    error: 'method not allowed',
    req: { method: 'PATCH', url: '/routes', headers: AUTH },
  },
  {
    row: 'request body too large',
    status: 413,
    error: 'request body too large',
    req: {
      method: 'POST',
      url: '/routes',
      headers: { ...AUTH, 'content-type': 'application/json' },
      payload: `"${'x'.repeat(70_000)}"`,
    },
  },
  {
    row: '414 envelope',
    status: 414,
    error: /^domain segment too long: /,
    req: { method: 'DELETE', url: `/routes/${'x'.repeat(300)}`, headers: AUTH },
  },
  {
    row: 'serialize error',
    status: 500,
    error: /^serialize error: .+/,
    req: { method: 'GET', url: '/analytics', headers: AUTH },
  },
  {
    row: 'reload not supported',
    status: 501,
    error: 'reload not supported — config watcher not active',
    req: { method: 'POST', url: '/reload', headers: AUTH },
  },
  {
    row: 'cache not enabled',
    status: 501,
    error: 'cache not enabled',
    req: { method: 'PURGE', url: '/cache/h/p', headers: AUTH },
  },
];

describe('spec §7 error table', () => {
  for (const { row, status, error, req } of ROWS) {
    it(`${status} ${row}: application/json {error} envelope with the CORS header`, async () => {
      const { app } = testApp({ analytics: { list: () => [{ domain: 'x' } as never], get: () => undefined } });
      const res = await app.inject(req);
      expect(res.statusCode).toBe(status);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.headers['access-control-allow-origin']).toBe('null');
      const body = res.json() as Record<string, unknown>;
      expect(Object.keys(body)).toEqual(['error']);
      if (typeof error === 'string') expect(body.error).toBe(error);
      else expect(body.error).toMatch(error);
      await app.close();
    });
  }

  it('429 rate limit exceeded, with Retry-After', async () => {
    const { app } = testApp({ rateLimit: { max: 0, windowMs: 60_000 } });
    const res = await app.inject({ method: 'GET', url: '/routes', headers: AUTH });
    expect(res.statusCode).toBe(429);
    expect(res.json()).toEqual({ error: 'rate limit exceeded' });
    expect(res.headers['retry-after']).toBe('60');
    expect(res.headers['access-control-allow-origin']).toBe('null');
    await app.close();
  });

  it('an error message is escaped as JSON', async () => {
    const { app } = testApp();
    const res = await app.inject({
      method: 'POST',
      url: '/routes',
      headers: AUTH,
      payload: { domain: 'a"\\\n<b>', upstream: 'h:1', tls: false },
    });
    expect(res.statusCode).toBe(400);
    expect((res.json() as { error: string }).error).toContain('a\\"\\\\\\n<b>');
    await app.close();
  });

  it('unknown paths: 404 {error: "not found"} with the CORS header', async () => {
    const { app } = testApp();
    for (const url of ['/', '/nope', '/routes/a/b', '/health/', '/ROUTES', '/cache', '/analytics/a/b']) {
      const res = await app.inject({ method: 'GET', url, headers: AUTH });
      expect(res.statusCode, url).toBe(404);
      expect(res.json()).toEqual({ error: 'not found' });
      expect(res.headers['access-control-allow-origin']).toBe('null');
    }
    await app.close();
  });

  it('an internal failure of a port is 500 internal error, not a crash, and its message is not sent', async () => {
    for (const thrown of [
      new Error('disk on fire at /etc/proxy/secret'),
      new SyntaxError('Unexpected token } in JSON'),
    ]) {
      const { app } = testApp({ reload: { reload: async () => Promise.reject(thrown) } });
      const res = await app.inject({ method: 'POST', url: '/reload', headers: AUTH });
      expect(res.statusCode).toBe(500);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.json()).toEqual({ error: 'internal error' });
      await app.close();
    }
  });
});

describe('405 method not allowed and OPTIONS (spec §4, §5 rule 3)', () => {
  const ALLOW: Record<string, string> = {
    '/health': 'GET, HEAD',
    '/routes': 'GET, HEAD, POST',
    '/routes/snapshot': 'DELETE, PUT',
    '/routes/a.example': 'DELETE',
    '/routes/': 'DELETE',
    '/metrics': 'GET, HEAD',
    '/analytics': 'GET, HEAD',
    '/analytics/a.example': 'GET, HEAD',
    '/certificates': 'GET, HEAD',
    '/discovery': 'GET, HEAD',
    '/cache/h/p': 'DELETE, PURGE',
    '/reload': 'POST',
    '/openapi.json': 'GET, HEAD',
  };
  for (const [path, allow] of Object.entries(ALLOW)) {
    it(`${path}: OPTIONS (no token) and every other method give 405 with Allow: ${allow}`, async () => {
      const { app, store } = testApp({ cache: new MemoryCache([]), reload: new ScriptedReload([]) });
      const preflight = await app.inject({
        method: 'OPTIONS',
        url: path,
        headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
      });
      expect(preflight.statusCode).toBe(405);
      expect(preflight.headers.allow).toBe(allow);
      expect(preflight.headers['access-control-allow-origin']).toBe('null');
      expect(preflight.json()).toEqual({ error: 'method not allowed' });
      for (const method of ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'PURGE', 'OPTIONS'] as const) {
        if (allow.split(', ').includes(method)) continue;
        const res = await app.inject({ method, url: path, headers: AUTH });
        expect(res.statusCode, `${method} ${path}`).toBe(405);
        expect(res.headers.allow).toBe(allow);
        expect(res.headers['access-control-allow-origin']).toBe('null');
      }
      expect(store.writes).toBe(0);
      await app.close();
    });
  }

  it('OPTIONS on an unknown path is 405 with an empty Allow', async () => {
    const { app } = testApp();
    const res = await app.inject({ method: 'OPTIONS', url: '/nowhere' });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('');
    await app.close();
  });

  it('a wrong method needs the token first (401), except OPTIONS', async () => {
    const { app } = testApp();
    expect((await app.inject({ method: 'GET', url: '/reload' })).statusCode).toBe(401);
    expect((await app.inject({ method: 'OPTIONS', url: '/reload' })).statusCode).toBe(405);
    await app.close();
  });
});

describe('malformed HTTP on a real socket', () => {
  it('answers 400 {error} with the CORS header and keeps serving', async () => {
    const { app } = testApp();
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    try {
      const raw = await new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.write('GARBAGE / HTTP/1.1\r\nHost: x\r\n\r\n'));
        let data = '';
        socket.on('data', (c) => (data += c));
        socket.on('end', () => resolve(data));
        socket.on('error', reject);
      });
      expect(raw).toMatch(/^HTTP\/1\.1 400 /);
      expect(raw.toLowerCase()).toContain('access-control-allow-origin: null');
      expect(raw).toContain('{"error":"bad request: malformed HTTP request"}');
      const huge = await new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () =>
          socket.write(`GET /routes HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
        );
        let data = '';
        socket.on('data', (c) => (data += c));
        socket.on('end', () => resolve(data));
        socket.on('error', reject);
      });
      expect(huge).toMatch(/^HTTP\/1\.1 431 /);
      expect(huge).toContain('{"error":"request header fields too large"}');
      const res = await fetch(`http://127.0.0.1:${port}/health`);
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe('null');
    } finally {
      await app.close();
    }
  });
});

describe('issue 20: requests Node answers before the app, on both listeners', () => {
  it('Expect: bogus is 417 {error} with the CORS header, and the connection closes (TCP and Unix socket)', async () => {
    const { app, store } = testApp({ transport: 'auto' });
    await app.listen({ host: '127.0.0.1', port: 0 });
    await app.ready();
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const dir = await mkdtemp(join(tmpdir(), 'admin-expect-'));
    const socketPath = join(dir, 'admin.sock');
    const unix = createServer(app.routing);
    attachAdminServerHandlers(unix);
    await new Promise<void>((resolve) => unix.listen(socketPath, resolve));
    const body = '{"domain":"a.example","upstream":"h:1","tls":false}';
    try {
      for (const target of [{ port, host: '127.0.0.1' }, { path: socketPath }]) {
        const raw = await exchange(
          target,
          `POST /routes HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH.authorization}\r\nExpect: bogus\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        );
        const where = JSON.stringify(target);
        expect(raw, where).toMatch(/^HTTP\/1\.1 417 Expectation Failed\r\n/);
        expect(raw.toLowerCase(), where).toContain('access-control-allow-origin: null');
        expect(raw.toLowerCase(), where).toContain('content-type: application/json; charset=utf-8');
        expect(raw.toLowerCase(), where).toContain('connection: close');
        expect(raw.endsWith('\r\n\r\n{"error":"expectation failed: only \\"100-continue\\" is supported"}'), raw).toBe(
          true,
        );
      }
      expect(store.writes).toBe(0);
      // 100-continue is still met: the body follows and the request is served.
      const ok = await exchange(
        { path: socketPath },
        `POST /routes HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nConnection: close\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      );
      expect(ok).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 Created\r\n/);
      expect(store.writes).toBe(1);
    } finally {
      await new Promise<void>((resolve) => unix.close(() => resolve()));
      await app.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('CONNECT is 405 {error} with the CORS header and Allow, and the connection closes (TCP and Unix socket)', async () => {
    const { app } = testApp({ transport: 'auto' });
    await app.listen({ host: '127.0.0.1', port: 0 });
    await app.ready();
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const dir = await mkdtemp(join(tmpdir(), 'admin-connect-'));
    const socketPath = join(dir, 'admin.sock');
    const unix = createServer(app.routing);
    attachAdminServerHandlers(unix);
    await new Promise<void>((resolve) => unix.listen(socketPath, resolve));
    try {
      for (const target of [{ port, host: '127.0.0.1' }, { path: socketPath }]) {
        const where = JSON.stringify(target);
        const raw = await exchange(
          target,
          'CONNECT upstream.example:443 HTTP/1.1\r\nHost: upstream.example:443\r\n\r\n',
        );
        expect(raw, where).toMatch(/^HTTP\/1\.1 405 Method Not Allowed\r\n/);
        expect(raw.toLowerCase(), where).toContain('access-control-allow-origin: null');
        expect(raw.toLowerCase(), where).toContain('\r\nallow: \r\n');
        expect(raw.toLowerCase(), where).toContain('connection: close');
        expect(raw.endsWith('\r\n\r\n{"error":"method not allowed"}'), raw).toBe(true);
        const path = await exchange(target, 'CONNECT /routes HTTP/1.1\r\nHost: x\r\n\r\n');
        expect(path, where).toMatch(/^HTTP\/1\.1 405 /);
        expect(path.toLowerCase(), where).toContain('\r\nallow: get, head, post\r\n');
      }
      expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
    } finally {
      await new Promise<void>((resolve) => unix.close(() => resolve()));
      await app.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
