import { readFile, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall } from './support/admin.js';
import { type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

type Upstream = Awaited<ReturnType<typeof startUpstream>>;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Regression (admin audit, item 1): PURGE answered 501 "cache not enabled" on a
// site with `cache` until that site had served its first cacheable GET, and
// again after every reload. `enabled` now follows the published route table.
describe('PURGE against the built daemon: a site with cache is enabled from the start and after a reload', () => {
  let upstream: Upstream;
  let proxyd: RunningProxyd;
  let header: string;
  const cachedSite = (port: number) => `http://cached.test {\n\tcache\n\treverse_proxy 127.0.0.1:${port}\n}\n`;
  const plainSite = (port: number) => `http://plain.test {\n\treverse_proxy 127.0.0.1:${port}\n}\n`;
  const purge = (key: string) => adminCall(proxyd.adminPort, 'PURGE', `/cache/${key}`);
  const get = (path: string) => request(proxyd.httpPort, { path, headers: { host: 'cached.test' } });
  const reloadWith = async (sites: string) => {
    await writeFile(proxyd.configPath, `${header}\n${sites}`);
    const res = await adminCall(proxyd.adminPort, 'POST', '/reload');
    expect(res.status, res.body).toBe(200);
  };

  beforeAll(async () => {
    upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'public, max-age=60' }).end('cacheable');
    });
    proxyd = await startProxyd({
      sites: `${cachedSite(upstream.port)}\n${plainSite(upstream.port)}`,
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
    });
    header = (await readFile(proxyd.configPath, 'utf8')).split('\n\n')[0] as string;
  });

  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
  });

  it('before any traffic: 404 {purged:false, reason:"not found"}, not 501', async () => {
    const res = await purge('cached.test/page');
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(res.body)).toEqual({ purged: false, reason: 'not found' });
  });

  it('a cached entry purges with 200, then 404', async () => {
    expect((await get('/page')).headers['x-cache']).toBe('MISS');
    expect((await get('/page')).headers['x-cache']).toBe('HIT');
    const res = await purge('cached.test/page');
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ purged: true });
    expect((await purge('cached.test/page')).status).toBe(404);
  });

  it('after a reload the rebuilt site starts empty: 404 for the old entry, 200 once it is cached again', async () => {
    expect((await get('/page')).headers['x-cache']).toBe('MISS');
    await reloadWith(`${cachedSite(upstream.port)}\n${plainSite(upstream.port)}`);
    const dropped = await purge('cached.test/page');
    expect(dropped.status).toBe(404);
    expect(JSON.parse(dropped.body)).toEqual({ purged: false, reason: 'not found' });
    expect((await get('/page')).headers['x-cache']).toBe('MISS');
    expect((await purge('cached.test/page')).status).toBe(200);
  });

  it('a reload that removes every cache makes PURGE 501 "cache not enabled"', async () => {
    await sleep(5_100);
    await reloadWith(plainSite(upstream.port));
    const res = await purge('cached.test/page');
    expect(res.status).toBe(501);
    expect(JSON.parse(res.body)).toEqual({ error: 'cache not enabled' });
  });
});
