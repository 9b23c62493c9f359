import type { RequestRecord } from '@proxyd/proxy-core';
import { describe, expect, it } from 'vitest';
import { AnalyticsCollector } from './collector.js';
import { HyperLogLog } from './hyperloglog.js';
import { MINUTE_MS, ROLLUP_BACKLOG_MINUTES } from './minute-rollups.js';
import {
  type MinuteRollup,
  mergeRollups,
  ROLLUP_HLL_PRECISION,
  ROLLUP_MAX_KEYS,
  ROLLUP_MAX_VITAL_PATHS,
  ROLLUP_OTHER_KEY,
} from './rollup.js';
import { UA } from './user-agents.test-helpers.js';

const T0 = Date.UTC(2026, 5, 1, 12, 0); // a minute's start

function rec(over: Partial<RequestRecord> = {}): RequestRecord {
  return {
    host: 'shop.example',
    domain: 'shop.example',
    analytics: true,
    method: 'GET',
    path: '/',
    status: 200,
    bytesSent: 100,
    durationMs: 1,
    clientIp: '203.0.113.7',
    referer: undefined,
    userAgent: UA.chromeWindows,
    contentType: 'text/html; charset=utf-8',
    startedAt: 0,
    ...over,
  };
}

/** A collector on a clock the test moves, countries by the first octet. */
function setup(options: { maxDomains?: number } = {}) {
  const clock = { now: T0 + 5_000 };
  const c = new AnalyticsCollector({
    now: () => clock.now,
    country: (ip) => (ip.startsWith('203.') ? 'AU' : ip.startsWith('198.') ? 'FR' : null),
    ...options,
  });
  c.setVisitorSalt(Buffer.alloc(32, 7));
  return { c, clock };
}

/** The one rollup drained at the end of the first minute. */
function only(c: AnalyticsCollector): MinuteRollup {
  const rollups = c.drainRollups(T0 + MINUTE_MS);
  expect(rollups).toHaveLength(1);
  return rollups[0] as MinuteRollup;
}

const visitors = (r: MinuteRollup) => HyperLogLog.merge([r.visitors], ROLLUP_HLL_PRECISION).estimate();
const entries = (o: Record<string, number>) => Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1));

