import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall } from './support/admin.js';
// The test helper that generates types with openapi-typescript and compiles the fixture client against them.
import { generateClient } from './support/openapi-client.js';
import { type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

type Upstream = Awaited<ReturnType<typeof startUpstream>>;
type Result = { ok: boolean; status: number; body: unknown };
type Client = Record<string, (...args: unknown[]) => Promise<Result>>;

/** route_hash from the admin-api README's definition (not from the daemon's code). */
function documentedRouteHash(source: string, routes: Array<{ domain: string; upstream: string; tls: boolean }>) {
  const lines = routes
    .map((r) => `${r.domain.toLowerCase()} ${r.upstream.toLowerCase()} ${r.tls}\n`)
    .sort((a, b) => {
      const [da, db] = [a.slice(0, a.indexOf(' ')), b.slice(0, b.indexOf(' '))];
      return da < db ? -1 : da > db ? 1 : 0;
    });
  return createHash('sha256')
    .update(`${source}\n${lines.join('')}`)
    .digest('hex');
}

describe('the client generated from the daemon’s own OpenAPI document drives the built proxyd', () => {
  let upstream: Upstream;
  let proxyd: RunningProxyd;
  let workDir: string;
  let client: Client;

  beforeAll(async () => {
    upstream = await startUpstream((req, res) => {
      res
        .writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'public, max-age=60' })
        .end(`upstream saw ${req.headers.host}${req.url}`);
    });
    workDir = await mkdtemp(path.join(tmpdir(), 'proxyd-openapi-e2e-'));
    proxyd = await startProxyd({
      sites: `http://file.test {\n\tcache\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      args: ['--state-dir', path.join(workDir, 'state')],
    });
    const served = await adminCall(proxyd.adminPort, 'GET', '/openapi.json');
    expect(served.status).toBe(200);
    const generated = await generateClient(JSON.parse(served.body), workDir);
    expect(generated.compileOutput).toBe('');
    const module = (await import(pathToFileURL(generated.modulePath).href)) as {
      createClient(base: string, token: string): Client;
    };
    client = module.createClient(`http://127.0.0.1:${proxyd.adminPort}`, ADMIN_TOKEN);
  });

  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
    await rm(workDir, { recursive: true, force: true });
  });

  const call = (name: string, ...args: unknown[]) => {
    const fn = client[name];
    if (fn === undefined) throw new Error(`the generated client has no ${name}`);
    return fn(...args);
  };
  const via = (host: string, p = '/') => request(proxyd.httpPort, { path: p, headers: { host } });

  it('health and list: the Proxyfile route has source null', async () => {
    expect(await call('health')).toMatchObject({ ok: true, status: 200, body: { status: 'ok' } });
    expect(await call('listRoutes')).toEqual({
      ok: true,
      status: 200,
      body: [
        {
          domain: 'file.test',
          upstream: `127.0.0.1:${upstream.port}`,
          tls: false,
          rate_limit_rps: null,
          under_attack: false,
          source: null,
        },
      ],
    });
  });

  it('create routes real traffic, delete removes it, a second delete is 404', async () => {
    const upstreamAddress = `127.0.0.1:${upstream.port}`;
    expect(await call('createRoute', { domain: 'Gen.Test', upstream: upstreamAddress, tls: false })).toEqual({
      ok: true,
      status: 201,
      body: {
        domain: 'gen.test',
        upstream: upstreamAddress,
        tls: false,
        rate_limit_rps: null,
        under_attack: false,
        source: null,
      },
    });
    expect((await via('gen.test', '/x')).body).toBe('upstream saw gen.test/x');
    expect(await call('deleteRoute', { domain: 'GEN.test' })).toEqual({
      ok: true,
      status: 200,
      body: { deleted: 'gen.test' },
    });
    expect((await via('gen.test')).status).toBe(404);
    expect(await call('deleteRoute', { domain: 'gen.test' })).toEqual({
      ok: false,
      status: 404,
      body: { error: 'route not found' },
    });
  });

  it('snapshot reconciles one source and answers the documented route_hash', async () => {
    const routes = [
      { domain: 'S2.test', upstream: `Backend.Internal:${upstream.port}`, tls: true },
      { domain: 's1.test', upstream: `127.0.0.1:${upstream.port}`, tls: false },
    ];
    const first = await call('putSnapshot', { source: 'gen-ctl', routes });
    expect(first).toEqual({
      ok: true,
      status: 200,
      body: {
        source: 'gen-ctl',
        applied: 2,
        removed: 0,
        total_routes: 3,
        route_hash: documentedRouteHash('gen-ctl', routes),
      },
    });
    expect((await via('s1.test', '/y')).body).toBe('upstream saw s1.test/y');
    expect(((await call('listRoutes')).body as Array<{ domain: string; upstream: string }>)[2]).toMatchObject({
      domain: 's2.test',
      upstream: `backend.internal:${upstream.port}`,
      tls: true,
    });
    const second = await call('putSnapshot', { source: 'gen-ctl', routes: [routes[1]] });
    expect(second.body).toMatchObject({ applied: 1, removed: 1, total_routes: 2 });
    expect((await via('s2.test')).status).toBe(404);
    const listed = (await call('listRoutes')).body as Array<{ domain: string; source: string | null }>;
    expect(listed.map((r) => [r.domain, r.source])).toEqual([
      ['file.test', null],
      ['s1.test', 'gen-ctl'],
    ]);
  });

  it('PURGE (typed by hand from the generated components): 404 before traffic, 200 once cached, 400 without a path', async () => {
    expect(await call('purge', 'file.test', 'page?v=1')).toEqual({
      ok: false,
      status: 404,
      body: { purged: false, reason: 'not found' },
    });
    expect((await via('file.test', '/page?v=1')).headers['x-cache']).toBe('MISS');
    expect((await via('file.test', '/page?v=1')).headers['x-cache']).toBe('HIT');
    expect(await call('purge', 'FILE.test', 'page?v=1')).toEqual({ ok: true, status: 200, body: { purged: true } });
    expect((await via('file.test', '/page?v=1')).headers['x-cache']).toBe('MISS');
    expect(await call('purge', 'file.test', '')).toMatchObject({
      ok: false,
      status: 400,
      body: { error: expect.stringMatching(/^invalid cache key: /) },
    });
  });

  it('analytics lists the domains that had traffic; reload answers 200, then 429 within the cooldown', async () => {
    const analytics = await call('listAnalytics');
    expect(analytics).toMatchObject({ ok: true, status: 200 });
    expect((analytics.body as Array<{ domain: string }>).map((s) => s.domain)).toContain('file.test');
    expect(await call('reload')).toMatchObject({ ok: true, status: 200, body: { message: expect.any(String) } });
    expect(await call('reload')).toMatchObject({ ok: false, status: 429, body: { error: 'reload too soon' } });
  });

  it('certificates: an API route gets one from the local CA, listed with the generated status type', async () => {
    const created = await call('createRoute', {
      domain: 'cert.test',
      upstream: `127.0.0.1:${upstream.port}`,
      tls: false,
    });
    expect(created).toMatchObject({ ok: true, status: 201 });
    let rows: Array<{ name: string; issuer: string | null; status: string }> = [];
    for (let i = 0; i < 100; i++) {
      const listed = await call('listCertificates');
      expect(listed).toMatchObject({ ok: true, status: 200 });
      rows = listed.body as typeof rows;
      if (rows.some((r) => r.name === 'cert.test' && r.status === 'valid')) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(rows).toContainEqual(expect.objectContaining({ name: 'cert.test', issuer: 'local', status: 'valid' }));
  });
});
