import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { MinuteRollup } from '@proxyd/analytics';
import { afterAll, describe, expect, it } from 'vitest';
import { openHistory } from './open.js';
import { DAY, HOUR, rollup, T0 } from './rollups.test-helpers.js';

const dir = mkdtempSync(path.join(tmpdir(), 'history-bound-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The files on disk: the database and its WAL (checkpointed after every write). */
function onDisk(file: string): number {
  let bytes = 0;
  for (const suffix of ['', '-wal']) {
    try {
      bytes += statSync(file + suffix).size;
    } catch {}
  }
  return bytes;
}

/**
 * A stretch of a site's traffic as one rollup (its minute is the stretch's
 * start): 100 of 2,000 pages (a different hundred each hour, so that the
 * long tail keeps growing), 40 referrers, 30 countries, UTM tags, vitals of
 * 20 pages, 50 visitors.
 */
function trafficOf(domain: string, start: number, n: number): MinuteRollup {
  const pick = (prefix: string, pool: number, count: number) =>
    Object.fromEntries(Array.from({ length: count }, (_, i) => [`${prefix}${(n * 7 + i) % pool}`, 1 + (i % 13)]));
  return rollup(domain, start, {
    pageViews: 500,
    extraRequests: 1500,
    visitors: Array.from({ length: 50 }, (_, i) => `${domain}-${n}-${i}`),
    breakdowns: {
      pages: pick('/articles/some-long-slug-', 2000, 100),
      entry_pages: pick('/articles/some-long-slug-', 2000, 60),
      referrers: pick('referrer-', 300, 40),
      countries: pick('C', 200, 30),
      browsers: pick('Browser ', 12, 8),
      os: pick('OS ', 10, 6),
      devices: pick('device-', 3, 3),
      utm_source: pick('newsletter-', 50, 5),
      utm_medium: pick('medium-', 10, 3),
      utm_campaign: pick('campaign-', 80, 5),
    },
    lcpGood: pick('/articles/some-long-slug-', 2000, 20),
  });
}

describe('the size bound', () => {
  // The timeout: 365 writes to SQLite on disk, each checkpointed (~20 s alone, more on a loaded machine).
  it('a simulated year of traffic of 3 sites stays under max_size; the latest data is all there', async () => {
    const file = path.join(dir, 'history.db');
    const maxBytes = 8_000_000;
    let now = T0;
    const store = await openHistory({ file, maxBytes, now: () => now });
    let largest = 0;
    let trimmed = 0;
    const domains = ['a.test', 'b.test', 'c.test'];
    for (let day = 0; day < 365; day++) {
      // Fast: a day is one rollup per site, as if each day were one minute; the last three days are
      // hourly (24 rollups a site), for a last day read by the hour. Every day is one write.
      const rollups: MinuteRollup[] = [];
      const stretches = day < 362 ? [0] : Array.from({ length: 24 }, (_, h) => h * HOUR);
      for (const offset of stretches) {
        for (const d of domains) rollups.push(trafficOf(d, T0 + day * DAY + offset, day * 24 + offset / HOUR));
      }
      now = T0 + (day + 1) * DAY;
      const result = store.write(rollups);
      if (result.trimmed) trimmed++;
      largest = Math.max(largest, onDisk(file));
      expect(onDisk(file), `day ${day}`).toBeLessThanOrEqual(maxBytes);
    }
    expect(trimmed).toBeGreaterThan(0);
    expect(largest).toBeGreaterThan(maxBytes * 0.75);
    // The last day is whole: counts, visitors, breakdowns.
    const lastDay = { from: T0 + 364 * DAY, to: T0 + 365 * DAY };
    const totals = store.totals('a.test', lastDay);
    expect(totals.page_views).toBe(24 * 500);
    expect(totals.requests).toBe(24 * 2000);
    expect(Math.abs(totals.visitors - 24 * 50) / (24 * 50)).toBeLessThan(0.1);
    expect(store.breakdown('b.test', 'referrers', lastDay, 5)).toHaveLength(5);
    expect(store.timeseries('c.test', lastDay, 'hour').every((p) => p.page_views === 500)).toBe(true);
    expect(store.domains()).toEqual(domains);
    // What went is the oldest: the first days are gone, the last days are whole.
    const kept = store.timeseries('a.test', { from: T0, to: T0 + 365 * DAY }, 'day').filter((p) => p.page_views > 0);
    expect(kept[0]?.t).toBeGreaterThan(T0 + 200 * DAY);
    expect(kept.length).toBe((T0 + 365 * DAY - (kept[0]?.t as number)) / DAY);
    expect(store.totals('a.test', { from: T0 + 345 * DAY, to: T0 + 365 * DAY }).page_views).toBe(
      17 * 500 + 3 * 24 * 500,
    );
    store.close();
  }, 120_000);
});
