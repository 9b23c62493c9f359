import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import {
  API_CACHE_CONTROL,
  ASSET_CACHE_CONTROL,
  CONTENT_SECURITY_POLICY,
  createDashboardApp,
  type DashboardAuthFailure,
  PAGE_CACHE_CONTROL,
  SECURITY_HEADERS,
} from './app.js';
import type { DashboardAssets } from './assets.js';
import { liveSnapshot, MemoryHistory, memorySource } from './memory-source.test-helpers.js';
import type { DashboardSource } from './source.js';

// bcrypt (cost 4) of "correct horse": the Proxyfile's `dashboard { basic_auth alice <hash> }`.
const HASH = '$2b$04$E3wV7lSkEKVhqBXk6fNceOPrI2aFyCXocr3NF.ID3jJr7bTBwxTTi';
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const ALICE = basic('alice', 'correct horse');
const NOW = Date.UTC(2026, 10, 25, 12, 30, 20);
const MINUTE = 60_000;
const HOUR = 3_600_000;

const asset = (body: string, contentType: string, etag: string) => ({ body: Buffer.from(body), contentType, etag });
const ASSETS: DashboardAssets = {
  index: asset('<!doctype html><title>d</title>', 'text/html; charset=utf-8', '"page1"'),
  files: new Map([
    ['/assets/dashboard.js', asset('console.log(1)', 'text/javascript; charset=utf-8', '"js1"')],
    ['/assets/dashboard.css', asset('body{}', 'text/css; charset=utf-8', '"css1"')],
  ]),
};

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

function start(source: DashboardSource, failures: DashboardAuthFailure[] = []): FastifyInstance {
  app = createDashboardApp({
    source,
    basicAuth: { realm: 'proxyd dashboard', users: [{ user: 'alice', hash: HASH }] },
    assets: ASSETS,
    now: () => NOW,
    onAuthFailure: (event) => failures.push(event),
  });
  return app;
}

/** example.com: two hours of traffic before NOW; live.example: live only. */
function fixture(): { history: MemoryHistory; source: DashboardSource } {
  const history = new MemoryHistory().add(
    {
      domain: 'example.com',
      minute: NOW - 2 * HOUR,
      page_views: 10,
      visitors: 4,
      requests: 30,
      bot_requests: 3,
      bytes_sent: 5000,
      s2xx: 28,
      s4xx: 2,
      breakdowns: { pages: { '/': 7, '/about': 3 }, countries: { DE: 6, FR: 4 } },
      vitals: { '/': { lcp: { good: 3, needs_improvement: 1, poor: 0 } } },
    },
    { domain: 'example.com', minute: floorMinute(NOW) - 5 * MINUTE, page_views: 2, visitors: 1, requests: 2 },
  );
  return {
    history,
    source: memorySource(history, [
      liveSnapshot('example.com', { page_views_1m: 2, top_pages: [{ path: '/', views: 9 }] }),
      liveSnapshot('live.example', { page_views_1m: 1 }),
    ]),
  };
}

const floorMinute = (t: number) => Math.floor(t / MINUTE) * MINUTE;

async function get(url: string, headers: Record<string, string> = { authorization: ALICE }) {
  return await (app as FastifyInstance).inject({ method: 'GET', url, headers });
}

describe('dashboard app: credentials', () => {
  it('answers 401 with the realm and the security headers without credentials, and logs no credential', async () => {
    const failures: DashboardAuthFailure[] = [];
    start(fixture().source, failures);
    for (const url of ['/', '/assets/dashboard.js', '/api/stats', '/nowhere']) {
      const res = await get(url, {});
      expect(res.statusCode, url).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Basic realm="proxyd dashboard"');
      expect(res.json()).toEqual({ error: 'unauthorized' });
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(res.headers[name], name).toBe(value);
    }
    expect(failures.map((f) => f.reason)).toEqual(['missing', 'missing', 'missing', 'missing']);
  });

  it('refuses a wrong password and an unknown user (bcrypt verdict), accepts the right one', async () => {
    const failures: DashboardAuthFailure[] = [];
    start(fixture().source, failures);
    expect((await get('/api/stats', { authorization: basic('alice', 'wrong') })).statusCode).toBe(401);
    expect((await get('/api/stats', { authorization: basic('mallory', 'correct horse') })).statusCode).toBe(401);
    expect((await get('/api/stats', { authorization: 'Bearer abc' })).statusCode).toBe(401);
    expect(failures.map((f) => f.reason)).toEqual(['wrong', 'wrong', 'missing']);
    expect((await get('/api/stats')).statusCode).toBe(200);
  });

  it('serves GET and HEAD only: another method is 405 with Allow, after the credentials', async () => {
    start(fixture().source);
    const post = await (app as FastifyInstance).inject({
      method: 'POST',
      url: '/api/stats',
      headers: { authorization: ALICE },
    });
    expect(post.statusCode).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
    expect(post.json()).toEqual({ error: 'method not allowed' });
    const anonymous = await (app as FastifyInstance).inject({ method: 'DELETE', url: '/api/stats' });
    expect(anonymous.statusCode).toBe(401);
    const head = await (app as FastifyInstance).inject({ method: 'HEAD', url: '/', headers: { authorization: ALICE } });
    expect(head.statusCode).toBe(200);
    expect(head.body).toBe('');
  });
});

