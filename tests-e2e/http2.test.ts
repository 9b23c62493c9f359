import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall, waitUntil } from './support/admin.js';
import { curlHttps } from './support/https-client.js';
import { type RunningProxyd, startProxyd, startUpstream } from './support/proxyd.js';

// HTTP/2 on the built daemon's HTTPS listener with real clients (issue 18):
// curl --http2, nghttp and h2load (Debian nghttp2-client), and headless
// Chromium loading a page with the analytics script and its beacons.

const run = promisify(execFile);

/** curl over HTTPS with only the local root trusted; `-w` prints the HTTP version and status after the body. */
async function curl(
  args: string[],
  name: string,
  port: number,
  root: string,
  urlPath = '/',
): Promise<{ version: string; status: number; body: string; head: string }> {
  const { stdout } = await run(
    'curl',
    [
      ...['-sS', '--max-time', '10', '--cacert', root, '--resolve', `${name}:${port}:127.0.0.1`, '-D', '-'],
      ...args,
      ...['-w', '\n%{http_version} %{http_code}', `https://${name}:${port}${urlPath}`],
    ],
    { encoding: 'utf8' },
  );
  const cut = stdout.lastIndexOf('\n');
  const [version = '', status = '0'] = stdout.slice(cut + 1).split(' ');
  const all = stdout.slice(0, cut);
  const split = all.indexOf('\r\n\r\n');
  return { version, status: Number(status), head: all.slice(0, split), body: all.slice(split + 4) };
}

const BIG = 'x'.repeat(100 * 1024);

