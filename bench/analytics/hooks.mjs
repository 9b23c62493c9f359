// CPU cost of the analytics hooks per request, in-process (no network, so
// other load on the machine disturbs it far less than req/s). Prints one JSON
// line. Inputs as in run.mjs: 100,000 client IPs across RIR ranges (real
// GeoIP lookups on the embedded database), 1,000 Zipf-distributed paths, and a
// 2 KB HTML page through the injector (identity and gzip).
import { PassThrough } from 'node:stream';
import zlib from 'node:zlib';
import { createAnalytics } from '@proxyd/analytics';
import { emptySite } from '@proxyd/model';

const analytics = await createAnalytics({ cycleMs: 60_000 });
const site = emptySite([]);
const OCTETS = [3, 8, 12, 23, 24, 31, 37, 41, 46, 62, 77, 80, 81, 82, 85, 88, 90, 91, 94, 95, 101, 103, 110, 111];
const ips = Array.from(
  { length: 100_000 },
  (_, v) => `${OCTETS[v % OCTETS.length]}.${(v >> 8) & 255}.${v & 255}.${1 + (v % 250)}`,
);
// Zipf (s = 1) over 1,000 paths, precomputed.
const weights = Array.from({ length: 1000 }, (_, k) => 1 / (k + 1));
const total = weights.reduce((a, b) => a + b, 0);
const cdf = [];
let cumulative = 0;
for (const w of weights) {
  cumulative += w / total;
  cdf.push(cumulative);
}
let seed = 1;
const random = () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
};
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
const N = 300_000;
const records = Array.from({ length: N }, (_, i) => ({
  host: 'bench.local',
  domain: 'bench.local',
  analytics: true,
  method: 'GET',
  path: `/t/${zipf()}`,
  status: 200,
  bytesSent: 30,
  durationMs: 1,
  clientIp: ips[i % ips.length],
  referer: undefined,
  userAgent: 'wrk',
  contentType: 'text/plain',
  startedAt: 0,
}));
const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const onRequest = analytics.hooks.onRequest;
for (let k = 0; k < 4; k++) for (const r of records) onRequest(r); // warm-up (JIT, caches)
const t0 = cpu();
for (const r of records) onRequest(r);
const countUs = (cpu() - t0) / N;

// Injection over a 2 KB page: the whole-body path (rewriteBody), and transformResponse + the streaming
// injector, one chunk (as nginx sends it).
const page = Buffer.from(
  `<!doctype html><html><head><meta charset="utf-8"><title>bench</title></head><body>${'<p>lorem ipsum dolor sit amet</p>'.repeat(55)}</body></html>\n`,
);
const gzPage = zlib.gzipSync(page);
const ctx = { domain: 'bench.local', host: 'bench.local', path: '/p/1', clientIp: '3.0.0.1', secure: false, site };
const req = { method: 'GET', headers: {} };
/** Runs `body` through a transform (one write, as a small upstream body arrives) and drains it. */
function through(t, body) {
  return new Promise((resolve, reject) => {
    t.on('data', () => {});
    t.on('end', resolve);
    t.on('error', reject);
    t.end(body);
  });
}
async function inject(body, coding, n) {
  const start = cpu();
  for (let i = 0; i < n; i++) {
    const headers = { 'content-type': 'text/html', ...(coding ? { 'content-encoding': coding } : {}) };
    await through(analytics.hooks.transformResponse(ctx, req, 200, headers), body);
  }
  return (cpu() - start) / n;
}
async function passThrough(body, n) {
  const start = cpu();
  for (let i = 0; i < n; i++) await through(new PassThrough(), body);
  return (cpu() - start) / n;
}
/** The whole-body path the data plane takes for a page of known size up to 64 KiB: the hook, then one insert. */
function rewrite(body, n) {
  const start = cpu();
  for (let i = 0; i < n; i++) {
    const headers = { 'content-type': 'text/html', 'content-length': String(body.length), etag: '"abc"' };
    analytics.hooks.rewriteBody(ctx, req, 200, headers)(body);
  }
  return (cpu() - start) / n;
}
rewrite(page, 5000);
const wholeUs = rewrite(page, 50_000);
await inject(page, null, 2000);
await passThrough(page, 2000);
const injectUs = await inject(page, null, 20_000);
const pipeUs = await passThrough(page, 20_000);
await inject(gzPage, 'gzip', 200);
const gzipUs = await inject(gzPage, 'gzip', 2000);
await analytics.close();
console.log(
  JSON.stringify({
    count_us_per_request: Number(countUs.toFixed(2)),
    inject_2kb_whole_us: Number(wholeUs.toFixed(2)),
    inject_2kb_identity_us: Number(injectUs.toFixed(2)),
    passthrough_2kb_us: Number(pipeUs.toFixed(2)),
    inject_2kb_gzip_us: Number(gzipUs.toFixed(2)),
    countries: analytics.get('bench.local')?.countries.length,
  }),
);
