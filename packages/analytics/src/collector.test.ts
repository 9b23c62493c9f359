import type { RequestRecord } from '@proxyd/proxy-core';
import { Value } from 'typebox/value';
import { describe, expect, it } from 'vitest';
import { AnalyticsCollector, type DomainCapReached } from './collector.js';
import { MAX_KEY_LENGTH } from './domain-collector.js';
import { AnalyticsSnapshotSchema } from './snapshot.js';

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
    userAgent: undefined,
    contentType: 'text/html',
    startedAt: 0,
    ...over,
  };
}

describe('AnalyticsCollector', () => {
  it('builds a §2.4 snapshot: windows, visitors, top lists, status classes, bytes', () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const c = new AnalyticsCollector({ now: () => now, country: (ip) => (ip.startsWith('203.') ? 'AU' : null) });
    for (let i = 0; i < 12; i++) {
      for (let j = 0; j <= i; j++) c.record(rec({ path: `/p${i}`, clientIp: `198.51.100.${j}` }));
    }
    c.record(rec({ status: 404, referer: 'https://News.Example.org:8443/a?b' }));
    c.record(rec({ status: 503, referer: 'http://shop.example/self' }));
    c.record(rec({ status: 101 }));
    c.record(rec({ status: 302, bytesSent: 0 }));
    c.record(rec({ status: 0 }));
    const s = c.get('SHOP.example');
    expect(s).toBeDefined();
    if (s === undefined) return;
    expect(Value.Check(AnalyticsSnapshotSchema, s)).toBe(true);
    expect(s.page_views_1m).toBe(83);
    expect(s.page_views_60m).toBe(83);
    expect(s.unique_visitors).toBe(13);
    expect(s.top_pages).toHaveLength(10);
    expect(s.top_pages[0]).toEqual({ path: '/p11', views: 12 });
    expect(s.referrers).toEqual([{ domain: 'news.example.org', count: 1 }]);
    expect(s.countries).toEqual([{ country: 'AU', count: 5 }]);
    expect(s.status_codes).toEqual({ s1xx: 1, s2xx: 78, s3xx: 1, s4xx: 1, s5xx: 1, other: 1 });
    expect(s.bytes_sent).toBe(82 * 100);
    expect(s.timestamp).toBe('2026-01-01T00:00:00.000Z');
    expect(s.web_vitals.lcp).toEqual({ p50: 0, p75: 0, p95: 0, p99: 0 });
    now += 61_000;
    expect(c.get('shop.example')?.page_views_1m).toBe(0);
    expect(c.get('shop.example')?.page_views_60m).toBe(83);
    now += 3_600_000;
    expect(c.get('shop.example')?.page_views_60m).toBe(0);
    // Cumulative fields stay.
    expect(c.get('shop.example')?.bytes_sent).toBe(8200);
  });

  it('counts only routed requests outside /_proxyd/; lists only domains with traffic', () => {
    const c = new AnalyticsCollector();
    c.record(rec({ domain: null, host: 'unrouted.example' }));
    c.record(rec({ path: '/_proxyd/a.js' }));
    c.record(rec({ path: '/_proxyd/collect', method: 'POST' }));
    expect(c.list()).toEqual([]);
    c.record(rec({ host: 'b.example', domain: '*.example' }));
    c.record(rec({ host: 'a.example', domain: '*.example' }));
    expect(c.list().map((s) => s.domain)).toEqual(['a.example', 'b.example']);
    expect(c.get('unrouted.example')).toBeUndefined();
  });

  it('does not count a site with analytics off (not even its first request: no domain appears)', () => {
    const c = new AnalyticsCollector();
    c.record(rec({ host: 'quiet.example', domain: 'quiet.example', analytics: false }));
    c.record(rec({ host: 'quiet.example', domain: 'quiet.example', analytics: false, path: '/_proxyd/a.js' }));
    expect(c.list()).toEqual([]);
    expect(c.get('quiet.example')).toBeUndefined();
    expect(c.droppedRequests).toBe(0);
  });

  it('caps tracked domains, drops requests for new domains past the cap and reports the first drop once', () => {
    const told: DomainCapReached[] = [];
    const c = new AnalyticsCollector({ maxDomains: 3, onDomainCap: (info) => told.push(info) });
    for (let i = 0; i < 5; i++) c.record(rec({ host: `d${i}.example` }));
    c.record(rec({ host: 'd0.example' }));
    c.record(rec({ host: 'd9.example' }));
    expect(c.size).toBe(3);
    expect(c.droppedRequests).toBe(3);
    expect(told).toEqual([{ maxDomains: 3, host: 'd3.example' }]);
    expect(c.get('d0.example')?.page_views_1m).toBe(2);
    expect(c.get('d4.example')).toBeUndefined();
    // A beacon for an untracked domain past the cap is ignored (no domain is created).
    c.observe('d5.example', 'lcp', 1000);
    expect(c.size).toBe(3);
  });

  it('cuts paths and referrer hosts to 96 characters; long keys sharing a prefix count as one', () => {
    const c = new AnalyticsCollector();
    const longPath = `/${'p'.repeat(300)}`;
    const longHost = `${'r'.repeat(60)}.${'s'.repeat(60)}.${'t'.repeat(60)}.example`;
    c.record(rec({ path: `${longPath}/a`, referer: `https://${longHost}/x` }));
    c.record(rec({ path: `${longPath}/b`, referer: `https://${longHost}/y` }));
    const s = c.get('shop.example');
    expect(s?.top_pages).toEqual([{ path: longPath.slice(0, MAX_KEY_LENGTH), views: 2 }]);
    expect(s?.referrers).toEqual([{ domain: longHost.slice(0, MAX_KEY_LENGTH), count: 2 }]);
    expect(MAX_KEY_LENGTH).toBe(96);
  });

  it('ranks ties in a top list by key, so equal counts list in a stable order', () => {
    const c = new AnalyticsCollector();
    for (const path of ['/c', '/a', '/b', '/a', '/c', '/b', '/d']) c.record(rec({ path }));
    expect(c.get('shop.example')?.top_pages).toEqual([
      { path: '/a', views: 2 },
      { path: '/b', views: 2 },
      { path: '/c', views: 2 },
      { path: '/d', views: 1 },
    ]);
  });

  it('web vitals: reads never flush; the cycle flush makes them visible', () => {
    const c = new AnalyticsCollector();
    c.record(rec());
    c.observe('shop.example', 'lcp', 1200);
    c.observe('shop.example', 'cls', 0.1);
    c.observe('shop.example', 'inp', 180);
    expect(c.get('shop.example')?.web_vitals.lcp.p50).toBe(0);
    c.flush();
    const v = c.get('shop.example')?.web_vitals;
    expect(v?.lcp.p50).toBeCloseTo(1200);
    expect(v?.cls.p99).toBeCloseTo(0.1);
    expect(v?.inp.p75).toBeCloseTo(180);
  });
});
