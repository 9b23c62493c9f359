import { describe, expect, it } from 'vitest';
import { AUTH, memoryAnalytics, sampleSnapshot, testApp } from '../memory-ports.test-helpers.js';
import type { AnalyticsSnapshot } from '../ports.js';

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

  it('401 without token, 429 over the limit', async () => {
    const { app } = testApp({ rateLimit: { max: 1, windowMs: 60_000 } });
    expect((await app.inject({ method: 'GET', url: '/analytics/a.example' })).statusCode).toBe(401);
    expect((await app.inject(get('/analytics/a.example'))).statusCode).toBe(404);
    expect((await app.inject(get('/analytics/a.example'))).statusCode).toBe(429);
    await app.close();
  });
});