describe('minute rollups: what a request adds', () => {
  it('counts every request, bot and status class, and only human HTML page views as views', () => {
    const { c } = setup();
    c.record(rec()); // a page view
    c.record(rec({ path: '/app.css', contentType: 'text/css' }));
    c.record(rec({ path: '/logo.png', contentType: 'image/png', bytesSent: 5000 }));
    c.record(rec({ userAgent: UA.googlebot }));
    c.record(rec({ userAgent: UA.curl, status: 404 }));
    c.record(rec({ userAgent: undefined }));
    c.record(rec({ method: 'HEAD', bytesSent: 0 }));
    c.record(rec({ status: 304, contentType: undefined, bytesSent: 0 }));
    c.record(rec({ method: 'POST', path: '/_proxyd/collect', status: 204, contentType: undefined, bytesSent: 0 }));
    c.record(rec({ path: '/_proxyd/a.js', contentType: 'text/javascript', bytesSent: 9000 }));
    c.record(rec({ status: 500 }));
    const r = only(c);
    expect(r.domain).toBe('shop.example');
    expect(r.minute).toBe(T0);
    expect(r.requests).toBe(11);
    expect(r.page_views).toBe(1);
    expect(r.bot_requests).toBe(3);
    expect(r.bytes_sent).toBe(100 * 6 + 5000 + 9000);
    expect(r.status).toEqual({ s1xx: 0, s2xx: 8, s3xx: 1, s4xx: 1, s5xx: 1, other: 0 });
    expect(entries(r.breakdowns.pages)).toEqual([['/', 1]]);
  });

  it("keeps the snapshot's meaning: page_views_1m counts assets and bots, never /_proxyd/", () => {
    const { c } = setup();
    c.record(rec());
    c.record(rec({ path: '/app.css', contentType: 'text/css' }));
    c.record(rec({ userAgent: UA.googlebot }));
    c.record(rec({ path: '/_proxyd/a.js', contentType: 'text/javascript' }));
    expect(c.get('shop.example')?.page_views_1m).toBe(3);
    expect(only(c).page_views).toBe(1);
  });

  it('entry pages: views with no Referer or another host’s; referrers: the other hosts', () => {
    const { c } = setup();
    c.record(rec({ path: '/landing' }));
    c.record(rec({ path: '/landing', referer: 'https://news.example.org/story' }));
    c.record(rec({ path: '/blog', referer: 'https://www.google.com/' }));
    c.record(rec({ path: '/pricing', referer: 'https://shop.example/landing' }));
    c.record(rec({ path: '/pricing', referer: 'https://SHOP.example:443/blog' }));
    const r = only(c);
    expect(r.page_views).toBe(5);
    expect(entries(r.breakdowns.pages)).toEqual([
      ['/blog', 1],
      ['/landing', 2],
      ['/pricing', 2],
    ]);
    expect(entries(r.breakdowns.entry_pages)).toEqual([
      ['/blog', 1],
      ['/landing', 2],
    ]);
    expect(entries(r.breakdowns.referrers)).toEqual([
      ['news.example.org', 1],
      ['www.google.com', 1],
    ]);
  });

  it('browsers, operating systems, device classes and countries of page views', () => {
    const { c } = setup();
    c.record(rec({ userAgent: UA.chromeWindows, clientIp: '203.0.113.1' }));
    c.record(rec({ userAgent: UA.safariIphone, clientIp: '198.51.100.1' }));
    c.record(rec({ userAgent: UA.safariIpad, clientIp: '10.0.0.1' }));
    c.record(rec({ userAgent: UA.firefoxLinux, clientIp: '203.0.113.2' }));
    c.record(rec({ userAgent: UA.googlebot, clientIp: '198.51.100.9' })); // a bot: in none
    c.record(
      rec({ userAgent: UA.chromeAndroid, clientIp: '198.51.100.2', path: '/x.js', contentType: 'text/javascript' }),
    );
    const r = only(c);
    expect(entries(r.breakdowns.browsers)).toEqual([
      ['Chrome', 1],
      ['Firefox', 1],
      ['Safari', 2],
    ]);
    expect(entries(r.breakdowns.os)).toEqual([
      ['Linux', 1],
      ['Windows', 1],
      ['iOS', 2],
    ]);
    expect(entries(r.breakdowns.devices)).toEqual([
      ['desktop', 2],
      ['mobile', 1],
      ['tablet', 1],
    ]);
    // Private IPs have no country and are not counted, as in the snapshot.
    expect(entries(r.breakdowns.countries)).toEqual([
      ['AU', 2],
      ['FR', 1],
    ]);
  });

  it('UTM source, medium and campaign of page views from the query string', () => {
    const { c } = setup();
    const q = 'utm_source=newsletter&utm_medium=email&utm_campaign=spring+sale';
    c.record(rec({ path: '/landing', query: q }));
    c.record(rec({ path: '/landing', query: `${q}&ref=2` }));
    c.record(rec({ path: '/other', query: 'utm_source=twitter' }));
    c.record(rec({ path: '/img.png', query: q, contentType: 'image/png' })); // not a view
    c.record(rec({ path: '/landing', query: q, userAgent: UA.bingbot })); // a bot
    const r = only(c);
    expect(entries(r.breakdowns.utm_source)).toEqual([
      ['newsletter', 2],
      ['twitter', 1],
    ]);
    expect(entries(r.breakdowns.utm_medium)).toEqual([['email', 2]]);
    expect(entries(r.breakdowns.utm_campaign)).toEqual([['spring sale', 2]]);
  });

  it('visitors: distinct (IP, user agent) pairs of page views, salted', () => {
    const { c } = setup();
    for (let i = 0; i < 3; i++) c.record(rec({ clientIp: '203.0.113.1' }));
    c.record(rec({ clientIp: '203.0.113.1', userAgent: UA.firefoxLinux }));
    c.record(rec({ clientIp: '203.0.113.2' }));
    c.record(rec({ clientIp: '203.0.113.3', path: '/a.css', contentType: 'text/css' })); // not a view
    c.record(rec({ clientIp: '203.0.113.4', userAgent: UA.googlebot })); // a bot
    const r = only(c);
    expect(visitors(r)).toBe(3);
    // The registers depend on the salt: the same traffic under another salt sets other registers.
    const other = setup().c;
    other.setVisitorSalt(Buffer.alloc(32, 8));
    for (let i = 0; i < 3; i++) other.record(rec({ clientIp: '203.0.113.1' }));
    other.record(rec({ clientIp: '203.0.113.1', userAgent: UA.firefoxLinux }));
    other.record(rec({ clientIp: '203.0.113.2' }));
    expect([...only(other).visitors]).not.toEqual([...r.visitors]);
    // No client IP in the drained data.
    expect(JSON.stringify(r, (_k, v) => (v instanceof Uint8Array ? [...v] : v))).not.toContain('203.0.113');
  });

  it('refuses a salt shorter than 8 bytes', () => {
    const { c } = setup();
    expect(() => c.setVisitorSalt(Buffer.alloc(4))).toThrow(/visitor salt of 4 bytes/);
  });

  it('two workers with the same salt merge to what one collector counts', () => {
    const one = setup().c;
    const workers = [setup().c, setup().c];
    const traffic = Array.from({ length: 200 }, (_, i) =>
      rec({
        clientIp: `198.51.100.${i % 37}`,
        path: `/p${i % 7}`,
        userAgent: i % 3 === 0 ? UA.safariIphone : UA.chromeWindows,
        referer: i % 5 === 0 ? 'https://news.example.org/' : undefined,
        query: i % 4 === 0 ? 'utm_source=feed' : undefined,
      }),
    );
    traffic.forEach((r, i) => {
      one.record(r);
      (workers[i % 2] as AnalyticsCollector).record(r);
    });
    const single = only(one);
    const merged = workers.map(only).reduce((into, from) => mergeRollups(into, from));
    expect(merged.page_views).toBe(200);
    expect([...merged.visitors]).toEqual([...single.visitors]);
    expect({ ...merged, visitors: null }).toEqual({ ...single, visitors: null });
  });
});