describe('dashboard app: the page and its assets', () => {
  it('serves the page revalidated (no-cache, ETag, 304) with a strict same-origin CSP', async () => {
    start(fixture().source);
    const page = await get('/');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['cache-control']).toBe(PAGE_CACHE_CONTROL);
    expect(page.headers.etag).toBe('"page1"');
    expect(page.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
    expect(CONTENT_SECURITY_POLICY).toMatch(/^default-src 'self';/);
    expect(CONTENT_SECURITY_POLICY).not.toMatch(/unsafe|https?:|\*/);
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.body).toBe('<!doctype html><title>d</title>');
    const again = await get('/', { authorization: ALICE, 'if-none-match': '"page1"' });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
  });

  it('serves /assets/* for a year (immutable: the page names them by content hash); another name is 404', async () => {
    start(fixture().source);
    const js = await get('/assets/dashboard.js?v=abc');
    expect(js.statusCode).toBe(200);
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(js.headers['cache-control']).toBe(ASSET_CACHE_CONTROL);
    expect(js.body).toBe('console.log(1)');
    const css = await get('/assets/dashboard.css');
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    const missing = await get('/assets/other.js');
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ error: 'not found' });
    expect((await get('/index.html')).statusCode).toBe(404);
  });
});

describe('dashboard app: JSON routes (the stats API shapes)', () => {
  it('GET /api/stats lists stored and live domains, sorted, and says history is on', async () => {
    start(fixture().source);
    const res = await get('/api/stats');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['cache-control']).toBe(API_CACHE_CONTROL);
    expect(res.json()).toEqual({ domains: ['example.com', 'live.example'], history: true });
  });

  it('timeseries: the last 24 hours by hour by default, every bucket, from the store', async () => {
    const { history, source } = fixture();
    start(source);
    const res = await get('/api/stats/Example.COM/timeseries');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ domain: 'example.com', from: NOW - 24 * HOUR, to: NOW, interval: 'hour' });
    expect(body.points).toHaveLength(25);
    const views = body.points.reduce((n: number, p: { page_views: number }) => n + p.page_views, 0);
    expect(views).toBe(12);
    expect(history.calls.at(-1)).toMatchObject({ method: 'timeseries', interval: 'hour' });
  });

  it('timeseries takes from/to as RFC 3339 or epoch ms and an interval; refuses bad ones with 400', async () => {
    start(fixture().source);
    const from = new Date(NOW - 10 * MINUTE).toISOString();
    const ok = await get(`/api/stats/example.com/timeseries?from=${from}&to=${NOW}&interval=minute`);
    expect(ok.statusCode).toBe(200);
    expect(ok.json().points).toHaveLength(11);
    expect(ok.json().points.find((p: { t: number }) => p.t === floorMinute(NOW) - 5 * MINUTE).page_views).toBe(2);
    // The stats-query rule and its wording are the model's, the admin API's GET /stats… rule.
    const cases: [string, string][] = [
      ['interval=week', 'invalid interval: "week": minute, hour or day'],
      ['interval=hour&interval=day', 'invalid interval: interval is given 2 times'],
      ['from=yesterday', 'invalid range: from "yesterday" is neither RFC 3339 nor epoch ms'],
      [`from=${NOW}&to=${NOW - 1}`, `invalid range: from (${NOW}) must be before to (${NOW - 1})`],
      [`from=0&to=${3661 * 24 * HOUR}`, 'invalid range: longer than 3,660 days'],
      [
        `from=${NOW - 90 * 24 * HOUR}&to=${NOW}&interval=hour`,
        'invalid interval: 2161 hour buckets in the range, at most 1500: ask for a coarser interval or a shorter range',
      ],
    ];
    for (const [query, error] of cases) {
      const res = await get(`/api/stats/example.com/timeseries?${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(res.json(), query).toEqual({ error });
      expect(res.headers['cache-control']).toBe(API_CACHE_CONTROL);
    }
  });

  it('totals, breakdown and vitals answer the contract shapes', async () => {
    start(fixture().source);
    const totals = await get('/api/stats/example.com/totals');
    expect(totals.json()).toEqual({
      domain: 'example.com',
      from: NOW - 24 * HOUR,
      to: NOW,
      page_views: 12,
      visitors: 5,
      requests: 32,
      bot_requests: 3,
      bytes_sent: 5000,
      status: { s1xx: 0, s2xx: 28, s3xx: 0, s4xx: 2, s5xx: 0, other: 0 },
    });
    const pages = await get('/api/stats/example.com/breakdown/pages?limit=1');
    expect(pages.json()).toEqual({ domain: 'example.com', dimension: 'pages', items: [{ key: '/', page_views: 7 }] });
    const countries = await get('/api/stats/example.com/breakdown/countries');
    expect(countries.json().items).toEqual([
      { key: 'DE', page_views: 6 },
      { key: 'FR', page_views: 4 },
    ]);
    const vitals = await get('/api/stats/example.com/vitals');
    expect(vitals.json()).toEqual({
      domain: 'example.com',
      pages: [
        {
          path: '/',
          lcp: { good: 3, needs_improvement: 1, poor: 0, samples: 4 },
          cls: { good: 0, needs_improvement: 0, poor: 0, samples: 0 },
          inp: { good: 0, needs_improvement: 0, poor: 0, samples: 0 },
        },
      ],
    });
    expect((await get('/api/stats/example.com/breakdown/shoe_sizes')).json()).toEqual({
      error:
        'invalid dimension: "shoe_sizes": pages, entry_pages, referrers, countries, browsers, os, devices, utm_source, utm_medium, utm_campaign',
    });
    expect((await get('/api/stats/example.com/breakdown/pages?limit=0')).json()).toEqual({
      error: 'invalid limit: "0": a whole number 1 to 100',
    });
  });

  it('a domain neither stored nor live is 404; a live one not yet flushed reads as zeros', async () => {
    start(fixture().source);
    const unknown = await get('/api/stats/nobody.example/totals');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ error: 'unknown domain: "nobody.example"' });
    expect((await get('/api/realtime/nobody.example')).statusCode).toBe(404);
    const live = await get('/api/stats/live.example/timeseries?interval=hour');
    expect(live.statusCode).toBe(200);
    expect(live.json().points).toHaveLength(25);
    expect(live.json().points.every((p: { page_views: number }) => p.page_views === 0)).toBe(true);
    expect((await get('/api/stats/live.example/breakdown/pages')).json().items).toEqual([]);
    const bad = await get('/api/stats/bad%20host/totals');
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ error: 'invalid domain: "bad host" contains invalid characters' });
  });

  it('the real-time view: the live snapshot and the last 30 minutes by minute', async () => {
    start(fixture().source);
    const res = await get('/api/realtime/example.com');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.domain).toBe('example.com');
    expect(body.now).toBe(NOW);
    expect(body.snapshot).toMatchObject({
      domain: 'example.com',
      page_views_1m: 2,
      top_pages: [{ path: '/', views: 9 }],
    });
    expect(body.minutes).toHaveLength(30);
    expect(body.minutes.at(-1).t).toBe(floorMinute(NOW) - MINUTE);
    expect(body.minutes.reduce((n: number, p: { page_views: number }) => n + p.page_views, 0)).toBe(2);
  });

  it('history off: the range routes answer 501 `history not enabled`, the real-time view still works', async () => {
    start(memorySource(null, [liveSnapshot('example.com', { page_views_1m: 3 })]));
    expect((await get('/api/stats')).json()).toEqual({ domains: ['example.com'], history: false });
    for (const route of ['timeseries', 'totals', 'breakdown/pages', 'vitals']) {
      const res = await get(`/api/stats/example.com/${route}`);
      expect(res.statusCode, route).toBe(501);
      expect(res.json()).toEqual({ error: 'history not enabled' });
    }
    const live = await get('/api/realtime/example.com');
    expect(live.statusCode).toBe(200);
    expect(live.json()).toMatchObject({ snapshot: { page_views_1m: 3 }, minutes: null });
  });

  it('a failing store is a 500 with the envelope, not a crash', async () => {
    const { source } = fixture();
    const history = source.history as MemoryHistory;
    history.totals = () => {
      throw new Error('disk I/O error');
    };
    start(source);
    const res = await get('/api/stats/example.com/totals');
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ error: 'internal error' });
  });
});
