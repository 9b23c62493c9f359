// The busy site of bench/history: what its rollups hold, minute by minute.
//
// ~10,000 page views a minute over 1,000 pages (Zipf, s = 1), 300 referrers,
// 60 countries, 8 browsers, 6 OSes, 3 device classes, UTM tags on a tenth of
// the views, Web Vitals for 100 pages, ~2,000 visitors a minute. A minute's
// rollup is what the analytics hand over: at most 100 keys per dimension,
// the rest summed under "(other)". An hour's is one rollup of the hour's
// views (its minute is the hour's start) with every key, as 60 minutes
// added up would have (before the store compacts the finished hour).
import { emptyRollup, HyperLogLog, ROLLUP_HLL_PRECISION } from '@proxyd/analytics';

const OTHER = '(other)';

/** Zipf weights of `n` keys (s = 1), summing to 1. */
function zipf(n) {
  const w = Array.from({ length: n }, (_, i) => 1 / (i + 1));
  const sum = w.reduce((a, b) => a + b, 0);
  return w.map((x) => x / sum);
}

const dimension = (prefix, n) => ({ keys: Array.from({ length: n }, (_, i) => `${prefix}${i}`), weights: zipf(n) });
const DIMENSIONS = {
  pages: dimension('/articles/2026/a-page-about-topic-', 1000),
  entry_pages: dimension('/articles/2026/a-page-about-topic-', 1000),
  referrers: dimension('referrer-', 300),
  countries: dimension('C', 60),
  browsers: dimension('Browser ', 8),
  os: dimension('OS ', 6),
  devices: { keys: ['desktop', 'mobile', 'tablet'], weights: [0.55, 0.4, 0.05] },
  utm_source: dimension('newsletter-', 20),
  utm_medium: dimension('medium-', 5),
  utm_campaign: dimension('campaign-', 30),
};
/** The share of views each dimension counts (entries, referred views, UTM-tagged views). */
const SHARE = { entry_pages: 0.4, referrers: 0.35, utm_source: 0.1, utm_medium: 0.1, utm_campaign: 0.1 };
const VITAL_PAGES = 100;

/** The key counts of `views` spread by the weights, with a little noise, the largest `cap` named (0: all). */
function spread({ keys, weights }, views, cap, random) {
  const counts = {};
  const named = [];
  for (let i = 0; i < keys.length; i++) {
    const n = Math.round(views * weights[i] * (0.8 + 0.4 * random()));
    if (n > 0) named.push([keys[i], n]);
  }
  named.sort((a, b) => b[1] - a[1]);
  let other = 0;
  named.forEach(([k, n], i) => {
    if (cap === 0 || i < cap) counts[k] = n;
    else other += n;
  });
  if (other > 0) counts[OTHER] = other;
  return counts;
}

/** A small deterministic PRNG (mulberry32), so every run seeds the same data. */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * One rollup of the busy site: `minutes` minutes of traffic from `start`
 * (1: a minute as the analytics hand it over, 100 keys per dimension; 60:
 * an hour, every key).
 */
export function busyRollup(domain, start, minutes, random) {
  const r = emptyRollup(domain, start);
  const views = Math.round(10_000 * minutes * (0.7 + 0.6 * random()));
  r.page_views = views;
  r.requests = views * 4;
  r.bot_requests = Math.round(views * 0.05);
  r.bytes_sent = r.requests * 12_000;
  r.status = {
    s1xx: 0,
    s2xx: Math.round(r.requests * 0.95),
    s3xx: Math.round(r.requests * 0.03),
    s4xx: 0,
    s5xx: 0,
    other: 0,
  };
  r.status.s4xx = r.requests - r.status.s2xx - r.status.s3xx;
  const hll = new HyperLogLog(ROLLUP_HLL_PRECISION);
  const people = minutes === 1 ? 2_000 : 5_000;
  const base = Math.floor(random() * 1e9);
  for (let i = 0; i < people; i++) hll.add(`visitor-${base + i}`);
  r.visitors = hll.exportRegisters();
  const cap = minutes === 1 ? 100 : 0;
  for (const [name, dim] of Object.entries(DIMENSIONS)) {
    Object.assign(r.breakdowns[name], spread(dim, views * (SHARE[name] ?? 1), cap, random));
  }
  const samples = Math.round(views * 0.05);
  const pages = spread(
    { keys: DIMENSIONS.pages.keys.slice(0, VITAL_PAGES), weights: zipf(VITAL_PAGES) },
    samples,
    0,
    random,
  );
  for (const [path, n] of Object.entries(pages)) {
    const split = (share) => ({
      good: Math.round(n * share),
      needs_improvement: Math.round(n * (1 - share) * 0.6),
      poor: Math.round(n * (1 - share) * 0.4),
    });
    r.vitals[path] = { lcp: split(0.7), cls: split(0.85), inp: split(0.8) };
  }
  return r;
}

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;

/**
 * Writes the busy site into `store` from `first` (a day's start) to `end`
 * (a minute's start), as the daemon would have: day by day the hours of
 * each day (hour rollups, then the store's compaction), and the last 48
 * hours minute by minute, an hour a write. Each write lands 5 minutes after
 * its last bucket; `setClock(ms)` moves the store's clock there first.
 */
export function seedBusySite(store, domain, { first, end, random, setClock }) {
  const write = (rollups, at) => {
    setClock(at);
    store.write(rollups, at);
  };
  const minutesFrom = Math.floor((end - 48 * HOUR) / HOUR) * HOUR;
  for (let day = first; day < minutesFrom; day += DAY) {
    const rollups = [];
    for (let h = day; h < Math.min(day + DAY, minutesFrom); h += HOUR) rollups.push(busyRollup(domain, h, 60, random));
    write(rollups, Math.min(day + DAY, minutesFrom) + 5 * MINUTE);
  }
  for (let h = minutesFrom; h < end; h += HOUR) {
    const rollups = [];
    for (let m = h; m < Math.min(h + HOUR, end); m += MINUTE) rollups.push(busyRollup(domain, m, 1, random));
    write(rollups, Math.min(h + HOUR, end) + 5 * MINUTE);
  }
}
