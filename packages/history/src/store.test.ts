import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HistoryError } from './errors.js';
import { openHistory } from './open.js';
import { DAY, HOUR, MINUTE, rollup, T0 } from './rollups.test-helpers.js';
import { HOUR_KEYS } from './store.js';

const dirs: string[] = [];
function tempFile(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'history-'));
  dirs.push(dir);
  return path.join(dir, 'history.db');
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const visitors = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

describe('HistoryStore: write and read', () => {
  it('a flush is its minute rows, added into the hour and day rows; a time series has every bucket, zeros included', async () => {
    let now = T0 + 10 * HOUR + 5 * MINUTE;
    const store = await openHistory({ file: tempFile(), now: () => now });
    const m1 = T0 + 10 * HOUR + 2 * MINUTE;
    store.write([rollup('a.test', m1, { pageViews: 5, extraRequests: 7, bots: 2, visitors: visitors('x', 3) })]);
    store.write([rollup('a.test', m1 + MINUTE, { pageViews: 4, visitors: visitors('x', 2) })]);
    now += HOUR;
    store.write([rollup('a.test', T0 + 11 * HOUR, { pageViews: 1, visitors: ['y'] })]);

    const minutes = store.timeseries('a.test', { from: m1 - MINUTE, to: m1 + 3 * MINUTE }, 'minute');
    expect(minutes.map((p) => [p.t - m1, p.page_views, p.requests, p.bot_requests, p.visitors])).toEqual([
      [-MINUTE, 0, 0, 0, 0],
      [0, 5, 14, 2, 3],
      [MINUTE, 4, 4, 0, 2],
      [2 * MINUTE, 0, 0, 0, 0],
    ]);
    const hours = store.timeseries('a.test', { from: T0 + 9 * HOUR, to: T0 + 12 * HOUR }, 'hour');
    // Hour 10: 9 views; visitors the union of x-0..x-2 (the second minute's x-0, x-1 are the same people).
    expect(hours.map((p) => [p.t, p.page_views, p.visitors])).toEqual([
      [T0 + 9 * HOUR, 0, 0],
      [T0 + 10 * HOUR, 9, 3],
      [T0 + 11 * HOUR, 1, 1],
    ]);
    const days = store.timeseries('a.test', { from: T0, to: T0 + DAY }, 'day');
    expect(days).toEqual([{ t: T0, page_views: 10, visitors: 4, requests: 19, bot_requests: 2, bytes_sent: 19_000 }]);
    expect(store.domains()).toEqual(['a.test']);
    expect(store.hasDomain('a.test')).toBe(true);
    expect(store.hasDomain('b.test')).toBe(false);
    expect(store.timeseries('b.test', { from: T0, to: T0 + 2 * DAY }, 'day').map((p) => p.page_views)).toEqual([0, 0]);
    store.close();
  });

  it('rollups of the same domain and minute in one flush are merged (workers), and a late one adds to its minute', async () => {
    const now = T0 + HOUR;
    const store = await openHistory({ file: tempFile(), now: () => now });
    const m = T0 + 30 * MINUTE;
    store.write([
      rollup('a.test', m, { pageViews: 2, visitors: ['p', 'q'], breakdowns: { pages: { '/': 2 } } }),
      rollup('a.test', m, { pageViews: 3, visitors: ['q', 'r'], breakdowns: { pages: { '/': 1, '/b': 2 } } }),
    ]);
    store.write([rollup('a.test', m, { pageViews: 1, visitors: ['s'], breakdowns: { pages: { '/b': 1 } } })]);
    const [point] = store.timeseries('a.test', { from: m, to: m + MINUTE }, 'minute');
    expect(point?.page_views).toBe(6);
    expect(point?.visitors).toBe(4);
    expect(store.breakdown('a.test', 'pages', { from: m, to: m + MINUTE })).toEqual([
      { key: '/', page_views: 3 },
      { key: '/b', page_views: 3 },
    ]);
    store.close();
  });

  it('totals: counts over any range; visitors are each day’s uniques, summed over days', async () => {
    const now = T0 + 2 * DAY + 12 * HOUR;
    const store = await openHistory({ file: tempFile(), now: () => now });
    const rollups = [];
    // The same three people on day 0 (two minutes) and day 1; someone else on day 2.
    for (const day of [0, 1]) {
      rollups.push(rollup('a.test', T0 + day * DAY + 9 * HOUR, { pageViews: 3, visitors: ['a', 'b', 'c'] }));
      rollups.push(rollup('a.test', T0 + day * DAY + 15 * HOUR, { pageViews: 3, visitors: ['a', 'b'] }));
    }
    rollups.push(rollup('a.test', T0 + 2 * DAY + 1 * HOUR, { pageViews: 1, visitors: ['d'] }));
    store.write(rollups);
    const all = store.totals('a.test', { from: T0, to: T0 + 3 * DAY });
    expect(all.page_views).toBe(13);
    expect(all.visitors).toBe(3 + 3 + 1);
    expect(all.status.s2xx).toBe(13);
    // Part of day 0 (minutes and hours), all of day 1.
    const part = store.totals('a.test', { from: T0 + 14 * HOUR + 30 * MINUTE, to: T0 + 2 * DAY });
    expect(part.page_views).toBe(9);
    expect(part.visitors).toBe(2 + 3);
    // Within a day: the union of its buckets.
    expect(store.totals('a.test', { from: T0, to: T0 + 20 * HOUR }).visitors).toBe(3);
    store.close();
  });

  it('breakdown and vitals: descending, limited, summed over the range', async () => {
    const now = T0 + DAY + HOUR;
    const store = await openHistory({ file: tempFile(), now: () => now });
    store.write([
      rollup('a.test', T0 + 10 * MINUTE, {
        pageViews: 10,
        breakdowns: { referrers: { 'x.test': 4, 'y.test': 5 }, countries: { DE: 10 } },
        lcpGood: { '/': 3, '/a': 1 },
      }),
      rollup('a.test', T0 + DAY + 10 * MINUTE, {
        pageViews: 10,
        breakdowns: { referrers: { 'x.test': 3, 'z.test': 1 } },
        lcpGood: { '/a': 5 },
      }),
    ]);
    const range = { from: T0, to: T0 + 2 * DAY };
    expect(store.breakdown('a.test', 'referrers', range)).toEqual([
      { key: 'x.test', page_views: 7 },
      { key: 'y.test', page_views: 5 },
      { key: 'z.test', page_views: 1 },
    ]);
    expect(store.breakdown('a.test', 'referrers', range, 1)).toEqual([{ key: 'x.test', page_views: 7 }]);
    expect(store.breakdown('a.test', 'os', range)).toEqual([]);
    const vitals = store.vitals('a.test', range);
    expect(vitals.map((v) => [v.path, v.lcp.good, v.lcp.samples, v.inp.samples])).toEqual([
      ['/a', 6, 6, 0],
      ['/', 3, 3, 0],
    ]);
    expect(() => store.breakdown('a.test', 'nope' as 'pages', range)).toThrow(HistoryError);
    store.close();
  });

  it('refuses a range that ends before it starts, and more than 1,500 points', async () => {
    const store = await openHistory({ file: tempFile(), now: () => T0 });
    expect(() => store.totals('a.test', { from: T0, to: T0 })).toThrow(/invalid range/);
    expect(() => store.timeseries('a.test', { from: T0, to: T0 + 90 * DAY }, 'hour')).toThrow(
      expect.objectContaining({ code: 'HISTORY_TOO_MANY_POINTS' }),
    );
    expect(store.timeseries('a.test', { from: T0, to: T0 + 1500 * MINUTE }, 'minute')).toHaveLength(1500);
    store.close();
  });
});