describe('minute rollups: vitals per page', () => {
  it('counts good / needs-improvement / poor at the exact §2.4 thresholds', () => {
    const { c } = setup();
    c.record(rec());
    for (const v of [2500, 2500.5, 4000, 4001]) c.observe('shop.example', 'lcp', v, '/');
    for (const v of [0, 0.1, 0.25, 0.26]) c.observe('shop.example', 'cls', v, '/');
    for (const v of [200, 201, 500, 501, 60_000]) c.observe('shop.example', 'inp', v, '/checkout');
    c.observe('shop.example', 'lcp', 100, null); // no page: in the snapshot's digests only
    const r = only(c);
    expect(r.vitals['/']).toEqual({
      lcp: { good: 1, needs_improvement: 2, poor: 1 },
      cls: { good: 2, needs_improvement: 1, poor: 1 },
      inp: { good: 0, needs_improvement: 0, poor: 0 },
    });
    expect(r.vitals['/checkout']?.inp).toEqual({ good: 1, needs_improvement: 2, poor: 2 });
    expect(Object.keys(r.vitals).sort()).toEqual(['/', '/checkout']);
    c.flush();
    expect(c.get('shop.example')?.web_vitals.lcp.p50).toBeGreaterThan(0);
  });

  it('keeps at most 100 pages with vitals per minute; the rest under (other)', () => {
    const { c } = setup();
    c.record(rec());
    for (let i = 0; i < 150; i++) c.observe('shop.example', 'lcp', 5000, `/p${i}`);
    const r = only(c);
    expect(Object.keys(r.vitals)).toHaveLength(ROLLUP_MAX_VITAL_PATHS + 1);
    expect(r.vitals[ROLLUP_OTHER_KEY]?.lcp.poor).toBe(50);
    expect(r.vitals['/p0']?.lcp.poor).toBe(1);
  });
});

