import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall } from './support/admin.js';
import { type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

// The built daemon in front of a real upstream, headless Chromium loading the
// page: the script is injected, web-vitals reports LCP, CLS and INP through
// the beacon endpoint, and GET /analytics/{domain} shows them once flushed.
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>vitals</title>
<style>body{margin:0;font:16px sans-serif} #hero{width:800px;height:400px;background:linear-gradient(#39f,#f93)} #btn{font-size:24px;padding:20px}</style>
</head>
<body>
<div id="spacer"></div>
<h1>Vitals test</h1>
<div id="hero"></div>
<p><button id="btn">slow click</button> <span id="out"></span></p>
<script>
  setTimeout(() => { document.getElementById('spacer').style.height = '150px'; }, 300);
  document.getElementById('btn').addEventListener('click', () => {
    const end = performance.now() + 150; while (performance.now() < end) {}
    document.getElementById('out').textContent = 'clicked';
  });
</script>
</body></html>`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Snapshot {
  page_views_1m: number;
  unique_visitors: number;
  top_pages: Array<{ path: string; views: number }>;
  web_vitals: Record<'lcp' | 'cls' | 'inp', { p50: number; p75: number; p95: number; p99: number }>;
}

describe('analytics in a real browser (built daemon, Chromium)', () => {
  let proxyd: RunningProxyd;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  const upstreamPaths: string[] = [];

  beforeAll(async () => {
    upstream = await startUpstream((req, res) => {
      upstreamPaths.push(`${String(req.headers.host).replace(/:\d+$/, '')}${req.url ?? ''}`);
      const gzip = req.url === '/gz' && /gzip/.test(String(req.headers['accept-encoding']));
      const body = gzip ? zlib.gzipSync(PAGE) : Buffer.from(PAGE);
      res.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'content-length': body.length,
        ...(gzip ? { 'content-encoding': 'gzip' } : {}),
      });
      res.end(body);
    });
    proxyd = await startProxyd({
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN, PROXYD_ANALYTICS_CYCLE_MS: '500' },
      sites: `http://vitals.localhost {
\treverse_proxy 127.0.0.1:${upstream.port}
}

http://plain.localhost {
\treverse_proxy 127.0.0.1:${upstream.port}
\tanalytics off
}
`,
    });
  });

  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
  });

  it('injects the script into HTML (identity and gzip); an `analytics off` site is untouched and owns /_proxyd/', async () => {
    const page = await request(proxyd.httpPort, { headers: { host: 'vitals.localhost' } });
    expect(page.status).toBe(200);
    // A small page is rewritten whole: an exact Content-Length, not chunked.
    expect(page.headers['content-length']).toBe(String(Buffer.byteLength(page.body)));
    expect(page.body).toMatch(/<script src="\/_proxyd\/a\.js\?v=[\w-]+" data-t="[\w.-]+" defer><\/script><\/head>/);
    const script = await request(proxyd.httpPort, { path: '/_proxyd/a.js', headers: { host: 'vitals.localhost' } });
    expect(script.status).toBe(200);
    expect(script.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    const plain = await request(proxyd.httpPort, { headers: { host: 'plain.localhost' } });
    expect(plain.body).toBe(PAGE);
    expect(plain.headers['content-length']).toBe(String(Buffer.byteLength(PAGE)));
    const forged = await request(proxyd.httpPort, {
      method: 'POST',
      path: '/_proxyd/collect',
      headers: { host: 'vitals.localhost' },
      body: JSON.stringify({ t: '1.AAAAAAAAAAAAAAAAAAAAAA', m: [{ n: 'LCP', v: 1 }] }),
    });
    expect(forged.status).toBe(403);
    expect(upstreamPaths.filter((p) => p.startsWith('vitals.localhost/_proxyd/'))).toEqual([]);
    // analytics off: the reserved paths are the upstream's like any other path.
    const offScript = await request(proxyd.httpPort, { path: '/_proxyd/a.js', headers: { host: 'plain.localhost' } });
    expect(offScript.body).toBe(PAGE);
    expect(upstreamPaths).toContain('plain.localhost/_proxyd/a.js');
  });

  it('reports LCP, CLS and INP from Chromium; GET /analytics/{domain} shows them after the cycle', async () => {
    const userDataDir = await mkdtemp(path.join(tmpdir(), 'proxyd-chromium-'));
    const context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: FLAGS,
      viewport: { width: 1280, height: 1000 },
    });
    try {
      const page = context.pages()[0] ?? (await context.newPage());
      await page.goto(`http://vitals.localhost:${proxyd.httpPort}/gz`);
      expect(await page.locator('script[data-t]').count()).toBe(1);
      await sleep(800);
      await page.click('#btn');
      await sleep(1500);
      await page.close();
      let snapshot: Snapshot | undefined;
      for (let i = 0; i < 40; i++) {
        await sleep(250);
        const res = await adminCall(proxyd.adminPort, 'GET', '/analytics/vitals.localhost');
        if (res.status !== 200) continue;
        snapshot = JSON.parse(res.body) as Snapshot;
        const v = snapshot.web_vitals;
        if (v.lcp.p50 > 0 && v.cls.p50 > 0 && v.inp.p50 > 0) break;
      }
      expect(snapshot).toBeDefined();
      const v = (snapshot as Snapshot).web_vitals;
      expect(v.lcp.p50).toBeGreaterThan(0);
      expect(v.lcp.p50).toBeLessThan(10_000);
      expect(v.cls.p50).toBeGreaterThan(0);
      expect(v.cls.p50).toBeLessThan(1);
      expect(v.inp.p50).toBeGreaterThanOrEqual(150);
      expect(v.inp.p50).toBeLessThan(2000);
      expect((snapshot as Snapshot).top_pages.some((p) => p.path === '/gz')).toBe(true);
      expect((snapshot as Snapshot).top_pages.some((p) => p.path.startsWith('/_proxyd/'))).toBe(false);
    } finally {
      await context.close();
      await rm(userDataDir, { recursive: true, force: true });
    }
  });

  it('GET /analytics lists only domains with counted traffic; an `analytics off` site and an unknown domain are 404', async () => {
    const list = await adminCall(proxyd.adminPort, 'GET', '/analytics');
    expect(list.status).toBe(200);
    const domains = (JSON.parse(list.body) as Array<{ domain: string }>).map((s) => s.domain);
    expect(domains).toContain('vitals.localhost');
    // plain.localhost (`analytics off`) served pages above, yet it is not counted at all.
    expect(domains).not.toContain('plain.localhost');
    const plain = await adminCall(proxyd.adminPort, 'GET', '/analytics/plain.localhost');
    expect(plain.status).toBe(404);
    expect(JSON.parse(plain.body)).toEqual({ error: 'no analytics for domain: "plain.localhost"' });
    expect((await adminCall(proxyd.adminPort, 'GET', '/analytics/none.localhost')).status).toBe(404);
  });
});