describe('HistoryStore: retention and compaction', () => {
  it('minute rows go after the minute retention, hour rows after the hour retention; old ranges read coarser rows', async () => {
    let now = T0 + 10 * MINUTE;
    const store = await openHistory({
      file: tempFile(),
      now: () => now,
      retention: { minute: 2 * HOUR, hour: 2 * DAY, day: 10 * DAY },
    });
    store.write([rollup('a.test', T0 + 5 * MINUTE, { pageViews: 7, visitors: ['a'] })]);
    now = T0 + 3 * HOUR;
    store.write([]);
    const minute = { from: T0 + 5 * MINUTE, to: T0 + 6 * MINUTE };
    expect(store.timeseries('a.test', minute, 'minute')[0]?.page_views).toBe(0);
    // The minute is gone: a range over it is read from its hour.
    expect(store.totals('a.test', minute).page_views).toBe(7);
    expect(store.timeseries('a.test', { from: T0, to: T0 + HOUR }, 'hour')[0]?.page_views).toBe(7);
    now = T0 + 3 * DAY;
    store.write([]);
    expect(store.timeseries('a.test', { from: T0, to: T0 + HOUR }, 'hour')[0]?.page_views).toBe(0);
    expect(store.totals('a.test', minute).page_views).toBe(7);
    expect(store.totals('a.test', minute).visitors).toBe(1);
    now = T0 + 11 * DAY;
    store.write([]);
    expect(store.totals('a.test', { from: T0, to: T0 + DAY }).page_views).toBe(0);
    expect(store.domains()).toEqual([]);
    store.close();
  });

  it(`a finished hour keeps its top ${HOUR_KEYS} keys per dimension; the rest is summed under (other), totals unchanged`, async () => {
    let now = T0 + 30 * MINUTE;
    const store = await openHistory({ file: tempFile(), now: () => now });
    // 60 minutes of 100 pages each, 300 pages in all: /p0 has the most views.
    for (let m = 0; m < 60; m++) {
      const pages: Record<string, number> = {};
      for (let k = 0; k < 100; k++) {
        const page = (m * 5 + k) % 300;
        pages[`/p${page}`] = page === 0 ? 50 : 1;
      }
      const views = Object.values(pages).reduce((a, b) => a + b, 0);
      store.write([rollup('a.test', T0 + m * MINUTE, { pageViews: views, breakdowns: { pages } })]);
    }
    const hour = { from: T0, to: T0 + HOUR };
    const before = store.breakdown('a.test', 'pages', hour, 1000);
    expect(before.length).toBe(300);
    const total = store.totals('a.test', hour).page_views;
    expect(before.reduce((a, b) => a + b.page_views, 0)).toBe(total);
    now = T0 + HOUR + 10 * MINUTE;
    store.write([]);
    // A whole hour reads the hour's row: its top keys, exactly those it had, and the same totals.
    const after = store.breakdown('a.test', 'pages', hour, 1000);
    expect(after).toEqual(before.slice(0, HOUR_KEYS));
    expect(after[0]).toEqual({ key: '/p0', page_views: before[0]?.page_views });
    expect(store.totals('a.test', hour).page_views).toBe(total);
    // Part of the hour still reads its minutes: every key.
    expect(store.breakdown('a.test', 'pages', { from: T0, to: T0 + 59 * MINUTE }, 1000).length).toBe(300);
    store.close();
  });
});

describe('HistoryStore: visitor salts', () => {
  it('one salt per UTC day, the same after a restart that day, a new one the next day, the old one deleted', async () => {
    const file = tempFile();
    let now = T0 + 5 * HOUR;
    let store = await openHistory({ file, now: () => now });
    const first = store.visitorSalt();
    expect(first).toHaveLength(32);
    expect(store.visitorSalt()).toEqual(first);
    store.close();
    store = await openHistory({ file, now: () => now });
    expect(store.visitorSalt()).toEqual(first);
    now += DAY;
    const second = store.visitorSalt();
    expect(second).not.toEqual(first);
    store.close();
    const { DatabaseSync } = await import('node:sqlite');
    const db = new DatabaseSync(file);
    expect(db.prepare('SELECT day FROM salts').all()).toEqual([{ day: T0 + DAY }]);
    db.close();
  });
});
