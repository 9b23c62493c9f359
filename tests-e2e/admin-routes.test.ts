import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall, logLines, socketCall } from './support/admin.js';
import { PROXYD_MAIN, type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

type Upstream = Awaited<ReturnType<typeof startUpstream>>;
const named = (name: string) =>
  startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' }).end(`from ${name}`);
  });

describe('admin API over TCP and the Unix socket: routes drive real traffic and survive a restart', () => {
  let a: Upstream;
  let b: Upstream;
  let workDir: string;
  let stateDir: string;
  let socketPath: string;
  let proxyd: RunningProxyd | undefined;

  const start = () =>
    startProxyd({
      sites: `http://file.test {\n\treverse_proxy 127.0.0.1:${a.port}\n}\n`,
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      args: ['--state-dir', stateDir, '--admin-socket', socketPath],
    });
  const via = (host: string) => request((proxyd as RunningProxyd).httpPort, { headers: { host } });
  const api = (method: string, p: string, body?: unknown) =>
    adminCall((proxyd as RunningProxyd).adminPort, method, p, body);

  beforeAll(async () => {
    [a, b] = [await named('A'), await named('B')];
    workDir = await mkdtemp(path.join(tmpdir(), 'proxyd-admin-e2e-'));
    stateDir = path.join(workDir, 'state');
    socketPath = path.join(workDir, 'admin.sock');
    proxyd = await start();
  });

  afterAll(async () => {
    await proxyd?.stop();
    await a?.close();
    await b?.close();
    await rm(workDir, { recursive: true, force: true });
  });

  it('lists the Proxyfile route with source null', async () => {
    const res = await api('GET', '/routes');
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual([
      {
        domain: 'file.test',
        upstream: `127.0.0.1:${a.port}`,
        tls: false,
        rate_limit_rps: null,
        under_attack: false,
        source: null,
      },
    ]);
  });

  it('POST /routes routes traffic to the new upstream, and a second POST replaces it', async () => {
    expect((await via('api.test')).status).toBe(404);
    const created = await api('POST', '/routes', { domain: 'API.test', upstream: `127.0.0.1:${b.port}`, tls: false });
    expect(created.status).toBe(201);
    expect(JSON.parse(created.body)).toMatchObject({ domain: 'api.test', source: null, rate_limit_rps: null });
    expect((await via('api.test')).body).toBe('from B');
    const replaced = await api('POST', '/routes', { domain: 'api.test', upstream: `127.0.0.1:${a.port}`, tls: false });
    expect(replaced.status).toBe(201);
    expect((await via('api.test')).body).toBe('from A');
  });

  it('PUT /routes/snapshot reconciles one source and returns the documented route_hash', async () => {
    const routes = [
      { domain: 'y.ctl.test', upstream: `127.0.0.1:${b.port}`, tls: false },
      { domain: 'x.ctl.test', upstream: `127.0.0.1:${a.port}`, tls: false },
    ];
    const res = await api('PUT', '/routes/snapshot', { source: 'ctl', routes });
    expect(res.status).toBe(200);
    const lines = [...routes]
      .sort((p, q) => (p.domain < q.domain ? -1 : 1))
      .map((r) => `${r.domain} ${r.upstream} ${r.tls}\n`)
      .join('');
    expect(JSON.parse(res.body)).toEqual({
      source: 'ctl',
      applied: 2,
      removed: 0,
      total_routes: 4,
      route_hash: createHash('sha256').update(`ctl\n${lines}`).digest('hex'),
    });
    expect((await via('y.ctl.test')).body).toBe('from B');
    const again = await api('PUT', '/routes/snapshot', { source: 'ctl', routes: [routes[1]] });
    expect(JSON.parse(again.body)).toMatchObject({ applied: 1, removed: 1, total_routes: 3 });
    expect((await via('y.ctl.test')).status).toBe(404);
    expect((await via('x.ctl.test')).body).toBe('from A');
  });

  it('DELETE /routes/{domain} stops routing the domain', async () => {
    await api('POST', '/routes', { domain: 'gone.test', upstream: `127.0.0.1:${b.port}`, tls: false });
    expect((await via('gone.test')).body).toBe('from B');
    const res = await api('DELETE', '/routes/GONE.test');
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ deleted: 'gone.test' });
    expect((await via('gone.test')).status).toBe(404);
    expect((await api('DELETE', '/routes/gone.test')).status).toBe(404);
  });

  it('serves the same app on a 0600 Unix socket owned by the process user, without a token', async () => {
    const info = await stat(socketPath);
    expect(info.isSocket()).toBe(true);
    expect(info.mode & 0o777).toBe(0o600);
    expect(info.uid).toBe(process.getuid?.());
    const tcp = await api('GET', '/routes');
    const unix = await socketCall(socketPath, 'GET', '/routes');
    expect(unix.status).toBe(200);
    expect(unix.body).toBe(tcp.body);
    const posted = await socketCall(socketPath, 'POST', '/routes', {
      domain: 'sock.test',
      upstream: `127.0.0.1:${b.port}`,
      tls: false,
    });
    expect(posted.status).toBe(201);
    expect((await via('sock.test')).body).toBe('from B');
    expect((await adminCall((proxyd as RunningProxyd).adminPort, 'GET', '/routes', undefined, null)).status).toBe(401);
    const raw = await new Promise<string>((resolve, reject) => {
      let text = '';
      const conn = net.connect(socketPath, () => conn.write('NOT AN HTTP REQUEST\r\n\r\n'));
      conn.on('data', (c: Buffer) => {
        text += c.toString();
      });
      conn.on('end', () => resolve(text));
      conn.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    expect(raw).toMatch(/access-control-allow-origin: null/i);
    expect(raw).toMatch(/\r\n\r\n\{"error":"[^"]*malformed HTTP request"\}$/);
  });

  it('GET /metrics counts traffic per domain and status class, and passes promtool', async () => {
    await via('api.test');
    const res = await api('GET', '/metrics');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4');
    expect(res.body).toMatch(/^# TYPE proxyd_requests_total counter$/m);
    expect(res.body).toMatch(/^proxyd_requests_total\{domain="api\.test",status_class="2xx"\} [1-9]\d*$/m);
    expect(res.body).toMatch(/^proxyd_requests_total\{domain="_unrouted",status_class="4xx"\} [1-9]\d*$/m);
    expect(res.body).toMatch(/^proxyd_request_duration_seconds_count\{status_class="2xx"\} [1-9]\d*$/m);
    expect(res.body).toContain(`proxyd_upstream_healthy{upstream="127.0.0.1:${a.port}"} 1`);
    expect(res.body).toMatch(/^# TYPE proxyd_request_duration_seconds histogram$/m);
    expect(res.body).toMatch(/^proxyd_routes\{origin="api"\} 3$/m);
    expect(res.body).toMatch(/^process_cpu_seconds_total /m);
    const check = spawnSync('promtool', ['check', 'metrics'], { input: res.body, encoding: 'utf8' });
    expect(`${check.stdout}${check.stderr}`.trim()).toBe('');
    expect(check.status).toBe(0);
  });

  it('logs audit events for route writes', () => {
    const audit = logLines((proxyd as RunningProxyd).output()).filter((l) => l.target === 'proxy::admin::audit');
    expect(audit).toContainEqual(
      expect.objectContaining({ level: 'info', action: 'route_add', principal: 'admin', resource: 'api.test' }),
    );
    expect(audit).toContainEqual(
      expect.objectContaining({ action: 'route_delete', principal: 'admin', resource: 'gone.test' }),
    );
  });

  it('restores API routes after a restart, and the Proxyfile route is still there', async () => {
    const before = JSON.parse((await api('GET', '/routes')).body) as unknown[];
    await proxyd?.stop();
    proxyd = await start();
    const after = JSON.parse((await api('GET', '/routes')).body) as unknown[];
    expect(after).toEqual(before);
    expect((await via('api.test')).body).toBe('from A');
    expect((await via('sock.test')).body).toBe('from B');
    expect((await via('file.test')).body).toBe('from A');
  });

  it('replaces a stale socket file and refuses a socket another process listens on', async () => {
    await proxyd?.stop();
    proxyd = undefined;
    // A socket file nobody listens on: a process listened on it and was killed (SIGKILL skips the unlink).
    await rm(socketPath, { force: true });
    spawnSync(process.execPath, [
      '-e',
      `require('node:net').createServer().listen(${JSON.stringify(socketPath)}, () => process.kill(process.pid, 'SIGKILL'))`,
    ]);
    expect((await stat(socketPath)).isSocket()).toBe(true);
    proxyd = await start();
    expect((await socketCall(socketPath, 'GET', '/health')).status).toBe(200);
    await proxyd.stop();
    proxyd = undefined;

    const other = net.createServer();
    await new Promise<void>((resolve) => other.listen(socketPath, resolve));
    try {
      await expect(start()).rejects.toThrow(/admin socket .* is in use by a running process/);
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
  });
});

describe('admin API flags and logging', () => {
  it('`proxyd openapi` prints the OpenAPI 3.1 document, the same one GET /openapi.json serves', async () => {
    const printed = spawnSync(process.execPath, [PROXYD_MAIN, 'openapi'], { encoding: 'utf8' });
    expect(printed.status).toBe(0);
    const doc = JSON.parse(printed.stdout) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/health', '/routes', '/routes/snapshot', '/reload']),
    );
    const stateDir = await mkdtemp(path.join(tmpdir(), 'proxyd-openapi-'));
    const proxyd = await startProxyd({
      sites: '',
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      args: ['--state-dir', stateDir],
    });
    try {
      const served = await adminCall(proxyd.adminPort, 'GET', '/openapi.json');
      expect(served.status).toBe(200);
      // Issue 21: the printed servers is the default listener, the served one the listener it came from.
      expect((doc as unknown as { servers: unknown }).servers).toEqual([
        expect.objectContaining({ url: 'http://127.0.0.1:6190' }),
      ]);
      expect(JSON.parse(served.body)).toEqual({
        ...doc,
        servers: [expect.objectContaining({ url: `http://127.0.0.1:${proxyd.adminPort}` })],
      });
    } finally {
      await proxyd.stop();
      await rm(stateDir, { recursive: true, force: true });
    }
  });

  // Issue 14: the event-loop delay gauges printed `Nan` before their first sample.
  it('GET /metrics right after start prints no NaN and passes promtool', async () => {
    const stateDir = await mkdtemp(path.join(tmpdir(), 'proxyd-fresh-metrics-'));
    const proxyd = await startProxyd({
      sites: '',
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      args: ['--state-dir', stateDir],
    });
    try {
      const scrapes = await Promise.all([1, 2, 3].map(() => adminCall(proxyd.adminPort, 'GET', '/metrics')));
      for (const res of scrapes) {
        expect(res.status).toBe(200);
        expect(res.body).not.toMatch(/\bNa[Nn]\b/);
        const check = spawnSync('promtool', ['check', 'metrics'], { input: res.body, encoding: 'utf8' });
        expect(`${check.stdout}${check.stderr}`.trim()).toBe('');
      }
    } finally {
      await proxyd.stop();
      await rm(stateDir, { recursive: true, force: true });
    }
  });

  it('--no-metrics answers 404 on GET /metrics', async () => {
    const proxyd = await startProxyd({
      sites: '',
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      args: ['--no-metrics', '--state-dir', path.join(tmpdir(), `proxyd-nm-${process.pid}`)],
    });
    try {
      const res = await adminCall(proxyd.adminPort, 'GET', '/metrics');
      expect(res.status).toBe(404);
    } finally {
      await proxyd.stop();
      await rm(path.join(tmpdir(), `proxyd-nm-${process.pid}`), { recursive: true, force: true });
    }
  });

  it('--admin-socket without a path serves on /var/run/proxy-admin.sock (root), or names the path when it cannot', async () => {
    const defaultSocket = '/var/run/proxy-admin.sock';
    const stateDir = await mkdtemp(path.join(tmpdir(), 'proxyd-defsock-'));
    const args = ['--state-dir', stateDir, '--admin-socket'];
    try {
      if (process.getuid?.() !== 0) {
        await expect(startProxyd({ sites: '', args })).rejects.toThrow(/proxy-admin\.sock/);
        return;
      }
      const proxyd = await startProxyd({ sites: '', args });
      try {
        const info = await stat(defaultSocket);
        expect(info.mode & 0o777).toBe(0o600);
        expect((await socketCall(defaultSocket, 'GET', '/routes')).status).toBe(200);
      } finally {
        await proxyd.stop();
      }
      await expect(stat(defaultSocket)).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  });

  it('warns at start when PROXY_ADMIN_TOKEN is unset, and answers 401', async () => {
    const stateDir = await mkdtemp(path.join(tmpdir(), 'proxyd-notoken-'));
    const proxyd = await startProxyd({ sites: '', env: { PROXY_ADMIN_TOKEN: '' }, args: ['--state-dir', stateDir] });
    try {
      const warn = logLines(proxyd.output()).find((l) => l.level === 'warn' && l.target === 'proxy::admin');
      expect(String(warn?.msg)).toMatch(/PROXY_ADMIN_TOKEN is not set/);
      expect((await adminCall(proxyd.adminPort, 'GET', '/routes', undefined, null)).status).toBe(401);
      expect((await adminCall(proxyd.adminPort, 'GET', '/routes', undefined, '')).status).toBe(401);
      // Issue 28: with no token there is nothing to guess, so bearers never lock the client out (10 did, then 429).
      for (let i = 0; i < 15; i++) {
        const res = await adminCall(proxyd.adminPort, 'GET', '/routes', undefined, `guess-${i}`);
        expect(res.status, `bearer ${i + 1}`).toBe(401);
        expect(JSON.parse(res.body)).toEqual({ error: 'unauthorized' });
      }
    } finally {
      await proxyd.stop();
      await rm(stateDir, { recursive: true, force: true });
    }
  });

  it('PROXY_LOG=warn,proxy::admin::audit=info shows exactly the audit events (and warnings)', async () => {
    const stateDir = await mkdtemp(path.join(tmpdir(), 'proxyd-audit-'));
    const up = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'public, max-age=60' }).end('cacheable');
    });
    const proxyd = await startProxyd({
      sites: `http://cached.test {\n\tcache\n\treverse_proxy 127.0.0.1:${up.port}\n}\n`,
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN, PROXY_LOG: 'warn,proxy::admin::audit=info' },
      args: ['--state-dir', stateDir],
      ready: 'health',
    });
    try {
      const call = (m: string, p: string, body?: unknown) => adminCall(proxyd.adminPort, m, p, body);
      expect(
        (await call('POST', '/routes', { domain: 'aud.test', upstream: `127.0.0.1:${up.port}`, tls: false })).status,
      ).toBe(201);
      expect((await call('DELETE', '/routes/aud.test')).status).toBe(200);
      await call('GET', '/routes');
      await request(proxyd.httpPort, { headers: { host: 'nobody.test' } });
      expect((await request(proxyd.httpPort, { path: '/page', headers: { host: 'cached.test' } })).status).toBe(200);
      expect((await call('PURGE', '/cache/cached.test/page')).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const lines = logLines(proxyd.output());
      expect(lines.map((l) => [l.target, l.level, l.action, l.resource])).toEqual([
        ['proxy::admin::audit', 'info', 'route_add', 'aud.test'],
        ['proxy::admin::audit', 'info', 'route_delete', 'aud.test'],
        ['proxy::admin::audit', 'info', 'cache_purge', 'cached.test/page'],
      ]);
      expect(lines.every((l) => l.principal === 'admin')).toBe(true);
      expect(proxyd.output()).not.toContain('proxyd ready');
    } finally {
      await proxyd.stop();
      await up.close();
      await rm(stateDir, { recursive: true, force: true });
    }
  });
});
