import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { connect, type NetConnectOpts } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { parse } from '@proxyd/proxyfile';
import { RouteStore } from '@proxyd/route-store';
import { createLogging } from '@proxyd/telemetry';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ControlPlane, type ControlPlaneOptions, startControlPlane } from './control-plane.js';

const TOKEN = 'control-plane-test-token-0123456789abcdef';

let dir: string;
let control: ControlPlane | undefined;
let lines: Array<Record<string, unknown>>;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'proxyd-control-'));
  lines = [];
});
afterEach(async () => {
  await control?.close();
  control = undefined;
  await rm(dir, { recursive: true, force: true });
});

/** Starts the control plane on 127.0.0.1 (a free port) and a Unix socket in a temp dir; log lines go to `lines`. */
async function start(
  overrides: Partial<ControlPlaneOptions> = {},
): Promise<{ tcp: NetConnectOpts; unix: NetConnectOpts }> {
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  const { store } = await RouteStore.open({ stateFile: null });
  control = await startControlPlane({
    config: parse(''),
    admin: '127.0.0.1:0',
    adminSocket: path.join(dir, 'admin.sock'),
    token: TOKEN,
    store,
    reloader: undefined,
    metrics: undefined,
    cache: undefined,
    analytics: undefined,
    certificates: undefined,
    discovery: undefined,
    logging: createLogging('info', sink),
    startedAt: Date.now(),
    ...overrides,
  });
  return {
    tcp: { host: '127.0.0.1', port: control.adminAddress.port },
    unix: { path: control.socketPath as string },
  };
}

/**
 * Sends raw bytes, then `trickle.piece` every `trickle.everyMs`; resolves with what was read until the
 * server closed (or "<no close>" after 2 s).
 */
function exchange(target: NetConnectOpts, text: string, trickle?: { piece: string; everyMs: number }): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(target, () => socket.write(text));
    let data = '';
    const pieces =
      trickle === undefined
        ? undefined
        : setInterval(() => {
            if (socket.writable) socket.write(trickle.piece);
          }, trickle.everyMs);
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(`${data}<no close>`);
    }, 2_000);
    socket.on('data', (c) => (data += c));
    socket.on('close', () => {
      clearTimeout(timer);
      clearInterval(pieces);
      resolve(data);
    });
    // A trickle may run into the reset of a connection the server has answered and closed: the answer was read.
    socket.on('error', trickle === undefined ? reject : () => {});
  });
}

