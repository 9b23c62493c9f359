import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { emptySite, REQUEST_EVENTS_KEY, type Site } from '@proxyd/model';
import { markRequest, type RequestContext, RequestEvent } from '@proxyd/proxy-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Analytics, BEACON_ACCEPTED, BEACON_REJECTED, createAnalytics } from './analytics.js';

// This package uses proxy-core's types only: the beacon's record events are spelled here too.
describe('beacon events in the request record', () => {
  it("are proxy-core's RequestEvent bits, under the key its markRequest writes", () => {
    expect(BEACON_ACCEPTED).toBe(RequestEvent.BeaconAccepted);
    expect(BEACON_REJECTED).toBe(RequestEvent.BeaconRejected);
    const res = {} as ServerResponse;
    markRequest(res, RequestEvent.CacheHit);
    expect((res as unknown as Record<symbol, number>)[REQUEST_EVENTS_KEY]).toBe(RequestEvent.CacheHit);
  });
});

// A small in-test data plane: it calls the hooks the way proxy-core does
// (onRequest per finished request, intercept, then transformResponse on the
// upstream body). The client IP comes from `x-test-ip` (this harness only).
const ON: Site = emptySite([]);
const OFF: Site = { ...emptySite([]), analytics: false };
const PAGE = '<!doctype html><html><head><title>t</title></head><body>hi</body></html>';

let analytics: Analytics;
let upstream: http.Server;
let proxy: http.Server;
let base = '';
/** The analytics clock (fixed unless a test moves it). */
let clock = Date.now();

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

beforeAll(async () => {
  analytics = await createAnalytics({ cycleMs: 60_000, now: () => clock });
  upstream = http.createServer((req, res) => {
    if (req.url === '/gz') {
      res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' }).end(zlib.gzipSync(PAGE));
      return;
    }
    if (req.url === '/etag' || req.url === '/etag-typed') {
      // Weak comparison for If-None-Match (RFC 9110 §13.1.2), as real servers do.
      const inm = String(req.headers['if-none-match'] ?? '').replace(/W\//g, '');
      if (inm === '"v1"') {
        const typed = req.url === '/etag-typed' ? { 'content-type': 'text/html' } : {};
        res.writeHead(304, { etag: '"v1"', 'cache-control': 'max-age=60', ...typed }).end();
        return;
      }
      res.writeHead(200, {
        'content-type': 'text/html',
        'content-length': Buffer.byteLength(PAGE),
        etag: '"v1"',
        'content-md5': 'bm90IHJlYWxseSBhbiBtZDU=',
        'repr-digest': 'sha-256=:AAAA:',
        'content-digest': 'sha-256=:AAAA:',
      });
      res.end(PAGE);
      return;
    }
    if (req.url === '/json') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"a":1}');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html', 'content-length': Buffer.byteLength(PAGE) }).end(PAGE);
  });
  const upPort = await listen(upstream);
  proxy = http.createServer((req: IncomingMessage, res: ServerResponse) => {
    const host = (req.headers.host ?? '').replace(/:\d+$/, '').toLowerCase();
    const url = req.url ?? '/';
    const path = url.split('?')[0] as string;
    const clientIp = String(req.headers['x-test-ip'] ?? '127.0.0.1');
    const site = host.startsWith('off.') ? OFF : ON;
    const ctx: RequestContext = { domain: host, host, path, clientIp, secure: false, site };
    let bytes = 0;
    const write = res.write.bind(res);
    res.write = ((chunk: Buffer, ...rest: never[]) => {
      bytes += chunk.length;
      return write(chunk, ...rest);
    }) as typeof res.write;
    res.on('close', () =>
      analytics.hooks.onRequest?.({
        host,
        domain: host,
        analytics: site.analytics,
        method: req.method ?? 'GET',
        path,
        status: res.statusCode,
        bytesSent: bytes,
        durationMs: 0,
        clientIp,
        referer: req.headers.referer,
        userAgent: req.headers['user-agent'],
        contentType: undefined,
        startedAt: Date.now(),
      }),
    );
    if (analytics.hooks.intercept?.(req, res, ctx)) return;
    const up = http.request(
      { host: '127.0.0.1', port: upPort, path: url, method: req.method, headers: req.headers },
      (upRes) => {
        const headers = { ...upRes.headers };
        const t = analytics.hooks.transformResponse?.(ctx, req, upRes.statusCode ?? 502, headers) ?? null;
        res.writeHead(upRes.statusCode ?? 502, headers);
        if (t) upRes.pipe(t).pipe(res);
        else upRes.pipe(res);
      },
    );
    req.pipe(up);
  });
  base = `http://127.0.0.1:${await listen(proxy)}`;
});

