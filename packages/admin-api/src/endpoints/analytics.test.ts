import { AnalyticsCollector } from '@proxyd/analytics';
import { AnalyticsSnapshotSchema } from '@proxyd/analytics/schema';
import { Value } from 'typebox/value';
import { describe, expect, it } from 'vitest';
import { AUTH, memoryAnalytics, sampleSnapshot, testApp } from '../memory-ports.test-helpers.js';
import type { AnalyticsSnapshot } from '../ports.js';
import { AnalyticsSnapshot as AdminSnapshotSchema } from '../schemas.js';

const get = (url: string) => ({ method: 'GET' as const, url, headers: AUTH });

describe('GET /analytics', () => {
  it('200 [] when there are no analytics, and when analytics are off', async () => {
    for (const analytics of [memoryAnalytics([]), undefined]) {
      const { app } = testApp(analytics ? { analytics } : {});
      const res = await app.inject(get('/analytics'));
      expect(res.statusCode).toBe(200);
      expect(res.headers['access-control-allow-origin']).toBe('null');
      expect(res.json()).toEqual([]);
      await app.close();
    }
  });

  it('200 with every snapshot, sorted by domain, all §2.4 fields', async () => {
    const { app } = testApp({ analytics: memoryAnalytics([sampleSnapshot('b.example'), sampleSnapshot('a.example')]) });
    const res = await app.inject(get('/analytics'));
    expect(res.json()).toEqual([sampleSnapshot('a.example'), sampleSnapshot('b.example')]);
    await app.close();
  });

  it('awaits an analytics port that answers later (workers gathered by the control plane)', async () => {
    const later = <T>(value: T) => new Promise<T>((r) => setTimeout(() => r(value), 20));
    const snapshots = [sampleSnapshot('b.example'), sampleSnapshot('a.example')];
    const { app } = testApp({
      analytics: {
        list: () => later(snapshots),
        get: (domain) => later(snapshots.find((s) => s.domain === domain)),
      },
    });
    expect((await app.inject(get('/analytics'))).json()).toEqual([
      sampleSnapshot('a.example'),
      sampleSnapshot('b.example'),
    ]);
    expect((await app.inject(get('/analytics/A.example'))).json()).toEqual(sampleSnapshot('a.example'));
    expect((await app.inject(get('/analytics/c.example'))).statusCode).toBe(404);
    await app.close();
  });

  it('500 serialize error when a snapshot is malformed', async () => {
    const broken = { ...sampleSnapshot('x.example'), web_vitals: undefined } as unknown as AnalyticsSnapshot;
    const { app } = testApp({ analytics: memoryAnalytics([broken]) });
    const res = await app.inject(get('/analytics'));
    expect(res.statusCode).toBe(500);
    expect((res.json() as { error: string }).error).toMatch(/^serialize error: /);
    expect(res.headers['access-control-allow-origin']).toBe('null');
    await app.close();
  });

  it('401 without token, 429 over the limit', async () => {
    const { app } = testApp({ rateLimit: { max: 1, windowMs: 60_000 } });
    expect((await app.inject({ method: 'GET', url: '/analytics' })).statusCode).toBe(401);
    expect((await app.inject(get('/analytics'))).statusCode).toBe(200);
    expect((await app.inject(get('/analytics'))).statusCode).toBe(429);
    await app.close();
  });
});

describe('GET /analytics/{domain}', () => {
  it('200 with the snapshot, domain matched case-insensitively', async () => {
    const { app } = testApp({ analytics: memoryAnalytics([sampleSnapshot('shop.example')]) });
    const res = await app.inject(get('/analytics/Shop.EXAMPLE'));
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(sampleSnapshot('shop.example'));
    await app.close();
  });

  it('404 no analytics for domain (envelope)', async () => {
    const { app } = testApp({ analytics: memoryAnalytics([sampleSnapshot('shop.example')]) });
    const res = await app.inject(get('/analytics/quiet.example'));
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: 'no analytics for domain: "quiet.example"' });
    await app.close();
  });

  it('400 for an empty segment or invalid characters', async () => {
    const { app } = testApp({ analytics: memoryAnalytics([]) });
    for (const segment of ['', 'a%20b.example', 'a%2Fb', '%3Cscript%3E', 'caf%C3%A9.example', 'x'.repeat(254)]) {
      const res = await app.inject(get(`/analytics/${segment}`));
      expect(res.statusCode, segment).toBe(400);
      expect((res.json() as { error: string }).error).toMatch(/^invalid domain: /);
    }
    await app.close();
  });

  it('issue 20: a segment with U+212A KELVIN SIGN is 400 invalid domain, not the snapshot of kelvin.test', async () => {
    const { app } = testApp({ analytics: memoryAnalytics([sampleSnapshot('kelvin.test')]) });
    const res = await app.inject(get(`/analytics/${encodeURIComponent('\u212aelvin.test')}`));
    expect(res.statusCode).toBe(400);
    expect((res.json() as { error: string }).error).toMatch(/^invalid domain: /);
    expect((await app.inject(get('/analytics/Kelvin.TEST'))).statusCode).toBe(200);
    await app.close();
  });

  it('401 without token, 429 over the limit', async () => {
    const { app } = testApp({ rateLimit: { max: 1, windowMs: 60_000 } });
    expect((await app.inject({ method: 'GET', url: '/analytics/a.example' })).statusCode).toBe(401);
    expect((await app.inject(get('/analytics/a.example'))).statusCode).toBe(404);
    expect((await app.inject(get('/analytics/a.example'))).statusCode).toBe(429);
    await app.close();
  });
});