/** A JSON request to the TCP admin listener with the token; resolves with the status and the parsed body. */
function callJson(
  target: NetConnectOpts,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      {
        ...(target as { host: string; port: number }),
        method,
        path,
        headers: {
          authorization: `Bearer ${TOKEN}`,
          ...(text === undefined ? {} : { 'content-type': 'application/json' }),
        },
      },
      (res) => {
        let data = '';
        res.on('data', (c) => (data += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(data) }));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

describe('the route limit through the admin API (issue 20)', () => {
  it('a POST or snapshot past the limit is 409 route limit reached, and nothing of it is applied', async () => {
    const { store } = await RouteStore.open({ stateFile: null, maxRoutes: 2 });
    const { tcp } = await start({ store });
    const route = (domain: string) => ({ domain, upstream: '127.0.0.1:9000', tls: false });
    expect((await callJson(tcp, 'POST', '/routes', route('a.test'))).status).toBe(201);
    expect((await callJson(tcp, 'POST', '/routes', route('b.test'))).status).toBe(201);
    const refused = await callJson(tcp, 'POST', '/routes', route('c.test'));
    expect(refused).toEqual({
      status: 409,
      body: {
        error:
          'route limit reached: the table holds at most 2 routes (this write would make it 3); delete routes first',
      },
    });
    const snapshot = await callJson(tcp, 'PUT', '/routes/snapshot', {
      source: 'deploy',
      routes: [route('d.test'), route('e.test')],
    });
    expect(snapshot.status).toBe(409);
    expect((snapshot.body as { error: string }).error).toMatch(/^route limit reached: /);
    // Replacing a route is still accepted at the limit.
    expect(
      (await callJson(tcp, 'POST', '/routes', { domain: 'a.test', upstream: '127.0.0.1:9001', tls: false })).status,
    ).toBe(201);
    const listed = await callJson(tcp, 'GET', '/routes');
    expect((listed.body as { domain: string }[]).map((r) => r.domain).sort()).toEqual(['a.test', 'b.test']);
  });
});

describe('control plane listeners (issue 20)', () => {
  it('Expect: bogus is 417 with the envelope and the CORS header on TCP and on the Unix socket', async () => {
    const { tcp, unix } = await start();
    for (const target of [tcp, unix]) {
      const raw = await exchange(
        target,
        `GET /routes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nExpect: bogus\r\n\r\n`,
      );
      const where = JSON.stringify(target);
      expect(raw, where).toMatch(/^HTTP\/1\.1 417 /);
      expect(raw.toLowerCase(), where).toContain('access-control-allow-origin: null');
      expect(raw, where).toMatch(/\r\n\r\n\{"error":"expectation failed: [^"]/);
      expect(raw, where).not.toContain('<no close>');
    }
  });

  it('CONNECT is answered 405 with the envelope and closed on TCP and on the Unix socket, not left hanging', async () => {
    const { tcp, unix } = await start();
    for (const target of [tcp, unix]) {
      const raw = await exchange(target, 'CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n');
      const where = JSON.stringify(target);
      expect(raw, where).toMatch(/^HTTP\/1\.1 405 /);
      expect(raw.toLowerCase(), where).toContain('access-control-allow-origin: null');
      expect(raw, where).toMatch(/\r\n\r\n\{"error":"method not allowed"\}$/);
    }
  });

  it('cuts a header slowloris with a 408 on TCP and on the Unix socket, at the header timeout given', async () => {
    const { tcp, unix } = await start({
      adminTimeouts: { headersMs: 300, requestMs: 600, idleMs: 500, keepAliveMs: 500, checkIntervalMs: 50 },
    });
    for (const target of [tcp, unix]) {
      // One header line every 100 ms, never the blank line: exchange waits 2 s, the cut is due after 0.3 s.
      const raw = await exchange(target, 'GET /routes HTTP/1.1\r\nHost: x\r\n', {
        piece: 'X-Pad: x\r\n',
        everyMs: 100,
      });
      const where = JSON.stringify(target);
      expect(raw, where).toMatch(/^HTTP\/1\.1 408 /);
      expect(raw, where).toMatch(/\r\n\r\n\{"error":"request timeout"\}$/);
    }
  });

  it('closes a TCP connection over the per-client limit at once; the Unix socket has no such limit', async () => {
    const { tcp, unix } = await start({ adminConnectionLimits: { perClient: 1 } });
    const held = connect(tcp);
    await new Promise((resolve) => held.once('connect', resolve));
    try {
      expect(await exchange(tcp, 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n')).toBe('');
      const socketHeld = connect(unix);
      await new Promise((resolve) => socketHeld.once('connect', resolve));
      expect(await exchange(unix, 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).toMatch(
        /^HTTP\/1\.1 200 /,
      );
      socketHeld.destroy();
      const refusal = lines.find((l) => String(l.msg).startsWith('admin connection from 127.0.0.1 refused'));
      expect(refusal).toMatchObject({ level: 'warn', target: 'proxy::admin', limit: 'per_client', per_client: 1 });
    } finally {
      held.destroy();
    }
  });

  it('warns at start when PROXY_ADMIN_TOKEN is shorter than 32 characters, without logging it', async () => {
    const short = 'tiny-token-4567';
    await start({ token: short });
    const warning = lines.find((l) => String(l.msg).startsWith('PROXY_ADMIN_TOKEN is 15 characters long'));
    expect(warning).toMatchObject({ level: 'warn', target: 'proxy::admin', token_length: 15, min_length: 32 });
    expect(JSON.stringify(lines)).not.toContain(short);
  });

  it('gives no token warning for a token of 32 characters or more', async () => {
    await start({ token: 'x'.repeat(32) });
    expect(lines.filter((l) => String(l.msg).includes('PROXY_ADMIN_TOKEN'))).toEqual([]);
  });

  it('logs wrong tokens on proxy::admin::audit without the token, and locks the client out after 10', async () => {
    await start();
    const url = `http://127.0.0.1:${control?.adminAddress.port}/routes`;
    for (let i = 0; i < 10; i++) {
      const res = await fetch(url, { headers: { authorization: 'Bearer guessed-secret-value' } });
      expect(res.status).toBe(401);
    }
    const locked = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(locked.status).toBe(429);
    expect(await locked.json()).toEqual({ error: 'rate limit exceeded' });
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
    const audit = lines.filter((l) => l.target === 'proxy::admin::audit');
    expect(audit).toEqual([
      expect.objectContaining({ level: 'warn', action: 'auth_failure', client: '127.0.0.1', failures: 1 }),
      expect.objectContaining({
        level: 'warn',
        action: 'auth_lockout',
        client: '127.0.0.1',
        failures: 10,
        retry_after: 60,
      }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('guessed-secret-value');
    // The operator's socket is not locked out.
    const unix = control?.socketPath as string;
    const overSocket = await new Promise<number>((resolve, reject) => {
      request({ socketPath: unix, path: '/routes' }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
        .on('error', reject)
        .end();
    });
    expect(overSocket).toBe(200);
  });
});