afterAll(async () => {
  await analytics.close();
  await new Promise((r) => proxy.close(r));
  await new Promise((r) => upstream.close(r));
});

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text(): Promise<string>;
}

function request(method: string, path: string, headers: Record<string, string>, body?: string): Promise<Reply> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const r = http.request({ host: url.hostname, port: url.port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const buf = Buffer.concat(chunks);
        const decoded = res.headers['content-encoding'] === 'gzip' ? zlib.gunzipSync(buf) : buf;
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: async () => decoded.toString() });
      });
    });
    r.on('error', reject);
    r.end(body);
  });
}

function get(path: string, host: string, headers: Record<string, string> = {}): Promise<Reply> {
  return request('GET', path, { host, ...headers });
}

function post(host: string, body: string, ip = '198.51.100.1'): Promise<Reply> {
  return request('POST', '/_proxyd/collect', { host, 'x-test-ip': ip, 'content-type': 'text/plain' }, body);
}

async function tokenFor(host: string): Promise<string> {
  const html = await (await get('/', host)).text();
  const m = /data-t="([^"]+)"/.exec(html);
  if (!m) throw new Error(`no token in ${html}`);
  return m[1] as string;
}

describe('counting in batches', () => {
  const record = (host: string, path: string) => ({
    host,
    domain: host,
    analytics: true,
    method: 'GET',
    path,
    status: 200,
    bytesSent: 10,
    durationMs: 0,
    clientIp: '192.0.2.1',
    referer: undefined,
    userAgent: undefined,
    contentType: 'text/html',
    startedAt: 0,
  });

  it('a queued record is in the next read (list, get), and counted by the next turn of the event loop without one', async () => {
    analytics.hooks.onRequest?.(record('batch-a.test', '/one'));
    analytics.hooks.onRequest?.(record('batch-a.test', '/two'));
    // Not counted yet: the queue holds them until it fills or the event loop turns.
    expect(analytics.collector.get('batch-a.test')).toBeUndefined();
    expect(analytics.get('batch-a.test')?.page_views_1m).toBe(2);
    analytics.hooks.onRequest?.(record('batch-b.test', '/'));
    expect(analytics.list().find((s) => s.domain === 'batch-b.test')?.page_views_1m).toBe(1);
    analytics.hooks.onRequest?.(record('batch-c.test', '/'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(analytics.collector.get('batch-c.test')?.page_views_1m).toBe(1);
  });

  it('a full queue (64 records) is counted at once', () => {
    for (let i = 0; i < 64; i++) analytics.hooks.onRequest?.(record('batch-d.test', `/${i}`));
    expect(analytics.collector.get('batch-d.test')?.page_views_1m).toBe(64);
  });
});

describe('analytics hooks', () => {
  it('injects the script tag into HTML (identity and gzip) and drops Content-Length', async () => {
    const res = await get('/', 'site.test');
    expect(res.headers['content-length']).toBeUndefined();
    const html = await res.text();
    expect(html).toMatch(/<script src="\/_proxyd\/a\.js\?v=[\w-]+" data-t="\d+\.[\w-]{22}" defer><\/script><\/head>/);
    const gz = await get('/gz', 'site.test');
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(await gz.text()).toContain('defer></script></head>');
    expect(await (await get('/json', 'site.test')).text()).toBe('{"a":1}');
    expect(await (await get('/', 'off.test')).text()).toBe(PAGE);
  });

  it('serves the script long-cacheable with a content-hashed ETag and answers 304', async () => {
    const res = await get('/_proxyd/a.js', 'site.test');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    const etag = res.headers.etag as string;
    const body = await res.text();
    expect(body).toContain('/_proxyd/collect');
    expect(body.length).toBeLessThan(12_000);
    expect((await get('/_proxyd/a.js', 'site.test', { 'if-none-match': etag })).status).toBe(304);
    // analytics off: the path belongs to the upstream.
    expect(await (await get('/_proxyd/a.js', 'off.test')).text()).toBe(PAGE);
  });

  it('accepts a valid beacon (204), percentiles appear after the cycle flush', async () => {
    const t = await tokenFor('vitals.test');
    const ok = await post(
      'vitals.test',
      JSON.stringify({
        t,
        m: [
          { n: 'LCP', v: 1800 },
          { n: 'CLS', v: 0.12 },
          { n: 'INP', v: 210 },
        ],
      }),
    );
    expect(ok.status).toBe(204);
    expect(analytics.get('vitals.test')?.web_vitals.lcp.p50).toBe(0);
    analytics.flush();
    const v = analytics.get('vitals.test')?.web_vitals;
    expect(v?.lcp.p50).toBeCloseTo(1800);
    expect(v?.cls.p50).toBeCloseTo(0.12);
    expect(v?.inp.p50).toBeCloseTo(210);
    // Script and beacon requests are not page views.
    expect(analytics.get('vitals.test')?.top_pages).toEqual([{ path: '/', views: 1 }]);
  });

  it("counts a beacon's ratings per page (its `p`, else a same-host Referer) in the minute rollup", async () => {
    const t = await tokenFor('pages.test');
    const beacon = (body: object, ip: string, referer?: string) =>
      request(
        'POST',
        '/_proxyd/collect',
        { host: 'pages.test', 'x-test-ip': ip, 'content-type': 'text/plain', ...(referer ? { referer } : {}) },
        JSON.stringify({ t, ...body }),
      );
    const m = [
      { n: 'LCP', v: 2500 },
      { n: 'INP', v: 600 },
    ];
    expect((await beacon({ m, p: '/docs/intro' }, '198.51.100.20')).status).toBe(204);
    // An older script's beacon: no `p`, the page from its same-host Referer.
    expect((await beacon({ m: [{ n: 'CLS', v: 0.3 }] }, '198.51.100.21', 'http://pages.test/blog?x=1')).status).toBe(
      204,
    );
    // No `p` and another host's Referer: in the snapshot's percentiles, on no page.
    expect((await beacon({ m: [{ n: 'LCP', v: 100 }] }, '198.51.100.22', 'https://elsewhere.example/')).status).toBe(
      204,
    );
    for (const p of ['docs', 5, null, `/${'x'.repeat(3000)}`]) {
      expect((await beacon({ m, p }, '198.51.100.23')).status).toBe(400);
    }
    const rollups = analytics.drainRollups(clock + 60_000).filter((r) => r.domain === 'pages.test');
    expect(rollups).toHaveLength(1);
    const vitals = rollups[0]?.vitals ?? {};
    expect(Object.keys(vitals).sort()).toEqual(['/blog', '/docs/intro']);
    expect(vitals['/docs/intro']?.lcp).toEqual({ good: 1, needs_improvement: 0, poor: 0 });
    expect(vitals['/docs/intro']?.inp).toEqual({ good: 0, needs_improvement: 0, poor: 1 });
    expect(vitals['/blog']?.cls).toEqual({ good: 0, needs_improvement: 0, poor: 1 });
    analytics.flush();
    expect(analytics.get('pages.test')?.web_vitals.lcp.p50).toBeGreaterThan(0);
  });

  it('the browser script sends the page path it loaded on with its beacon', async () => {
    const script = await (await get('/_proxyd/a.js', 'site.test')).text();
    expect(script).toMatch(/location\.pathname/);
    expect(script).toMatch(/JSON\.stringify\(\{t(?::\w+)?,m(?::\w+)?,p:\w+\}\)/);
  });

  it('rejects a forged or foreign token (403), bad values (400), oversize (413), wrong method (405)', async () => {
    const other = await tokenFor('other.test');
    const m = [{ n: 'LCP', v: 1000 }];
    expect((await post('victim.test', JSON.stringify({ t: other, m }), '198.51.100.2')).status).toBe(403);
    expect(
      (await post('victim.test', JSON.stringify({ t: '999.AAAAAAAAAAAAAAAAAAAAAA', m }), '198.51.100.2')).status,
    ).toBe(403);
    const t = await tokenFor('victim.test');
    for (const bad of [
      [{ n: 'FID', v: 10 }],
      [{ n: 'LCP', v: -1 }],
      [{ n: 'LCP', v: 500_000 }],
      [{ n: 'CLS', v: 11 }],
      [{ n: 'INP', v: '100' }],
      [],
    ]) {
      expect((await post('victim.test', JSON.stringify({ t, m: bad }), '198.51.100.3')).status).toBe(400);
    }
    expect((await post('victim.test', 'not json', '198.51.100.4')).status).toBe(400);
    expect((await post('victim.test', JSON.stringify({ t, m, pad: 'x'.repeat(5000) }), '198.51.100.4')).status).toBe(
      413,
    );
    expect((await get('/_proxyd/collect', 'victim.test')).status).toBe(405);
    analytics.flush();
    expect(analytics.get('victim.test')?.web_vitals.lcp.p50).toBe(0);
  });

  it('accepts a token issued six days ago (a cached page, a tab left open); refuses one over seven days old', async () => {
    const t = await tokenFor('old-tab.test');
    const body = JSON.stringify({ t, m: [{ n: 'LCP', v: 900 }] });
    const saved = clock;
    try {
      clock = saved + 6 * 24 * 3_600_000;
      expect((await post('old-tab.test', body, '198.51.100.20')).status).toBe(204);
      clock = saved + 7 * 24 * 3_600_000 + 3_600_000;
      expect((await post('old-tab.test', body, '198.51.100.20')).status).toBe(403);
    } finally {
      clock = saved;
    }
  });

  it('an `analytics off` site is not counted, not injected, and its /_proxyd/ paths go to the upstream', async () => {
    expect(await (await get('/', 'off.example')).text()).toBe(PAGE);
    expect(await (await get('/_proxyd/a.js', 'off.example')).text()).toBe(PAGE);
    const beacon = await post('off.example', JSON.stringify({ t: 'x', m: [{ n: 'LCP', v: 1 }] }));
    expect(beacon.status).toBe(200);
    expect(await beacon.text()).toBe(PAGE);
    expect(analytics.get('off.example')).toBeUndefined();
    expect(analytics.list().map((s) => s.domain)).not.toContain('off.example');
  });

  it('HEAD and 304 of an injected page carry the headers of its GET 200 (weak ETag, no length, no digests)', async () => {
    const fields = ['etag', 'content-length', 'content-md5', 'content-digest', 'repr-digest', 'content-type'];
    const pick = (h: http.IncomingHttpHeaders) => Object.fromEntries(fields.map((f) => [f, h[f]]));
    const full = await get('/etag', 'hdr.test');
    expect(await full.text()).toContain('defer></script></head>');
    expect(pick(full.headers)).toEqual({
      etag: 'W/"v1"',
      'content-length': undefined,
      'content-md5': undefined,
      'content-digest': undefined,
      'repr-digest': undefined,
      'content-type': 'text/html',
    });
    const head = await request('HEAD', '/etag', { host: 'hdr.test' });
    expect(head.status).toBe(200);
    expect(pick(head.headers)).toEqual(pick(full.headers));
    // The browser revalidates with the weak tag it was given; the upstream answers 304 with its strong one.
    const revalidated = await get('/etag', 'hdr.test', { 'if-none-match': 'W/"v1"' });
    expect(revalidated.status).toBe(304);
    expect(revalidated.headers.etag).toBe('W/"v1"');
    const typed = await get('/etag-typed', 'hdr.test', { 'if-none-match': '"v1"' });
    expect(typed.status).toBe(304);
    expect(typed.headers.etag).toBe('W/"v1"');
    // A strong tag the client got elsewhere (no Content-Type on the 304) stays strong.
    expect((await get('/etag', 'hdr.test', { 'if-none-match': '"v1"' })).headers.etag).toBe('"v1"');
    // analytics off: the upstream's headers, untouched.
    const off = await request('HEAD', '/etag', { host: 'off.example' });
    expect(off.headers.etag).toBe('"v1"');
    expect(off.headers['content-length']).toBe(String(Buffer.byteLength(PAGE)));
    expect(off.headers['repr-digest']).toBe('sha-256=:AAAA:');
  });

  it('rate limits beacons per client IP (429)', async () => {
    const t = await tokenFor('rl.test');
    const body = JSON.stringify({ t, m: [{ n: 'INP', v: 100 }] });
    clock = Math.ceil(clock / 1000) * 1000 + 1000;
    const statuses: number[] = [];
    for (let i = 0; i < 15; i++) statuses.push((await post('rl.test', body, '198.51.100.9')).status);
    expect(statuses).toEqual([...Array(10).fill(204), ...Array(5).fill(429)]);
    // Another IP is not limited; the next second the first IP may post again.
    expect((await post('rl.test', body, '198.51.100.10')).status).toBe(204);
    clock += 1000;
    expect((await post('rl.test', body, '198.51.100.9')).status).toBe(204);
  });

  it('counts countries from the embedded database; private IPs are not counted', async () => {
    await get('/', 'geo.test', { 'x-test-ip': '8.8.8.8' });
    await get('/', 'geo.test', { 'x-test-ip': '81.2.69.142' });
    await get('/', 'geo.test', { 'x-test-ip': '2a00:1450:4001::1' });
    await get('/', 'geo.test', { 'x-test-ip': '10.1.2.3' });
    await get('/', 'geo.test', { 'x-test-ip': '127.0.0.1' });
    const s = analytics.get('geo.test');
    expect(s?.countries.map((c) => c.country).sort()).toEqual(['DE', 'GB', 'US']);
    expect(s?.unique_visitors).toBe(5);
  });
});

describe('rewriteBody (a small identity page, whole)', () => {
  const ctxFor = (site: Site, path = '/'): RequestContext => ({
    domain: 'a.test',
    host: 'a.test',
    path,
    clientIp: '127.0.0.1',
    secure: false,
    site,
  });
  const req = (method: string) => ({ method, headers: {} }) as IncomingMessage;

  it('inserts the tag before </head> outside scripts, weakens the ETag and leaves Content-Length to the data plane', () => {
    const headers = { 'content-type': 'text/html; charset=utf-8', 'content-length': '99', etag: '"v1"' };
    const rewrite = analytics.hooks.rewriteBody?.(ctxFor(ON), req('GET'), 200, headers) ?? null;
    expect(rewrite).not.toBeNull();
    // Content-Length is left alone: the data plane replaces it with the rewritten body's length.
    expect(headers).toEqual({ 'content-type': 'text/html; charset=utf-8', 'content-length': '99', etag: 'W/"v1"' });
    const page = '<html><head><script>var s="</head>";</script></head><body>x</body></html>';
    const out = rewrite?.(Buffer.from(page)).toString() ?? '';
    const at = out.indexOf('<script src="/_proxyd/a.js');
    expect(at).toBe(page.lastIndexOf('</head>'));
    expect(out.slice(at)).toMatch(/^<script src="\/_proxyd\/a\.js\?v=[^"]+" data-t="[^"]+" defer><\/script><\/head>/);
    const plain = Buffer.from('<p>no head or body tags</p>');
    expect(rewrite?.(plain)).toBe(plain);
  });

  it('leaves encoded bodies, HEAD, non-HTML, reserved paths and analytics-off sites to the stream path or alone', () => {
    const html = () => ({ 'content-type': 'text/html' });
    expect(
      analytics.hooks.rewriteBody?.(ctxFor(ON), req('GET'), 200, { ...html(), 'content-encoding': 'gzip' }),
    ).toBeNull();
    expect(analytics.hooks.rewriteBody?.(ctxFor(ON), req('HEAD'), 200, html())).toBeNull();
    expect(analytics.hooks.rewriteBody?.(ctxFor(ON), req('GET'), 200, { 'content-type': 'text/plain' })).toBeNull();
    expect(analytics.hooks.rewriteBody?.(ctxFor(ON, '/_proxyd/x'), req('GET'), 200, html())).toBeNull();
    expect(analytics.hooks.rewriteBody?.(ctxFor(OFF), req('GET'), 200, html())).toBeNull();
  });
});
