import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN } from './support/admin.js';
import { freePort, type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

// Issue 22: the dashboard in a real browser. The built daemon serves a site
// in front of a real upstream; headless Chromium visits its pages from three
// "countries" (X-Forwarded-For through trusted_proxies), so the injected
// script sends real Web Vitals beacons; then Chromium opens the dashboard,
// signed in with basic_auth, and the numbers in its DOM are those visits.
// Screenshots at desktop and phone widths go to tests-e2e/artifacts/.

const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
// bcrypt (cost 4) of "correct horse".
const HASH = '$2b$04$E3wV7lSkEKVhqBXk6fNceOPrI2aFyCXocr3NF.ID3jJr7bTBwxTTi';
const CREDENTIALS = { username: 'alice', password: 'correct horse' };
const AUTH = `Basic ${Buffer.from('alice:correct horse').toString('base64')}`;
const ARTIFACTS = fileURLToPath(new URL('./artifacts/', import.meta.url));
const SITE = 'shop.localhost';

/** A page with a large hero (LCP), a late shift (CLS), a slow button (INP) and a link on. */
const page = (title: string) => `<!doctype html>
<html><head><meta charset="utf-8"><title>${title}</title>
<style>body{margin:0;font:16px sans-serif} #hero{width:800px;max-width:100%;height:300px;background:linear-gradient(#39f,#f93)} #btn{font-size:24px;padding:20px}</style>
</head>
<body>
<div id="spacer"></div>
<h1>${title}</h1>
<div id="hero"></div>
<p><button id="btn">buy</button> <span id="out"></span> <a id="next" href="${title === '/' ? '/pricing' : '/'}">next</a></p>
<script>
  setTimeout(() => { document.getElementById('spacer').style.height = '120px'; }, 300);
  document.getElementById('btn').addEventListener('click', () => {
    const end = performance.now() + 150; while (performance.now() < end) {}
    document.getElementById('out').textContent = 'thanks';
  });
</script>
</body></html>`;

// Browsers as people run them: headless Chromium's own User-Agent says HeadlessChrome, which is a bot.
const DESKTOP = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 Safari/537.36';
const PHONE =
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/140.0.0.0 Mobile Safari/537.36';

/**
 * Three visitors: where they come from (X-Forwarded-For, trusted), with what,
 * from which referrer, where they land, and whether they follow the page's
 * link (a same-site Referer: a page view, not an entry).
 */
const VISITS = [
  { ip: '81.2.69.160', ua: DESKTOP, referer: 'https://news.example/', land: '/', follow: true },
  {
    ip: '133.242.0.1',
    ua: PHONE,
    referer: undefined,
    land: '/blog/launch?utm_source=newsletter&utm_medium=email&utm_campaign=launch',
    follow: true,
  },
  { ip: '24.48.0.1', ua: DESKTOP, referer: 'https://search.example/?q=proxy', land: '/pricing', follow: false },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Realtime {
  snapshot: {
    page_views_60m: number;
    top_pages: { path: string; views: number }[];
    countries: { country: string; count: number }[];
    web_vitals: Record<'lcp' | 'cls' | 'inp', { p75: number }>;
  } | null;
}

describe('the dashboard in Chromium (built daemon, real traffic and beacons)', () => {
  let proxyd: RunningProxyd;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let dashboardPort: number;
  let browser: Browser;

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    upstream = await startUpstream((req, res) => {
      const url = req.url ?? '/';
      if (url === '/favicon.ico') {
        res.writeHead(404).end();
        return;
      }
      const body = Buffer.from(page(url));
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': body.length });
      res.end(body);
    });
    dashboardPort = await freePort();
    proxyd = await startProxyd({
      // The history flushes every 500 ms (a test hook): what a flush writes is still whole minutes.
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN, PROXYD_ANALYTICS_CYCLE_MS: '500', PROXYD_HISTORY_FLUSH_MS: '500' },
      global: `\ttrusted_proxies 127.0.0.1/8\n\tdashboard :${dashboardPort} {\n\t\tbasic_auth alice ${HASH}\n\t}\n`,
      sites: `http://${SITE} {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
    });
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: FLAGS });
  });

  afterAll(async () => {
    await browser?.close();
    await proxyd?.stop();
    await upstream?.close();
  });

  it('refuses the dashboard without credentials; the listener is on loopback and answers nothing else', async () => {
    const res = await request(dashboardPort);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Basic realm="proxyd dashboard"');
    expect(res.headers['content-security-policy']).toMatch(/^default-src 'self';/);
    expect(proxyd.output()).toContain(`dashboard listening on http://127.0.0.1:${dashboardPort}/`);
    const wrong = await request(dashboardPort, {
      headers: { authorization: `Basic ${Buffer.from('alice:guess').toString('base64')}` },
    });
    expect(wrong.status).toBe(401);
  });

  it('Chromium visits the site: real page views and real Web Vitals beacons', async () => {
    for (const visit of VISITS) {
      const visitor = await browser.newContext({
        userAgent: visit.ua,
        viewport: visit.ua === PHONE ? { width: 412, height: 915 } : { width: 1280, height: 800 },
        extraHTTPHeaders: { 'x-forwarded-for': visit.ip },
      });
      const tab = await visitor.newPage();
      await tab.goto(`http://${SITE}:${proxyd.httpPort}${visit.land}`, visit.referer ? { referer: visit.referer } : {});
      expect(await tab.locator('script[data-t]').count()).toBe(1);
      await sleep(800);
      await tab.click('#btn');
      await sleep(1000);
      if (visit.follow) {
        // Leaving the page sends its beacons (web-vitals reports LCP, CLS and INP on pagehide).
        const from = new URL(tab.url()).pathname;
        await Promise.all([tab.waitForURL((url) => url.pathname !== from), tab.click('#next')]);
        await sleep(800);
        await tab.click('#btn');
        await sleep(1000);
      }
      await visitor.close();
    }
    // A crawler: a request, counted apart as a bot, never a page view.
    const bot = await request(proxyd.httpPort, {
      headers: { host: SITE, 'user-agent': 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)' },
    });
    expect(bot.status).toBe(200);
    // The live snapshot has them once the 500 ms aggregation cycle flushed the vitals.
    let live: Realtime | undefined;
    for (let i = 0; i < 40; i++) {
      const res = await request(dashboardPort, { path: `/api/realtime/${SITE}`, headers: { authorization: AUTH } });
      live = JSON.parse(res.body) as Realtime;
      const v = live.snapshot?.web_vitals;
      if (v && v.lcp.p75 > 0 && v.cls.p75 > 0 && v.inp.p75 > 0) break;
      await sleep(250);
    }
    const snapshot = live?.snapshot;
    expect(snapshot?.web_vitals.lcp.p75).toBeGreaterThan(0);
    expect(snapshot?.web_vitals.inp.p75).toBeGreaterThan(0);
    expect(snapshot?.countries.map((c) => c.country).sort()).toEqual(['CA', 'GB', 'JP']);
  });

  it('the real-time view shows them: counts, pages, countries and rated vitals, at 1280 and 390 px', async () => {
    const dashboard = await browser.newContext({
      httpCredentials: CREDENTIALS,
      viewport: { width: 1280, height: 800 },
    });
    const tab = await dashboard.newPage();
    const { requests, problems } = watch(tab);
    try {
      // The page's timers on a clock the test moves: the 10-second refresh without waiting 10 s.
      await tab.clock.install();
      await tab.goto(`http://127.0.0.1:${dashboardPort}/#site=${SITE}&range=realtime`);
      await tab.locator('[data-panel="pages"] li[data-key="/pricing"]').waitFor();
      expect(await tab.locator('#site').inputValue()).toBe(SITE);
      expect(await kpi(tab, 'page_views_60m')).toBeGreaterThanOrEqual(5);
      expect(await rowValue(tab, 'pages', '/pricing')).toBe(2);
      // The snapshot counts requests: the crawler's too.
      expect(await rowValue(tab, 'pages', '/')).toBe(3);
      // Countries count requests (a page, and the favicon Chromium asks for).
      for (const country of ['GB', 'JP', 'CA']) expect(await rowValue(tab, 'countries', country)).toBeGreaterThan(0);
      expect(await tab.locator('[data-panel="countries"] li[data-key="GB"] .key').textContent()).toContain(
        'United Kingdom',
      );
      for (const metric of ['lcp', 'cls', 'inp']) {
        const rating = await tab
          .locator(`#vitals tr[data-metric="${metric}"] [data-rating]`)
          .getAttribute('data-rating');
        expect(['good', 'needs-improvement', 'poor'], metric).toContain(rating);
      }
      await expect.poll(() => tab.locator('#status').textContent()).toMatch(/^Live · updated /);
      // Another request (a crawler's: not a page view, so the history test's counts stay), then the refresh shows it.
      const before = await kpi(tab, 'page_views_60m');
      const calls = () => requests.filter((u) => u.includes('/api/realtime/')).length;
      const loaded = calls();
      await request(proxyd.httpPort, { path: '/pricing', headers: { host: SITE, 'user-agent': 'Googlebot/2.1' } });
      await tab.clock.fastForward(10_000);
      await expect.poll(calls).toBeGreaterThan(loaded);
      await expect.poll(() => kpi(tab, 'page_views_60m')).toBe(before + 1);
      await tab.screenshot({ path: path.join(ARTIFACTS, 'dashboard-realtime-desktop.png'), fullPage: true });
      await tab.setViewportSize({ width: 390, height: 844 });
      await sleep(300);
      // Nothing wider than the phone's screen but the table that scrolls inside its own box.
      expect(await tab.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
      const chart = await tab.locator('#chart canvas, #chart .chart-empty').first().boundingBox();
      expect(chart?.width).toBeGreaterThan(300);
      expect(chart?.width).toBeLessThanOrEqual(390);
      await tab.screenshot({ path: path.join(ARTIFACTS, 'dashboard-realtime-phone.png'), fullPage: true });
      expect(problems).toEqual([]);
      const origin = `http://127.0.0.1:${dashboardPort}/`;
      expect(requests.filter((u) => !u.startsWith(origin) && !u.startsWith('data:'))).toEqual([]);
    } finally {
      await dashboard.close();
    }
  });

  it('after the history flush, the 24-hour view shows the visits: totals, chart, every list, vitals per page', async () => {
    // A minute is written once it is complete: wait for the minute of the visits to end and be flushed.
    let totals: { page_views: number; visitors: number } = { page_views: 0, visitors: 0 };
    for (let i = 0; i < 200 && totals.page_views < 5; i++) {
      await sleep(500);
      const res = await request(dashboardPort, { path: `/api/stats/${SITE}/totals`, headers: { authorization: AUTH } });
      if (res.status === 200) totals = JSON.parse(res.body) as { page_views: number; visitors: number };
    }
    expect(totals.page_views).toBe(5);
    // Visitors are a HyperLogLog estimate (1,024 registers, the visitor hash salted at random each day):
    // three visitors read 3, or 2 in the ~0.3 % of runs where two of them land in one register.
    expect([2, 3]).toContain(totals.visitors);
    const dashboard = await browser.newContext({
      httpCredentials: CREDENTIALS,
      viewport: { width: 1280, height: 800 },
    });
    const tab = await dashboard.newPage();
    const { requests, problems } = watch(tab);
    try {
      await tab.goto(`http://127.0.0.1:${dashboardPort}/#site=${SITE}&range=24h`);
      await tab.locator('[data-panel="entry_pages"] li').first().waitFor();
      expect(await tab.locator('#range').inputValue()).toBe('24h');
      // The dashboard shows the history's figure.
      expect(await kpi(tab, 'visitors')).toBe(totals.visitors);
      expect(await kpi(tab, 'page_views')).toBe(5);
      // Every request: the pages, the script and beacons, the favicons, the crawler.
      expect(await kpi(tab, 'requests')).toBeGreaterThan(5);
      // The crawler, and Chromium's own favicon fetches, which carry its HeadlessChrome User-Agent.
      const bots = (await tab.locator('[data-kpi="requests"] .sub').textContent()) ?? '';
      expect(bots).toMatch(/^\d+ by bots$/);
      expect(Number.parseInt(bots, 10)).toBeGreaterThanOrEqual(1);
      // The chart's numbers (its table for screen readers): 24 hours, the page views in them.
      const cells = await tab.locator('[data-chart-table] td[data-series="page_views"]').allTextContents();
      expect(cells).toHaveLength(24);
      expect(cells.reduce((n, c) => n + Number(c), 0)).toBe(5);
      expect(await tab.locator('#chart canvas').count()).toBeGreaterThan(0);
      const lists: [string, Record<string, number>][] = [
        ['pages', { '/': 2, '/pricing': 2, '/blog/launch': 1 }],
        ['entry_pages', { '/': 1, '/pricing': 1, '/blog/launch': 1 }],
        ['referrers', { 'news.example': 1, 'search.example': 1 }],
        ['countries', { GB: 2, JP: 2, CA: 1 }],
        ['devices', { Chrome: 5 }],
        ['utm', { newsletter: 1 }],
      ];
      for (const [panel, rows] of lists) {
        for (const [key, value] of Object.entries(rows))
          expect(await rowValue(tab, panel, key), `${panel} ${key}`).toBe(value);
      }
      await tab.locator('[data-panel="devices"] [data-tab="devices"]').click();
      expect(await rowValue(tab, 'devices', 'desktop')).toBe(3);
      expect(await rowValue(tab, 'devices', 'mobile')).toBe(2);
      await tab.locator('[data-panel="devices"] [data-tab="os"]').click();
      expect(await rowValue(tab, 'devices', 'Android')).toBe(2);
      await tab.locator('[data-panel="utm"] [data-tab="utm_medium"]').click();
      expect(await rowValue(tab, 'utm', 'email')).toBe(1);
      await tab.locator('[data-panel="devices"] [data-tab="browsers"]').click();
      await tab.locator('[data-panel="utm"] [data-tab="utm_source"]').click();
      // Web Vitals per page: each page the visitors read, each metric rated from its samples.
      for (const path of ['/', '/pricing', '/blog/launch']) {
        const row = tab.locator(`#vitals tr[data-path="${path}"]`);
        expect(await row.count(), path).toBe(1);
        const rating = await row.locator('td[data-metric="lcp"] [data-rating]').getAttribute('data-rating');
        expect(['good', 'needs-improvement', 'poor'], path).toContain(rating);
        expect(await row.locator('td[data-metric="lcp"] .muted').textContent(), path).toMatch(/^[1-9]\d* samples?$/);
      }
      await tab.screenshot({ path: path.join(ARTIFACTS, 'dashboard-desktop.png'), fullPage: true });
      await tab.setViewportSize({ width: 390, height: 844 });
      await sleep(300);
      expect(await tab.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
      const chart = await tab.locator('#chart canvas').first().boundingBox();
      expect(chart?.width).toBeGreaterThan(300);
      expect(chart?.width).toBeLessThanOrEqual(390);
      await tab.screenshot({ path: path.join(ARTIFACTS, 'dashboard-phone.png'), fullPage: true });
      // The range picker's custom from–to (local dates, both days included): yesterday to today holds the visits.
      await tab.setViewportSize({ width: 1280, height: 800 });
      await tab.selectOption('#range', 'custom');
      const day = (offset: number) => {
        const d = new Date(Date.now() + offset * 86_400_000);
        return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
      };
      await tab.fill('#from', day(-1));
      await tab.fill('#to', day(0));
      await tab.click('#custom button[type="submit"]');
      await expect
        .poll(() => tab.evaluate<string>('location.hash'))
        .toBe(`#site=${SITE}&range=custom&from=${day(-1)}&to=${day(0)}`);
      // Yesterday's midnight to now, by hour: more buckets than the 24 of the view before.
      const customCells = tab.locator('[data-chart-table] td[data-series="page_views"]');
      await expect.poll(() => customCells.count()).toBeGreaterThan(24);
      expect(await tab.locator('#chart-note').textContent()).toBe('per hour');
      const custom = await customCells.allTextContents();
      expect(custom.reduce((n, c) => n + Number(c), 0)).toBe(5);
      expect(await kpi(tab, 'page_views')).toBe(5);
      expect(problems).toEqual([]);
      const origin = `http://127.0.0.1:${dashboardPort}/`;
      expect(requests.filter((u) => !u.startsWith(origin) && !u.startsWith('data:'))).toEqual([]);
    } finally {
      await dashboard.close();
    }
  }, 150_000);
});

/** Every request the page makes, and every console error or CSP violation. */
function watch(tab: Page): { requests: string[]; problems: string[] } {
  const requests: string[] = [];
  const problems: string[] = [];
  tab.on('request', (r) => requests.push(r.url()));
  tab.on('console', (m) => {
    if (m.type() === 'error') problems.push(m.text());
  });
  tab.on('pageerror', (e) => problems.push(e.message));
  return { requests, problems };
}

/** A headline number of the dashboard, as a number (thousands separators dropped). */
async function kpi(tab: Page, name: string): Promise<number> {
  return Number(((await tab.locator(`[data-kpi="${name}"] .value`).textContent()) ?? '').replace(/[^\d.]/g, ''));
}

/** The number a ranked list shows for a key. */
async function rowValue(tab: Page, panel: string, key: string): Promise<number> {
  return Number(
    ((await tab.locator(`[data-panel="${panel}"] li[data-key="${key}"] .num`).textContent()) ?? '').replace(
      /[^\d.]/g,
      '',
    ),
  );
}