describe('HTTP/2 with real clients against the built daemon', () => {
  let proxyd: RunningProxyd;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let root: string;

  beforeAll(async () => {
    upstream = await startUpstream((req, res) => {
      if (req.url === '/hop') {
        // What HTTP/2 forbids in a response, as an HTTP/1.1 upstream may send it.
        res.setHeader('Connection', 'Upgrade');
        res.setHeader('Upgrade', 'h2c');
        res.setHeader('Proxy-Connection', 'keep-alive');
        res.setHeader('Keep-Alive', 'timeout=5');
        res.write('chunked ');
        res.end('body');
        return;
      }
      if (req.url === '/big') {
        res.end(BIG);
        return;
      }
      res.end(`${req.method} ${req.url} host=${req.headers.host} proto=${req.headers['x-forwarded-proto']}`);
    });
    proxyd = await startProxyd({
      autoHttps: 'on',
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      sites: `app.test {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n\nlocalhost {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
    });
    root = path.join(proxyd.dir, 'certs', 'ca', 'local', 'root.crt');
    await waitUntil(async () => (await curlHttps('app.test', proxyd.httpsPort, root)).ok, 10_000);
    await waitUntil(async () => (await curlHttps('localhost', proxyd.httpsPort, root)).ok, 10_000);
  });

  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
  });

  it('curl --http2 gets HTTP/2, curl --http1.1 HTTP/1.1, on the same port; Host comes from :authority', async () => {
    const port = proxyd.httpsPort;
    const h2 = await curl(['--http2'], 'app.test', port, root, '/a?b=1');
    expect([h2.version, h2.status]).toEqual(['2', 200]);
    expect(h2.body).toBe(`GET /a?b=1 host=app.test:${port} proto=https`);
    expect(h2.head).toMatch(/^HTTP\/2 200/);
    expect(h2.head).toMatch(/\r\nstrict-transport-security: max-age=31536000/);
    const h1 = await curl(['--http1.1'], 'app.test', port, root, '/a');
    expect([h1.version, h1.status]).toEqual(['1.1', 200]);
    expect(h1.body).toBe(`GET /a host=app.test:${port} proto=https`);
    const posted = await curl(['--http2', '--data-binary', 'payload'], 'app.test', port, root, '/post');
    expect([posted.version, posted.body]).toEqual(['2', `POST /post host=app.test:${port} proto=https`]);
    const big = await curl(['--http2'], 'app.test', port, root, '/big');
    expect(big.body.length).toBe(BIG.length);
  });

  it('issue 18: an upstream sending Connection: Upgrade, Upgrade: h2c, Proxy-Connection, chunked → clean h2 response', async () => {
    const reply = await curl(['--http2'], 'app.test', proxyd.httpsPort, root, '/hop');
    expect([reply.version, reply.status, reply.body]).toEqual(['2', 200, 'chunked body']);
    expect(reply.head).not.toMatch(/\r\n(connection|upgrade|proxy-connection|keep-alive|transfer-encoding):/i);
    // nghttp (nghttp2's own client) rejects a response carrying any of them as a protocol error.
    const { stdout } = await run('nghttp', ['-v', '-n', `https://localhost:${proxyd.httpsPort}/hop`], {
      encoding: 'utf8',
      timeout: 10_000,
    });
    expect(stdout).toMatch(/:status: 200/);
    expect(stdout).not.toMatch(/RST_STREAM|GOAWAY.*error_code=(?!NO_ERROR)/);
    expect(stdout).not.toMatch(/^\s*(connection|upgrade|proxy-connection|transfer-encoding):/im);
  });

  it('h2load: 2000 requests over 10 connections × 10 streams all succeed over h2', async () => {
    const { stdout } = await run(
      'h2load',
      ['-n', '2000', '-c', '10', '-m', '10', `https://localhost:${proxyd.httpsPort}/`],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect(stdout).toMatch(/Application protocol: h2/);
    expect(stdout).toMatch(/requests: 2000 total, 2000 started, 2000 done, 2000 succeeded, 0 failed, 0 errored/);
    expect(stdout).toMatch(/status codes: 2000 2xx/);
    // Metrics count requests by protocol.
    const metrics = await adminCall(proxyd.adminPort, 'GET', '/metrics');
    const h2 = Number(/^proxyd_requests_by_protocol_total\{protocol="h2"\} (\d+)$/m.exec(metrics.body)?.[1]);
    const h1 = Number(/^proxyd_requests_by_protocol_total\{protocol="h1"\} (\d+)$/m.exec(metrics.body)?.[1]);
    expect(h2).toBeGreaterThanOrEqual(2000);
    expect(h1).toBeGreaterThanOrEqual(1);
  });
});

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>h2</title>
<style>#hero{width:800px;height:400px;background:linear-gradient(#39f,#f93)}</style></head>
<body><h1>HTTP/2 page</h1><div id="hero"></div></body></html>`;

describe('Chromium loads a page over HTTP/2 with the analytics script and beacons (built daemon)', () => {
  let proxyd: RunningProxyd;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;

  beforeAll(async () => {
    upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(PAGE) });
      res.end(PAGE);
    });
    proxyd = await startProxyd({
      autoHttps: 'on',
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN, PROXYD_ANALYTICS_CYCLE_MS: '500' },
      sites: `vitals.localhost {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
    });
    const root = path.join(proxyd.dir, 'certs', 'ca', 'local', 'root.crt');
    await waitUntil(async () => (await curlHttps('vitals.localhost', proxyd.httpsPort, root)).ok, 10_000);
  });

  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
  });

  it('navigation, script and beacons go over h2; the web vitals arrive', async () => {
    const userDataDir = await mkdtemp(path.join(tmpdir(), 'proxyd-chromium-h2-'));
    const context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: '/usr/bin/chromium',
      headless: true,
      ignoreHTTPSErrors: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking'],
      viewport: { width: 1280, height: 1000 },
    });
    try {
      const page = context.pages()[0] ?? (await context.newPage());
      await page.goto(`https://vitals.localhost:${proxyd.httpsPort}/h2page`);
      expect(await page.locator('script[data-t]').count()).toBe(1);
      await page.waitForLoadState('load');
      const protocols = await page.evaluate(() =>
        (performance.getEntries() as unknown as Array<{ name: string; nextHopProtocol?: string }>)
          .filter((e) => 'nextHopProtocol' in e)
          .map((e) => `${new URL(e.name).pathname} ${e.nextHopProtocol}`),
      );
      expect(protocols).toContain('/h2page h2');
      expect(protocols.some((p) => /^\/_proxyd\/a\.js h2$/.test(p))).toBe(true);
      await new Promise((r) => setTimeout(r, 800));
      await page.close();
      let lcp = 0;
      let pages: Array<{ path: string }> = [];
      for (let i = 0; i < 40 && lcp === 0; i++) {
        await new Promise((r) => setTimeout(r, 250));
        const res = await adminCall(proxyd.adminPort, 'GET', '/analytics/vitals.localhost');
        if (res.status !== 200) continue;
        const snapshot = JSON.parse(res.body) as { web_vitals: { lcp: { p50: number } }; top_pages: typeof pages };
        lcp = snapshot.web_vitals.lcp.p50;
        pages = snapshot.top_pages;
      }
      expect(lcp).toBeGreaterThan(0);
      expect(pages.some((p) => p.path === '/h2page')).toBe(true);
      // Every request of this daemon, the beacons included, came over HTTP/2.
      const metrics = await adminCall(proxyd.adminPort, 'GET', '/metrics');
      expect(metrics.body).toMatch(/^proxyd_requests_by_protocol_total\{protocol="h1"\} 0$/m);
      expect(metrics.body).toMatch(/^proxyd_requests_by_protocol_total\{protocol="h2"\} [1-9]\d*$/m);
    } finally {
      await context.close();
      await rm(userDataDir, { recursive: true, force: true });
    }
  });
});
