// What the per-minute rollups (issue 22) cost, in-process: the collectors'
// CPU per request with rollups on and off in one run (alternating rounds of
// the same records, medians), the User-Agent parse uncached and cached, and
// one drain. Prints one JSON line.
//
//   pnpm build && node bench/analytics/rollups.mjs
//
// Traffic: a site mix, one HTML page view in ten requests (nine assets),
// 200 distinct real browser User-Agents (version numbers varied) plus 5 %
// bots, 100,000 client IPs, 1,000 Zipf paths, a quarter of the page views
// with an external Referer and one in eight with UTM parameters.
import { AnalyticsCollector, classifyUserAgent, UserAgentCache } from '@proxyd/analytics';

const ROUNDS = Number(process.env.ROUNDS ?? 7);
const N = 200_000;
const BROWSERS = [
  (v) =>
    `Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${v}.0.0.0 Safari/537.36`,
  (v) =>
    `Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/${v % 20}.1 Safari/605.1.15`,
  (v) =>
    `Mozilla/5.0 (iPhone; CPU iPhone OS 17_${v % 10} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.${v % 10} Mobile/15E148 Safari/604.1`,
  (v) =>
    `Mozilla/5.0 (Linux; Android 14; Pixel ${v % 9}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${v}.0.6478.71 Mobile Safari/537.36`,
  (v) => `Mozilla/5.0 (X11; Linux x86_64; rv:${v}.0) Gecko/20100101 Firefox/${v}.0`,
];
const BOTS = [
  'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
  'Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)',
  'curl/8.5.0',
];
const uas = Array.from({ length: 200 }, (_, i) => BROWSERS[i % BROWSERS.length](80 + (i >> 2)));
let seed = 7;
const random = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
};
const weights = Array.from({ length: 1000 }, (_, k) => 1 / (k + 1));
const total = weights.reduce((a, b) => a + b, 0);
const cdf = [];
let acc = 0;
for (const w of weights) {
  acc += w / total;
  cdf.push(acc);
}
const zipf = () => {
  const u = random();
  let lo = 0;
  let hi = cdf.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cdf[mid] < u) lo = mid + 1;
    else hi = mid;
  }
  return lo;
};
const records = Array.from({ length: N }, (_, i) => {
  const page = i % 10 === 0;
  const bot = random() < 0.05;
  return {
    host: 'bench.local',
    domain: 'bench.local',
    analytics: true,
    method: 'GET',
    path: page ? `/p/${zipf()}` : `/assets/${zipf()}.js`,
    query: page && i % 80 === 0 ? 'utm_source=newsletter&utm_medium=email&utm_campaign=spring' : undefined,
    status: 200,
    bytesSent: page ? 2048 : 30,
    durationMs: 1,
    clientIp: `${3 + (i % 200)}.${(i >> 8) & 255}.${i & 255}.${1 + (i % 250)}`,
    referer: page && i % 40 === 0 ? 'https://news.example.org/story' : 'https://bench.local/p/1',
    userAgent: bot ? BOTS[i % BOTS.length] : uas[Math.floor(random() * uas.length)],
    contentType: page ? 'text/html; charset=utf-8' : 'text/javascript',
    startedAt: 0,
  };
});

const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
let clock = Date.UTC(2026, 0, 1);
const make = (rollups) => new AnalyticsCollector({ rollups, now: () => clock });
const collectors = { on: make(true), off: make(false) };
function pass(c) {
  const t0 = cpu();
  for (const r of records) c.record(r);
  return (cpu() - t0) / N;
}
for (let k = 0; k < 3; k++) for (const c of Object.values(collectors)) pass(c); // warm-up
const times = { on: [], off: [] };
for (let round = 0; round < ROUNDS; round++) {
  clock += 60_000; // each round a new minute, as the daemon sees it
  const order = round % 2 === 0 ? ['on', 'off'] : ['off', 'on'];
  for (const name of order) times[name].push(pass(collectors[name]));
  collectors.on.drainRollups(clock + 60_000);
}

// One drain of a busy minute: every record of a round in one minute.
clock += 60_000;
for (const r of records) collectors.on.record(r);
const d0 = performance.now();
const drained = collectors.on.drainRollups(clock + 60_000);
const drainMs = performance.now() - d0;

// The parse, uncached (every distinct string once) and through the cache.
const distinct = Array.from({ length: 2000 }, (_, i) => `${uas[i % uas.length]} build/${i}`);
for (const u of distinct.slice(0, 200)) classifyUserAgent(u);
let t0 = cpu();
for (const u of distinct) classifyUserAgent(u);
const parseUs = (cpu() - t0) / distinct.length;
const cache = new UserAgentCache();
for (const u of uas) cache.get(u);
const lookups = records.map((r) => r.userAgent);
t0 = cpu();
for (let k = 0; k < 5; k++) for (const u of lookups) cache.get(u);
const hitUs = (cpu() - t0) / (5 * lookups.length);

const on = median(times.on);
const off = median(times.off);
console.log(
  JSON.stringify({
    count_us_per_request_rollups_off: Number(off.toFixed(3)),
    count_us_per_request_rollups_on: Number(on.toFixed(3)),
    rollups_added_us_per_request: Number((on - off).toFixed(3)),
    ua_parse_uncached_us: Number(parseUs.toFixed(2)),
    ua_cached_lookup_us: Number(hitUs.toFixed(3)),
    drain_busy_minute_ms: Number(drainMs.toFixed(2)),
    page_views_in_minute: drained[0]?.page_views,
    requests_in_minute: drained[0]?.requests,
  }),
);
