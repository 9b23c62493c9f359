// Memory of the analytics collectors, measured on the V8 heap (run with
// --expose-gc by bench/analytics/run.mjs). Prints one JSON line.
import { AnalyticsCollector } from '@proxyd/analytics';

const gc = globalThis.gc;
if (typeof gc !== 'function') throw new Error('run with --expose-gc');
const heap = () => {
  gc();
  gc();
  const m = process.memoryUsage();
  // Typed arrays (the HyperLogLog registers, the bucket rings) live outside the JS heap.
  return m.heapUsed + m.arrayBuffers;
};
const ip = (n) => `${(n >>> 24) & 255}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
const rec = (host, i, path, referer = `https://ref${i % 100_000}.example.org/x`) => ({
  host,
  domain: host,
  analytics: true,
  method: 'GET',
  path,
  status: 200,
  bytesSent: 1000,
  durationMs: 1,
  clientIp: ip(0x0b000000 + i),
  referer,
  userAgent: undefined,
  contentType: 'text/html',
  startedAt: 0,
});
const countries = [
  'US',
  'DE',
  'FR',
  'GB',
  'JP',
  'BR',
  'IN',
  'AU',
  'CA',
  'NL',
  'SE',
  'ES',
  'IT',
  'PL',
  'CH',
  'AT',
  'BE',
  'DK',
];

// Warm up: compile every code path before measuring.
const warm = new AnalyticsCollector({ country: (_ip, h) => countries[h % countries.length] });
for (let i = 0; i < 200_000; i++) warm.record(rec(`w${i % 3}.example`, i, `/w/${i}`));
warm.observe('w0.example', 'lcp', 1);
warm.flush();
warm.list();

// BIG domains, each fed 1,000,000 distinct IPs and 100,000 distinct paths
// (and referrers); the heap delta is averaged over them (one domain is within heap noise).
const BIG = 8;
const collector = new AnalyticsCollector({ country: (_ip, h) => countries[h % countries.length] });
const before = heap();
const t0 = process.hrtime.bigint();
for (let d = 0; d < BIG; d++) {
  for (let i = 0; i < 1_000_000; i++)
    collector.record(rec(`big${d}.example`, i, `/articles/${i % 100_000}/some-slug-text`));
}
const nsPerRecord = Number(process.hrtime.bigint() - t0) / (BIG * 1_000_000);
const oneDomain = (heap() - before) / BIG;
const snap = collector.get('big0.example');

// Many domains, each filled (every top-list slot taken by a 40-char key), to average out heap noise.
const DOMAINS = 200;
const many = new AnalyticsCollector({ country: (_ip, h) => countries[h % countries.length] });
const b2 = heap();
for (let d = 0; d < DOMAINS; d++) {
  for (let i = 0; i < 5000; i++) many.record(rec(`d${d}.example`, i, `/articles/${i}/some-slug-text-xxxxxx`));
}
const perDomain = (heap() - b2) / DOMAINS;
if (many.size !== DOMAINS) throw new Error(`expected ${DOMAINS} domains, got ${many.size}`);

// Worst case: every request a new 256-character path and a new 253-character referrer host, so every
// top-list slot holds a key of the longest kind (cut to MAX_KEY_LENGTH) and the slots churn all the time.
const longPath = (i) => `/${String(i).padStart(8, '0')}/${'a'.repeat(246)}`;
const longRef = (i) =>
  `https://${String(i).padStart(8, '0')}${'b'.repeat(53)}.${'c'.repeat(63)}.${'d'.repeat(63)}.${'e'.repeat(63)}/x`;
if (longPath(0).length !== 256 || longRef(0).length - 'https://'.length - '/x'.length !== 253)
  throw new Error('key sizes');
const worst = new AnalyticsCollector({ country: (_ip, h) => countries[h % countries.length] });
const b4 = heap();
for (let d = 0; d < DOMAINS; d++) {
  for (let i = 0; i < 5000; i++) worst.record(rec(`l${d}.example`, i, longPath(d * 5000 + i), longRef(d * 5000 + i)));
}
const worstPerDomain = (heap() - b4) / DOMAINS;
const worstSnap = worst.get('l0.example');

// Web Vitals: three TDigests after 100,000 observations each, per domain (10 domains).
const vitals = new AnalyticsCollector();
for (let d = 0; d < 10; d++) vitals.record(rec(`v${d}.example`, 0, '/'));
const b3 = heap();
for (let d = 0; d < 10; d++) {
  for (let i = 0; i < 100_000; i++) {
    vitals.observe(`v${d}.example`, 'lcp', 500 + ((i * 7919) % 6000));
    vitals.observe(`v${d}.example`, 'cls', ((i * 31) % 1000) / 2000);
    vitals.observe(`v${d}.example`, 'inp', 40 + ((i * 104_729) % 800));
  }
}
vitals.flush();
const vitalsPerDomain = (heap() - b3) / 10;

console.log(
  JSON.stringify({
    per_domain_1m_ips_100k_paths_bytes: Math.round(oneDomain),
    unique_visitors_estimate: snap.unique_visitors,
    domains_kept: [collector.size, many.size, worst.size, vitals.size, warm.size],
    per_domain_filled_bytes: Math.round(perDomain),
    per_domain_worst_long_keys_bytes: Math.round(worstPerDomain),
    worst_key_lengths: [worstSnap.top_pages[0].path.length, worstSnap.referrers[0].domain.length],
    web_vitals_per_domain_bytes: Math.round(vitalsPerDomain),
    ns_per_record: Math.round(nsPerRecord),
  }),
);