describe('minute rollups: draining', () => {
  it('returns complete minutes only, forgets them, and keeps the current one', () => {
    const { c, clock } = setup();
    c.record(rec());
    expect(c.drainRollups(T0 + MINUTE_MS - 1)).toEqual([]);
    clock.now = T0 + MINUTE_MS + 1;
    c.record(rec({ path: '/next' }));
    const first = c.drainRollups(T0 + MINUTE_MS + 2);
    expect(first.map((r) => [r.minute, r.page_views])).toEqual([[T0, 1]]);
    expect(c.drainRollups(T0 + MINUTE_MS + 3)).toEqual([]);
    const second = c.drainRollups(T0 + 2 * MINUTE_MS);
    expect(second.map((r) => [r.minute, entries(r.breakdowns.pages)])).toEqual([[T0 + MINUTE_MS, [['/next', 1]]]]);
    expect(c.drainRollups(T0 + 10 * MINUTE_MS)).toEqual([]);
  });

  it('returns every domain, each minute once, minutes with no traffic absent', () => {
    const { c, clock } = setup();
    c.record(rec({ host: 'a.example', domain: 'a.example' }));
    clock.now = T0 + 3 * MINUTE_MS + 10;
    c.record(rec({ host: 'a.example', domain: 'a.example' }));
    c.record(rec({ host: 'b.example', domain: 'b.example' }));
    const drained = c.drainRollups(T0 + 5 * MINUTE_MS);
    expect(drained.map((r) => [r.domain, (r.minute - T0) / MINUTE_MS]).sort()).toEqual([
      ['a.example', 0],
      ['a.example', 3],
      ['b.example', 3],
    ]);
  });

  it('a clock stepping back after a drain counts into the next minute, never a drained one', () => {
    const { c, clock } = setup();
    c.record(rec());
    expect(c.drainRollups(T0 + MINUTE_MS)).toHaveLength(1);
    clock.now = T0 + 30_000; // stepped back into the drained minute
    c.record(rec());
    const after = c.drainRollups(T0 + 2 * MINUTE_MS);
    expect(after.map((r) => [r.minute, r.requests])).toEqual([[T0 + MINUTE_MS, 1]]);
  });

  it(`keeps at most ${ROLLUP_BACKLOG_MINUTES} finished minutes when nobody drains`, () => {
    const { c, clock } = setup();
    for (let m = 0; m < 30; m++) {
      clock.now = T0 + m * MINUTE_MS;
      c.record(rec());
    }
    const drained = c.drainRollups(T0 + 30 * MINUTE_MS);
    expect(drained.map((r) => (r.minute - T0) / MINUTE_MS)).toEqual(
      Array.from({ length: ROLLUP_BACKLOG_MINUTES + 1 }, (_, i) => 30 - ROLLUP_BACKLOG_MINUTES - 1 + i),
    );
  });

  it('rollups off: nothing is kept, the snapshot still counts', () => {
    const c = new AnalyticsCollector({ rollups: false, now: () => T0 });
    c.record(rec());
    c.observe('shop.example', 'lcp', 1000, '/');
    expect(c.drainRollups(T0 + 10 * MINUTE_MS)).toEqual([]);
    expect(c.get('shop.example')?.page_views_1m).toBe(1);
  });
});

describe('minute rollups: bounds', () => {
  it('at most 100 keys per dimension per minute, the rest under (other); long keys cut to 96', () => {
    const { c } = setup();
    for (let i = 0; i < 250; i++) c.record(rec({ path: `/p${i}`, referer: `https://r${i}.example/` }));
    const long = `/${'x'.repeat(300)}`;
    const r0 = only(c);
    expect(Object.keys(r0.breakdowns.pages)).toHaveLength(ROLLUP_MAX_KEYS + 1);
    expect(r0.breakdowns.pages[ROLLUP_OTHER_KEY]).toBe(150);
    expect(r0.breakdowns.referrers[ROLLUP_OTHER_KEY]).toBe(150);
    expect(r0.page_views).toBe(250);
    const { c: c2 } = setup();
    c2.record(rec({ path: `${long}a` }));
    c2.record(rec({ path: `${long}b` }));
    expect(entries(only(c2).breakdowns.pages)).toEqual([[long.slice(0, 96), 2]]);
  });

  it('domains: only tracked domains (maxDomains) have rollups; /_proxyd/ requests create none', () => {
    const { c } = setup({ maxDomains: 2 });
    c.record(rec({ host: 'new.example', domain: 'new.example', path: '/_proxyd/collect', method: 'POST' }));
    for (let i = 0; i < 4; i++) c.record(rec({ host: `d${i}.example`, domain: `d${i}.example` }));
    const domains = c.drainRollups(T0 + MINUTE_MS).map((r) => r.domain);
    expect(domains.sort()).toEqual(['d0.example', 'd1.example']);
    expect(c.droppedRequests).toBe(2);
  });
});