// The analytics package defines the §2.4 snapshot it produces; the admin API keeps its own copy for
// serialization and OpenAPI (analytics is a devDependency, for this check only).

/** The schema as plain JSON without descriptions (and without the given keys at the given JSON paths). */
function shape(schema: unknown, drop: string[] = [], at = ''): unknown {
  if (Array.isArray(schema)) return schema.map((s, i) => shape(s, drop, `${at}/${i}`));
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'description' || drop.includes(`${at}/${k}`)) continue;
    out[k] = shape(v, drop, `${at}/${k}`);
  }
  return out;
}

describe('the admin copy of the §2.4 snapshot schema matches the analytics package', () => {
  // The only intended differences: the analytics schema also pins the country code and the timestamp format.
  const STRICTER = ['/properties/countries/items/properties/country/pattern', '/properties/timestamp/pattern'];

  it('is structurally equal, descriptions aside', () => {
    const analytics = JSON.parse(JSON.stringify(AnalyticsSnapshotSchema));
    for (const path of STRICTER) {
      const keys = path.split('/').slice(1);
      let node = analytics;
      for (const k of keys.slice(0, -1)) node = node[k];
      expect(node[keys.at(-1) as string], path).toBeTypeOf('string');
    }
    expect(shape(JSON.parse(JSON.stringify(AdminSnapshotSchema)))).toEqual(shape(analytics, STRICTER));
  });

  it('accepts and rejects the same snapshots, including one the analytics collector produced', () => {
    const collector = new AnalyticsCollector({ country: () => 'NL' });
    for (let i = 0; i < 30; i++) {
      collector.record({
        host: 'shop.example',
        domain: 'shop.example',
        analytics: true,
        method: 'GET',
        path: `/p${i % 12}`,
        status: 200 + (i % 4) * 100,
        bytesSent: 100,
        durationMs: 1,
        clientIp: `198.51.100.${i}`,
        referer: `https://ref${i % 11}.example/`,
        userAgent: undefined,
        contentType: 'text/html',
        startedAt: 0,
      });
    }
    collector.observe('shop.example', 'lcp', 1500);
    collector.flush();
    const real = collector.get('shop.example') as AnalyticsSnapshot;
    const base = sampleSnapshot('shop.example');
    const valid: unknown[] = [base, real];
    const invalid: unknown[] = [
      ...Object.keys(base).map((k) => {
        const { [k as keyof AnalyticsSnapshot]: _gone, ...rest } = base;
        return rest;
      }),
      { ...base, extra: 1 },
      { ...base, page_views_1m: -1 },
      { ...base, unique_visitors: 1.5 },
      { ...base, bytes_sent: '1234' },
      { ...base, top_pages: Array.from({ length: 11 }, (_, i) => ({ path: `/${i}`, views: 1 })) },
      { ...base, top_pages: [{ path: '/', views: 1, error: 0 }] },
      { ...base, referrers: [{ domain: 'a.example' }] },
      { ...base, countries: [{ country: 'DE', count: -1 }] },
      { ...base, status_codes: { ...base.status_codes, s6xx: 0 } },
      { ...base, web_vitals: { lcp: base.web_vitals.lcp, cls: base.web_vitals.cls } },
      { ...base, web_vitals: { ...base.web_vitals, inp: { p50: '1', p75: 2, p95: 3, p99: 4 } } },
      { ...base, domain: 42 },
    ];
    for (const snapshot of valid) {
      expect(Value.Check(AdminSnapshotSchema, snapshot)).toBe(true);
      expect(Value.Check(AnalyticsSnapshotSchema, snapshot)).toBe(true);
    }
    for (const snapshot of invalid) {
      const admin = Value.Check(AdminSnapshotSchema, snapshot);
      expect(admin, JSON.stringify(snapshot)).toBe(false);
      expect(Value.Check(AnalyticsSnapshotSchema, snapshot), JSON.stringify(snapshot)).toBe(admin);
    }
  });
});
