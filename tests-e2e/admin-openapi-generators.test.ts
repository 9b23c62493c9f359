// Issue 21: clients that two generators users use emit from the document the
// built daemon serves — openapi-typescript + openapi-fetch, and
// @hey-api/openapi-ts — compiled strictly and run against that daemon: list
// routes, add one, and purge a cached path holding "/" and "?", with the
// DELETE alias the document declares and with PURGE itself.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall } from './support/admin.js';
import { generateRuntimeClients, type RuntimeClients } from './support/openapi-client.js';
import { type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

type Upstream = Awaited<ReturnType<typeof startUpstream>>;
type Answer = { status: number; data?: unknown; error?: unknown };
interface AdminClient {
  listRoutes(): Promise<Answer>;
  createRoute(domain: string, upstream: string): Promise<Answer>;
  purge(host: string, path: string): Promise<Answer>;
  purgeWithPurgeMethod(host: string, path: string): Promise<Answer>;
}

describe('generated clients (openapi-fetch, @hey-api/openapi-ts) drive the built proxyd, PURGE included', () => {
  let upstream: Upstream;
  let proxyd: RunningProxyd;
  let workDir: string;
  let generated: RuntimeClients;
  let servers: Array<{ url: string }>;
  const clients: Record<string, AdminClient> = {};
  // Every request the generated clients send, as it leaves them (they call the global fetch).
  const sent: Array<{ method: string; url: string }> = [];
  const realFetch = globalThis.fetch;

  beforeAll(async () => {
    upstream = await startUpstream((req, res) => {
      res
        .writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'public, max-age=60' })
        .end(`upstream saw ${req.headers.host}${req.url}`);
    });
    workDir = await mkdtemp(path.join(tmpdir(), 'proxyd-openapi-generators-'));
    proxyd = await startProxyd({
      sites: `http://file.test {\n\tcache\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      args: ['--state-dir', path.join(workDir, 'state')],
    });
    const served = await adminCall(proxyd.adminPort, 'GET', '/openapi.json');
    expect(served.status).toBe(200);
    const document = JSON.parse(served.body) as { servers: Array<{ url: string }> };
    servers = document.servers;
    generated = await generateRuntimeClients(document, workDir);
    expect(generated.compileOutput).toBe('');
    globalThis.fetch = (input, init) => {
      const req = new Request(input, init);
      sent.push({ method: req.method, url: req.url });
      return realFetch(req);
    };
    const openapiFetch = (await import(pathToFileURL(generated.openapiFetch).href)) as {
      createAdminClient(baseUrl: string, token: string): AdminClient;
    };
    // openapi-typescript emits types only: the base URL is the served document's servers[0], as a user reads it.
    clients['openapi-fetch'] = openapiFetch.createAdminClient(servers[0]?.url ?? '', ADMIN_TOKEN);
    const heyApi = (await import(pathToFileURL(generated.heyApi).href)) as {
      createAdminClient(token: string): AdminClient & { baseUrl: string };
    };
    const hey = heyApi.createAdminClient(ADMIN_TOKEN);
    expect(hey.baseUrl).toBe(`http://127.0.0.1:${proxyd.adminPort}`);
    clients['hey-api'] = hey;
  }, 180_000);

  afterAll(async () => {
    globalThis.fetch = realFetch;
    await proxyd?.stop();
    await upstream?.close();
    await rm(workDir, { recursive: true, force: true });
  });

  const via = (host: string, p: string) => request(proxyd.httpPort, { path: p, headers: { host } });
  const cacheState = async (p: string) => (await via('file.test', p)).headers['x-cache'];

  it('the served document names the listener it was fetched from; the generated hey-api client defaults to it', () => {
    expect(servers).toEqual([
      { url: `http://127.0.0.1:${proxyd.adminPort}`, description: expect.stringContaining('TCP admin listener') },
    ]);
    expect(generated.heyApiClientSource).toContain(`baseUrl: 'http://127.0.0.1:${proxyd.adminPort}'`);
  });

  for (const name of ['openapi-fetch', 'hey-api']) {
    it(`${name}: lists routes, adds a route that serves traffic, purges a cached path with "/" and "?"`, async () => {
      const client = clients[name] as AdminClient;
      const listed = await client.listRoutes();
      expect(listed.status).toBe(200);
      expect((listed.data as Array<{ domain: string }>).map((r) => r.domain)).toContain('file.test');

      const upstreamAddress = `127.0.0.1:${upstream.port}`;
      expect(await client.createRoute(`${name}.test`, upstreamAddress)).toEqual({
        status: 201,
        data: {
          domain: `${name}.test`,
          upstream: upstreamAddress,
          tls: false,
          rate_limit_rps: null,
          under_attack: false,
          source: null,
        },
      });
      expect((await via(`${name}.test`, '/x')).body).toBe(`upstream saw ${name}.test/x`);
      const after = await client.listRoutes();
      expect((after.data as Array<{ domain: string }>).map((r) => r.domain)).toContain(`${name}.test`);

      // The DELETE alias, with the path as generated clients take it (no leading "/"). A MISS fills the cache.
      const page = `/${name}/assets/app.js?v=2`;
      expect(await cacheState(page)).toBe('MISS');
      expect(await cacheState(page)).toBe('HIT');
      sent.length = 0;
      expect(await client.purge('file.test', page.slice(1))).toEqual({ status: 200, data: { purged: true } });
      expect(sent).toEqual([
        {
          method: 'DELETE',
          url: `http://127.0.0.1:${proxyd.adminPort}/cache/file.test/${name}%2Fassets%2Fapp.js%3Fv%3D2`,
        },
      ]);
      expect(await client.purge('file.test', page.slice(1))).toMatchObject({
        status: 404,
        error: { purged: false, reason: 'not found' },
      });
      expect(await cacheState(page)).toBe('MISS');

      // PURGE itself, sent by the same generated call; the path with its leading "/" this time.
      expect(await cacheState(page)).toBe('HIT');
      sent.length = 0;
      expect(await client.purgeWithPurgeMethod('file.test', page)).toEqual({ status: 200, data: { purged: true } });
      expect(sent).toEqual([
        {
          method: 'PURGE',
          url: `http://127.0.0.1:${proxyd.adminPort}/cache/file.test/%2F${name}%2Fassets%2Fapp.js%3Fv%3D2`,
        },
      ]);
      expect(await client.purgeWithPurgeMethod('file.test', page)).toMatchObject({
        status: 404,
        error: { purged: false, reason: 'not found' },
      });
      expect(await cacheState(page)).toBe('MISS');
    });
  }

  it('the raw form (curl -X PURGE, slashes as sent) purges the same entry as the encoded one', async () => {
    const page = '/raw/assets/app.js?v=3';
    expect(await cacheState(page)).toBe('MISS');
    expect(await cacheState(page)).toBe('HIT');
    const raw = await adminCall(proxyd.adminPort, 'PURGE', `/cache/file.test${page}`);
    expect([raw.status, JSON.parse(raw.body)]).toEqual([200, { purged: true }]);
    expect(await cacheState(page)).toBe('MISS');
    const encoded = await adminCall(proxyd.adminPort, 'DELETE', `/cache/file.test/${encodeURIComponent(page)}`);
    expect([encoded.status, JSON.parse(encoded.body)]).toEqual([200, { purged: true }]);
    expect(await cacheState(page)).toBe('MISS');
  });
});
