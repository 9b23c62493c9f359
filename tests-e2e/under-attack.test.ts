import type http from 'node:http';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

const UPSTREAM_PAGE = '<!doctype html><title>upstream</title><h1 id="hello">hello from upstream</h1>';

describe('under_attack in a real browser (Chromium)', () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let proxyd: RunningProxyd;
  let browser: Browser;
  /** Paths the upstream served, in order. */
  const hits: string[] = [];

  beforeAll(async () => {
    upstream = await startUpstream((req: http.IncomingMessage, res: http.ServerResponse) => {
      hits.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(UPSTREAM_PAGE);
    });
    // localhost is a secure context (WebCrypto); app.test over plain HTTP is not (the pure-JS SHA-256).
    const block = (host: string, difficulty: number) =>
      `http://${host} {\n\treverse_proxy 127.0.0.1:${upstream.port}\n\tunder_attack {\n\t\tdifficulty ${difficulty}\n\t}\n}\n`;
    proxyd = await startProxyd({ sites: `${block('localhost', 16)}\n${block('app.test', 16)}` });
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--host-resolver-rules=MAP app.test 127.0.0.1',
      ],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await proxyd?.stop();
    await upstream?.close();
  });

  for (const host of ['localhost', 'app.test']) {
    it(`shows the challenge first, then the browser solves it and lands on the upstream page (${host})`, async () => {
      const context = await browser.newContext();
      try {
        const page = await context.newPage();
        const seen: string[] = [];
        page.on('response', (r) => {
          const path = new URL(r.url()).pathname;
          // Only the page and the challenge (not the favicon, nor analytics' script and beacon).
          if (path.startsWith('/welcome') || path === '/_proxyd/challenge') {
            seen.push(`${r.status()} ${r.request().method()} ${path}`);
          }
        });
        const url = `http://${host}:${proxyd.httpPort}/welcome-${host}?from=e2e`;
        const first = await page.goto(url, { waitUntil: 'commit' });
        expect(first?.status()).toBe(503);
        expect(first?.headers()['cache-control']).toBe('no-store');
        await page.waitForSelector('#hello', { timeout: 60_000 });
        expect(page.url()).toBe(url);
        // The challenge page, the solution accepted, then the real page from the upstream.
        expect(seen).toEqual([`503 GET /welcome-${host}`, '204 POST /_proxyd/challenge', `200 GET /welcome-${host}`]);
        // The browser asked for the page twice; the upstream saw it once, after the solution.
        expect(hits.filter((h) => h === `/welcome-${host}?from=e2e`)).toHaveLength(1);
        // localhost solved with WebCrypto; app.test (not a secure context) with the pure-JS SHA-256.
        expect(await page.evaluate('isSecureContext')).toBe(host === 'localhost');
        const cookies = await context.cookies();
        const clearance = cookies.find((c) => c.name === '__proxyd_clearance');
        expect(clearance?.httpOnly).toBe(true);
        expect(clearance?.sameSite).toBe('Lax');
        // The cleared browser keeps reaching the upstream without a new challenge.
        const again = await page.goto(`http://${host}:${proxyd.httpPort}/second-${host}`);
        expect(again?.status()).toBe(200);
        expect(hits).toContain(`/second-${host}`);
      } finally {
        await context.close();
      }
    });
  }

  it('a plain client without the cookie never reaches the upstream', async () => {
    const before = hits.length;
    for (let i = 0; i < 20; i++) {
      const r = await request(proxyd.httpPort, { path: `/plain-${i}`, headers: { host: 'app.test' } });
      expect(r.status).toBe(503);
      expect(r.body).toContain('/_proxyd/challenge');
    }
    const forged = await request(proxyd.httpPort, {
      path: '/plain-forged',
      headers: { host: 'app.test', cookie: '__proxyd_clearance=99999999999.AAAA' },
    });
    expect(forged.status).toBe(503);
    const badSolution = await request(proxyd.httpPort, {
      path: '/_proxyd/challenge',
      method: 'POST',
      headers: { host: 'app.test', 'content-type': 'application/x-www-form-urlencoded' },
      body: 'token=a.b.c.d&counter=1',
    });
    expect(badSolution.status).toBe(403);
    // None of these requests reached the upstream. (Only their paths are checked: a favicon request
    // of the browser tests above can still land after their context closed.)
    const sent = (h: string) => h.startsWith('/plain') || h.startsWith('/_proxyd/');
    expect(hits.slice(before).filter(sent)).toEqual([]);
  });
});
