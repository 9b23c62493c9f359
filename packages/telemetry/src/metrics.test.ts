import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import v8 from 'node:v8';
import { createAdminApp } from '@proxyd/admin-api';
import { RequestEvent, type RequestRecord } from '@proxyd/model';
import { RouteStore } from '@proxyd/route-store';
import { describe, expect, it } from 'vitest';
import {
  countReloads,
  createMetrics,
  type MetricsSnapshot,
  OTHER_DOMAIN,
  UNROUTED_DOMAIN,
  type WorkerMetrics,
} from './metrics.js';

const record = (domain: string | null, status: number, durationMs = 5): RequestRecord => ({
  host: domain ?? 'unknown.test',
  domain,
  analytics: true,
  method: 'GET',
  path: '/',
  status,
  bytesSent: 10,
  durationMs,
  clientIp: '127.0.0.1',
  referer: undefined,
  userAgent: undefined,
  contentType: undefined,
  startedAt: Date.now(),
});

describe('metrics', () => {
  it('counts requests per domain and status class, and their duration', async () => {
    const metrics = createMetrics({ processMetrics: false });
    expect(await metrics.render()).toContain('proxyd_requests_by_protocol_total{protocol="h2"} 0');
    metrics.onRequest(record('a.test', 200));
    metrics.onRequest(record('a.test', 204));
    metrics.onRequest(record('a.test', 503, 2000));
    metrics.onRequest(record(null, 404));
    metrics.onRequest(record('b.test', 0));
    const text = await metrics.render();
    expect(text).toContain('proxyd_requests_total{domain="a.test",status_class="2xx"} 2');
    expect(text).toContain('proxyd_requests_total{domain="a.test",status_class="5xx"} 1');
    expect(text).toContain(`proxyd_requests_total{domain="${UNROUTED_DOMAIN}",status_class="4xx"} 1`);
    expect(text).toContain('proxyd_requests_total{domain="b.test",status_class="other"} 1');
    expect(text).toContain('proxyd_requests_by_protocol_total{protocol="h1"} 5');
    metrics.onRequest({ ...record('a.test', 200), protocol: 'h2' });
    expect(await metrics.render()).toContain('proxyd_requests_by_protocol_total{protocol="h2"} 1');
    expect(text).toContain('proxyd_request_duration_seconds_bucket{le="2.5",status_class="5xx"} 1');
    expect(text).toContain('proxyd_request_duration_seconds_bucket{le="1",status_class="5xx"} 0');
  });

  it('bounds the domain label: past the cap, domains share _other', async () => {
    const metrics = createMetrics({ processMetrics: false, maxDomains: 10 });
    for (let i = 0; i < 50; i++) metrics.onRequest(record(`d${i}.test`, 200));
    const text = await metrics.render();
    const domains = new Set([...text.matchAll(/proxyd_requests_total\{domain="([^"]+)"/g)].map((m) => m[1]));
    expect(domains.size).toBe(11);
    expect(text).toContain(`proxyd_requests_total{domain="${OTHER_DOMAIN}",status_class="2xx"} 40`);
  });

  it('exposes the route count per origin', async () => {
    const metrics = createMetrics({ processMetrics: false });
    metrics.setRouteCounts({ proxyfile: 2, labels: 0, api: 5 });
    const text = await metrics.render();
    expect(text).toContain('proxyd_routes{origin="api"} 5');
    expect(text).toContain('proxyd_routes{origin="proxyfile"} 2');
  });

  it('reads upstream health at each scrape; an upstream down in any pool is 0', async () => {
    const metrics = createMetrics({ processMetrics: false });
    let members = [
      { upstream: '127.0.0.1:1', healthy: true },
      { upstream: '[::1]:2', healthy: true },
      { upstream: '[::1]:2', healthy: false },
    ];
    metrics.setUpstreamHealthSource(() => members);
    let text = await metrics.render();
    expect(text).toContain('proxyd_upstream_healthy{upstream="127.0.0.1:1"} 1');
    expect(text).toContain('proxyd_upstream_healthy{upstream="[::1]:2"} 0');
    members = [{ upstream: '127.0.0.1:1', healthy: false }];
    text = await metrics.render();
    expect(text).toContain('proxyd_upstream_healthy{upstream="127.0.0.1:1"} 0');
    expect(text).not.toContain('[::1]:2');
  });

  it('reads the analytics dropped-request count at each scrape', async () => {
    const metrics = createMetrics({ processMetrics: false });
    let dropped = 0;
    metrics.setAnalyticsDroppedSource(() => dropped);
    expect(await metrics.render()).toContain('\nproxyd_analytics_dropped_requests_total 0\n');
    dropped = 42;
    expect(await metrics.render()).toContain('\nproxyd_analytics_dropped_requests_total 42\n');
  });

  it('passes promtool check metrics, process metrics included', async () => {
    const metrics = createMetrics();
    metrics.setAnalyticsDroppedSource(() => 3);
    metrics.onRequest(record('a.test', 200));
    metrics.setRouteCounts({ proxyfile: 1, labels: 0, api: 0 });
    metrics.setUpstreamHealthSource(() => [{ upstream: '127.0.0.1:80', healthy: true }]);
    const dir = await mkdtemp(path.join(tmpdir(), 'proxyd-metrics-'));
    try {
      const file = path.join(dir, 'metrics.txt');
      await writeFile(file, await metrics.render());
      const { stdout, stderr } = await promisify(execFile)('sh', ['-c', `promtool check metrics < "${file}"`]);
      expect(`${stdout}${stderr}`.trim()).toBe('');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  // Issue 14: right after start the event-loop delay histogram holds no
  // sample, and prom-client printed its mean and stddev as `Nan`.
  it('prints no NaN right after start, nor for scrapes closer than the delay sampling interval', async () => {
    const metrics = createMetrics();
    const scrapes = await Promise.all([metrics.render(), metrics.render(), metrics.render()]);
    for (const text of scrapes) expect(text).not.toMatch(/\bNa[Nn]\b/);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const later = await metrics.render();
    expect(later).not.toMatch(/\bNa[Nn]\b/);
    const mean = /^nodejs_eventloop_lag_mean_seconds (\S+)$/m.exec(later)?.[1];
    expect(Number(mean)).toBeGreaterThan(0);
    expect(Number.isFinite(Number(mean))).toBe(true);
  });
  it('exposes each certificate expiry and the ACME orders by result', async () => {
    const metrics = createMetrics({ processMetrics: false });
    expect(await metrics.render()).not.toContain('proxyd_acme_orders_total{');
    let orders = { valid: 1, invalid: 0, error: 2 };
    metrics.setCertificateSource(() => ({
      certificates: [
        { name: 'a.test', issuer: 'local', notAfter: 1_800_000_000_500 },
        { name: 'pending.example.com', issuer: null, notAfter: null },
      ],
      orders,
    }));
    let text = await metrics.render();
    expect(text).toContain('proxyd_certificate_not_after_seconds{name="a.test",issuer="local"} 1800000000');
    expect(text).not.toContain('pending.example.com');
    expect(text).toContain('proxyd_acme_orders_total{result="valid"} 1');
    expect(text).toContain('proxyd_acme_orders_total{result="invalid"} 0');
    expect(text).toContain('proxyd_acme_orders_total{result="error"} 2');
    orders = { valid: 2, invalid: 0, error: 2 };
    text = await metrics.render();
    expect(text).toContain('proxyd_acme_orders_total{result="valid"} 2');
    expect(text).not.toContain('proxyd_storage_reachable{');
  });
  it('issue 31: exposes whether the shared storage answers', async () => {
    const metrics = createMetrics({ processMetrics: false });
    let reachable = true;
    expect(await metrics.render()).not.toContain('proxyd_storage_reachable{');
    metrics.setStorageSource(() => ({ backend: 'redis', reachable }));
    expect(await metrics.render()).toContain('proxyd_storage_reachable{backend="redis"} 1');
    reachable = false;
    expect(await metrics.render()).toContain('proxyd_storage_reachable{backend="redis"} 0');
  });
});

/** The value of the one sample line `series` (name and labels as printed), undefined when absent. */
function sampleValue(text: string, series: string): number | undefined {
  const lines = text.split('\n').filter((line) => line.startsWith(`${series} `));
  expect(lines.length).toBeLessThanOrEqual(1);
  return lines[0] === undefined ? undefined : Number(lines[0].slice(series.length + 1));
}

/** `promtool check metrics`'s complaints (empty when the exposition is clean). */
function promtool(text: string): string {
  const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return `${check.stdout}${check.stderr}${check.status === 0 ? '' : `exit ${check.status}`}`.trim();
}

/** Each `# HELP` and `# TYPE` line's metric name, counted: every count must be 1. */
function headerCounts(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const [, kind, name] of text.matchAll(/^# (HELP|TYPE) (\S+)/gm)) {
    const key = `${kind} ${name}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** What the primary receives: the workers' snapshots through structured clone, as over IPC. */
const overIpc = async (workers: readonly WorkerMetrics[]): Promise<MetricsSnapshot[]> =>
  Promise.all(workers.map(async (w) => v8.deserialize(v8.serialize(await w.snapshot())) as MetricsSnapshot));

describe('metrics with workers (--workers N)', () => {
  it('a worker snapshot is plain data: structured clone gives it back unchanged', async () => {
    const worker = createMetrics({ role: 'worker' });
    worker.onRequest(record('a.test', 200));
    worker.setUpstreamHealthSource(() => [{ upstream: '127.0.0.1:1', healthy: true }]);
    const snapshot = await worker.snapshot();
    expect(v8.deserialize(v8.serialize(snapshot))).toStrictEqual(snapshot);
    expect(structuredClone(snapshot)).toStrictEqual(snapshot);
    const names = snapshot.map((m) => m.name);
    expect(names).toEqual(expect.arrayContaining(['proxyd_requests_total', 'process_cpu_seconds_total']));
    for (const owned of ['proxyd_routes', 'proxyd_certificate_not_after_seconds', 'proxyd_acme_orders_total']) {
      expect(names).not.toContain(owned);
    }
  });

  it("the primary sums its workers' counters and histograms, takes the min of upstream health, shows its own once", async () => {
    const [one, two] = [
      createMetrics({ role: 'worker', processMetrics: false }),
      createMetrics({ role: 'worker', processMetrics: false }),
    ];
    const primary = createMetrics({ role: 'primary', processMetrics: false });
    one.onRequest(record('a.test', 200, 5));
    one.onRequest(record('a.test', 200, 5));
    one.onRequest(record('a.test', 503, 2000));
    one.onRequest({ ...record('a.test', 200, 5), protocol: 'h2' });
    two.onRequest(record('a.test', 200, 20));
    two.onRequest(record('b.test', 404));
    two.onRequest(record(null, 404));
    one.setAnalyticsDroppedSource(() => 2);
    two.setAnalyticsDroppedSource(() => 3);
    one.setUpstreamHealthSource(() => [
      { upstream: '127.0.0.1:1', healthy: true },
      { upstream: '127.0.0.1:2', healthy: true },
    ]);
    two.setUpstreamHealthSource(() => [
      { upstream: '127.0.0.1:1', healthy: true },
      { upstream: '127.0.0.1:2', healthy: false },
      { upstream: '127.0.0.1:3', healthy: true },
    ]);
    primary.setRouteCounts({ proxyfile: 2, labels: 0, api: 1 });
    primary.setCertificateSource(() => ({
      certificates: [{ name: 'a.test', issuer: 'local', notAfter: 1_800_000_000_000 }],
      orders: { valid: 1, invalid: 0, error: 0 },
    }));
    primary.setWorkerSource(() => overIpc([one, two]));
    const text = await primary.render();

    expect(sampleValue(text, 'proxyd_requests_total{domain="a.test",status_class="2xx"}')).toBe(4);
    expect(sampleValue(text, 'proxyd_requests_total{domain="a.test",status_class="5xx"}')).toBe(1);
    expect(sampleValue(text, 'proxyd_requests_total{domain="b.test",status_class="4xx"}')).toBe(1);
    expect(sampleValue(text, `proxyd_requests_total{domain="${UNROUTED_DOMAIN}",status_class="4xx"}`)).toBe(1);
    // Issue 21: no domain went past the cap, so no _other series (of zeros).
    expect(text).not.toContain(OTHER_DOMAIN);
    const bucket = (le: string, cls: string) =>
      sampleValue(text, `proxyd_request_duration_seconds_bucket{le="${le}",status_class="${cls}"}`);
    expect(bucket('0.005', '2xx')).toBe(3);
    expect(bucket('0.025', '2xx')).toBe(4);
    expect(bucket('+Inf', '2xx')).toBe(4);
    expect(bucket('1', '5xx')).toBe(0);
    expect(bucket('2.5', '5xx')).toBe(1);
    expect(bucket('0.005', '4xx')).toBe(2);
    expect(sampleValue(text, 'proxyd_request_duration_seconds_count{status_class="2xx"}')).toBe(4);
    expect(sampleValue(text, 'proxyd_request_duration_seconds_sum{status_class="2xx"}')).toBeCloseTo(0.035, 9);
    expect(sampleValue(text, 'proxyd_request_duration_seconds_sum{status_class="5xx"}')).toBeCloseTo(2, 9);
    expect(sampleValue(text, 'proxyd_requests_by_protocol_total{protocol="h1"}')).toBe(6);
    expect(sampleValue(text, 'proxyd_requests_by_protocol_total{protocol="h2"}')).toBe(1);
    expect(sampleValue(text, 'proxyd_analytics_dropped_requests_total')).toBe(5);
    // Out of rotation in one worker: 0; in rotation where every worker has it: 1.
    expect(sampleValue(text, 'proxyd_upstream_healthy{upstream="127.0.0.1:1"}')).toBe(1);
    expect(sampleValue(text, 'proxyd_upstream_healthy{upstream="127.0.0.1:2"}')).toBe(0);
    expect(sampleValue(text, 'proxyd_upstream_healthy{upstream="127.0.0.1:3"}')).toBe(1);
    expect(sampleValue(text, 'proxyd_routes{origin="proxyfile"}')).toBe(2);
    expect(sampleValue(text, 'proxyd_acme_orders_total{result="valid"}')).toBe(1);
    expect(sampleValue(text, 'proxyd_certificate_not_after_seconds{name="a.test",issuer="local"}')).toBe(1_800_000_000);
    expect([...headerCounts(text).values()].every((n) => n === 1)).toBe(true);
    expect(headerCounts(text).get('TYPE proxyd_routes')).toBe(1);
    expect(promtool(text)).toBe('');

    // Counters follow the workers from one scrape to the next.
    two.onRequest(record('a.test', 200));
    expect(sampleValue(await primary.render(), 'proxyd_requests_total{domain="a.test",status_class="2xx"}')).toBe(5);
  });

  it("passes promtool with every process's metrics and the admin app's histogram in the primary's registry", async () => {
    const workers = [createMetrics({ role: 'worker' }), createMetrics({ role: 'worker' })];
    const primary = createMetrics({ role: 'primary' });
    for (const [i, worker] of workers.entries()) {
      worker.onRequest(record(`w${i}.test`, 200));
      worker.setUpstreamHealthSource(() => [{ upstream: '127.0.0.1:80', healthy: true }]);
    }
    primary.setRouteCounts({ proxyfile: 1, labels: 0, api: 0 });
    primary.setWorkerSource(() => overIpc(workers));
    const { store } = await RouteStore.open({ stateFile: null });
    const app = createAdminApp({
      routes: store,
      token: 'metrics-test-token',
      transport: 'tcp',
      metrics: primary,
      metricsRegistry: primary.registry,
    });
    try {
      const headers = { authorization: 'Bearer metrics-test-token' };
      await app.inject({ method: 'GET', url: '/routes', headers });
      await new Promise((resolve) => setTimeout(resolve, 30)); // event-loop delay samples in every registry
      const res = await app.inject({ method: 'GET', url: '/metrics', headers });
      expect(res.statusCode).toBe(200);
      const text = res.body;
      expect(text).toContain('proxyd_admin_http_request_duration_seconds_count{method="GET",route="/routes"');
      expect(sampleValue(text, 'proxyd_requests_total{domain="w0.test",status_class="2xx"}')).toBe(1);
      expect(sampleValue(text, 'proxyd_requests_total{domain="w1.test",status_class="2xx"}')).toBe(1);
      const duplicated = [...headerCounts(text)].filter(([, n]) => n !== 1);
      expect(duplicated).toEqual([]);
      expect(text).not.toMatch(/\bNa[Nn]\b/);
      expect(promtool(text)).toBe('');
      // Process metrics: one series each, aggregated over the three processes.
      const own = await primary.registry.getMetricsAsJSON();
      const started = own.find((m) => m.name === 'process_start_time_seconds')?.values[0]?.value;
      const snapshots = await Promise.all(workers.map((w) => w.snapshot()));
      const starts = snapshots.map((s) => s.find((m) => m.name === 'process_start_time_seconds')?.values[0]?.value);
      expect(sampleValue(text, 'process_start_time_seconds')).toBe(Math.min(started ?? 0, ...starts.map(Number)));
      expect(text.match(/^nodejs_version_info\{/gm)).toHaveLength(1);
      const rss = sampleValue(text, 'process_resident_memory_bytes') ?? 0;
      const oneRss = Number(own.find((m) => m.name === 'process_resident_memory_bytes')?.values[0]?.value);
      expect(rss).toBeGreaterThan(2 * oneRss); // three processes' (here the same process thrice, each read apart)
    } finally {
      await app.close();
      await store.close();
    }
  });

  it('renders when a worker does not answer, and with no worker at all', async () => {
    const [one, two] = [
      createMetrics({ role: 'worker', processMetrics: false }),
      createMetrics({ role: 'worker', processMetrics: false }),
    ];
    const primary = createMetrics({ role: 'primary', processMetrics: false });
    one.onRequest(record('a.test', 200));
    two.onRequest(record('a.test', 200));
    two.onRequest(record('a.test', 200));
    let answering: WorkerMetrics[] = [one, two];
    primary.setWorkerSource(() => overIpc(answering));
    expect(sampleValue(await primary.render(), 'proxyd_requests_total{domain="a.test",status_class="2xx"}')).toBe(3);
    answering = [one];
    let text = await primary.render();
    expect(sampleValue(text, 'proxyd_requests_total{domain="a.test",status_class="2xx"}')).toBe(1);
    expect(promtool(text)).toBe('');
    answering = [];
    text = await primary.render();
    expect(text).not.toContain('a.test');
    // The families are there all the same: empty, or at 0; no _other series of zeros (issue 21).
    expect(text).toMatch(/^# TYPE proxyd_requests_total counter$/m);
    expect(text).toMatch(/^# TYPE proxyd_request_duration_seconds histogram$/m);
    expect(text).not.toContain(OTHER_DOMAIN);
    expect(sampleValue(text, 'proxyd_request_duration_seconds_count{status_class="2xx"}')).toBeUndefined();
    expect(sampleValue(text, 'proxyd_requests_by_protocol_total{protocol="h1"}')).toBe(0);
    expect(sampleValue(text, 'proxyd_requests_in_flight')).toBe(0);
    expect(promtool(text)).toBe('');
  });

  it('keeps the domain cap after summing: at most maxDomains domains and _other, no request lost, stable series', async () => {
    const maxDomains = 3;
    const [one, two] = [
      createMetrics({ role: 'worker', processMetrics: false, maxDomains }),
      createMetrics({ role: 'worker', processMetrics: false, maxDomains }),
    ];
    const primary = createMetrics({ role: 'primary', processMetrics: false, maxDomains });
    primary.setWorkerSource(() => overIpc([one, two]));
    // Worker one admits a, b, c and counts d under _other; worker two admits d, e, f (f the busiest).
    for (const domain of ['a', 'b', 'c', 'd']) one.onRequest(record(`${domain}.test`, 200));
    for (const domain of ['d', 'e', 'f', 'f', 'f', 'f']) two.onRequest(record(`${domain}.test`, 200));
    const domainsOf = (text: string) =>
      new Set([...text.matchAll(/^proxyd_requests_total\{domain="([^"]+)",status_class="2xx"\}/gm)].map((m) => m[1]));
    const total = (text: string) =>
      [...text.matchAll(/^proxyd_requests_total\{[^}]*status_class="2xx"\} (\S+)$/gm)].reduce(
        (n, m) => n + Number(m[1]),
        0,
      );
    let text = await primary.render();
    expect(domainsOf(text).size).toBe(maxDomains + 1);
    expect(domainsOf(text)).toContain(OTHER_DOMAIN);
    expect(sampleValue(text, 'proxyd_requests_total{domain="f.test",status_class="2xx"}')).toBe(4); // the busiest won a place
    expect(total(text)).toBe(10);
    const admitted = domainsOf(text);
    const other = sampleValue(text, `proxyd_requests_total{domain="${OTHER_DOMAIN}",status_class="2xx"}`) ?? 0;
    expect(promtool(text)).toBe('');
    // Later traffic to a domain left out goes on growing _other; the admitted keep their series.
    for (const domain of ['a', 'b', 'c', 'd', 'e', 'g']) {
      one.onRequest(record(`${domain}.test`, 200));
      two.onRequest(record(`${domain}.test`, 200));
    }
    text = await primary.render();
    expect(domainsOf(text)).toEqual(admitted);
    expect(total(text)).toBe(22);
    expect(sampleValue(text, `proxyd_requests_total{domain="${OTHER_DOMAIN}",status_class="2xx"}`)).toBeGreaterThan(
      other,
    );
  });
});

// Issue 21: one test per new series, fed the records the data plane hands the hook.
describe('metrics of issue 21', () => {
  const text = async (metrics: { render(): Promise<string> }) => await metrics.render();

  it('proxyd_request_duration_seconds: sub-millisecond buckets', async () => {
    const metrics = createMetrics({ processMetrics: false });
    metrics.onRequest(record('a.test', 200, 0.08));
    metrics.onRequest(record('a.test', 200, 0.4));
    const t = await text(metrics);
    expect(sampleValue(t, 'proxyd_request_duration_seconds_bucket{le="0.0001",status_class="2xx"}')).toBe(1);
    expect(sampleValue(t, 'proxyd_request_duration_seconds_bucket{le="0.00025",status_class="2xx"}')).toBe(1);
    expect(sampleValue(t, 'proxyd_request_duration_seconds_bucket{le="0.0005",status_class="2xx"}')).toBe(2);
    expect(sampleValue(t, 'proxyd_request_duration_seconds_sum{status_class="2xx"}')).toBeCloseTo(0.00048, 9);
    // Classes without a request have no series.
    expect(t).not.toMatch(/^proxyd_request_duration_seconds_\w+\{[^}]*status_class="5xx"/m);
  });

  it('proxyd_http_requests_total: by domain, method (unknown ones as OTHER), protocol and status class, only what was seen', async () => {
    const metrics = createMetrics({ processMetrics: false });
    for (const method of ['GET', 'GET', 'POST', 'PROPFIND', 'get'])
      metrics.onRequest({ ...record('a.test', 200), method });
    metrics.onRequest({ ...record('a.test', 404), protocol: 'h2' });
    metrics.onRequest({ ...record('b.test', 503), method: 'POST', protocol: 'h2' });
    const t = await text(metrics);
    const series = (d: string, m: string, p: string, c: string) =>
      `proxyd_http_requests_total{domain="${d}",method="${m}",protocol="${p}",status_class="${c}"}`;
    expect(sampleValue(t, series('a.test', 'GET', 'h1', '2xx'))).toBe(2);
    expect(sampleValue(t, series('a.test', 'POST', 'h1', '2xx'))).toBe(1);
    expect(sampleValue(t, series('a.test', 'OTHER', 'h1', '2xx'))).toBe(2);
    expect(sampleValue(t, series('a.test', 'GET', 'h2', '4xx'))).toBe(1);
    expect(sampleValue(t, series('b.test', 'POST', 'h2', '5xx'))).toBe(1);
    // Sparse: five series for five combinations, no zeros.
    expect(t.split('\n').filter((l) => l.startsWith('proxyd_http_requests_total{'))).toHaveLength(5);
  });

  it('proxyd_request_size_bytes and proxyd_response_size_bytes', async () => {
    const metrics = createMetrics({ processMetrics: false });
    metrics.onRequest({ ...record('a.test', 200), bytesReceived: 1000, bytesSent: 100 });
    metrics.onRequest({ ...record('a.test', 200), bytesSent: 5_000_000 });
    const t = await text(metrics);
    expect(sampleValue(t, 'proxyd_request_size_bytes_bucket{le="256"}')).toBe(1);
    expect(sampleValue(t, 'proxyd_request_size_bytes_bucket{le="1024"}')).toBe(2);
    expect(sampleValue(t, 'proxyd_request_size_bytes_sum')).toBe(1000);
    expect(sampleValue(t, 'proxyd_response_size_bytes_bucket{le="256"}')).toBe(1);
    expect(sampleValue(t, 'proxyd_response_size_bytes_bucket{le="4194304"}')).toBe(1);
    expect(sampleValue(t, 'proxyd_response_size_bytes_bucket{le="+Inf"}')).toBe(2);
    expect(sampleValue(t, 'proxyd_response_size_bytes_count')).toBe(2);
  });

  it('proxyd_requests_in_flight and proxyd_open_connections: read from the data plane at each scrape', async () => {
    const metrics = createMetrics({ processMetrics: false });
    expect(sampleValue(await text(metrics), 'proxyd_requests_in_flight')).toBe(0);
    let stats = { requestsInFlight: 3, openConnections: 7 };
    metrics.setDataPlaneStatsSource(() => stats);
    let t = await text(metrics);
    expect(sampleValue(t, 'proxyd_requests_in_flight')).toBe(3);
    expect(sampleValue(t, 'proxyd_open_connections')).toBe(7);
    stats = { requestsInFlight: 0, openConnections: 1 };
    t = await text(metrics);
    expect(sampleValue(t, 'proxyd_requests_in_flight')).toBe(0);
    expect(sampleValue(t, 'proxyd_open_connections')).toBe(1);
  });

  it('proxyd_rate_limited_total: per domain, once a request was refused', async () => {
    const metrics = createMetrics({ processMetrics: false });
    metrics.onRequest(record('a.test', 200));
    expect(await text(metrics)).not.toContain('proxyd_rate_limited_total{');
    metrics.onRequest({ ...record('a.test', 429), events: RequestEvent.RateLimited });
    metrics.onRequest({ ...record('a.test', 429), events: RequestEvent.RateLimited });
    metrics.onRequest(record('b.test', 429)); // an upstream's own 429
    const t = await text(metrics);
    expect(sampleValue(t, 'proxyd_rate_limited_total{domain="a.test"}')).toBe(2);
    expect(t).not.toContain('proxyd_rate_limited_total{domain="b.test"}');
  });

  it('proxyd_cache_requests_total: hit and miss, both once either happened', async () => {
    const metrics = createMetrics({ processMetrics: false });
    expect(await text(metrics)).not.toContain('proxyd_cache_requests_total{');
    metrics.onRequest({ ...record('a.test', 200), events: RequestEvent.CacheMiss });
    let t = await text(metrics);
    expect(sampleValue(t, 'proxyd_cache_requests_total{result="miss"}')).toBe(1);
    expect(sampleValue(t, 'proxyd_cache_requests_total{result="hit"}')).toBe(0);
    metrics.onRequest({ ...record('a.test', 200), events: RequestEvent.CacheHit });
    metrics.onRequest({ ...record('a.test', 200), events: RequestEvent.CacheHit });
    t = await text(metrics);
    expect(sampleValue(t, 'proxyd_cache_requests_total{result="hit"}')).toBe(2);
  });

  it('proxyd_under_attack_challenges_total: issued, passed and failed', async () => {
    const metrics = createMetrics({ processMetrics: false });
    expect(await text(metrics)).not.toContain('proxyd_under_attack_challenges_total{');
    metrics.onRequest({ ...record('a.test', 503), events: RequestEvent.ChallengeIssued });
    metrics.onRequest({ ...record('a.test', 503), events: RequestEvent.ChallengeIssued });
    metrics.onRequest({ ...record('a.test', 403), events: RequestEvent.ChallengeFailed });
    metrics.onRequest({ ...record('a.test', 204), events: RequestEvent.ChallengePassed });
    const t = await text(metrics);
    expect(sampleValue(t, 'proxyd_under_attack_challenges_total{result="issued"}')).toBe(2);
    expect(sampleValue(t, 'proxyd_under_attack_challenges_total{result="failed"}')).toBe(1);
    expect(sampleValue(t, 'proxyd_under_attack_challenges_total{result="passed"}')).toBe(1);
  });

  it('proxyd_analytics_beacons_total: accepted and rejected', async () => {
    const metrics = createMetrics({ processMetrics: false });
    expect(await text(metrics)).not.toContain('proxyd_analytics_beacons_total{');
    metrics.onRequest({ ...record('a.test', 204), events: RequestEvent.BeaconAccepted });
    metrics.onRequest({ ...record('a.test', 403), events: RequestEvent.BeaconRejected });
    metrics.onRequest({ ...record('a.test', 400), events: RequestEvent.BeaconRejected });
    const t = await text(metrics);
    expect(sampleValue(t, 'proxyd_analytics_beacons_total{result="accepted"}')).toBe(1);
    expect(sampleValue(t, 'proxyd_analytics_beacons_total{result="rejected"}')).toBe(2);
  });

  it('proxyd_config_reloads_total and proxyd_config_last_reload_*: from the start, then per reload', async () => {
    const before = Math.floor(Date.now() / 1000);
    const metrics = createMetrics({ processMetrics: false });
    let t = await text(metrics);
    expect(sampleValue(t, 'proxyd_config_reloads_total{result="success"}')).toBe(0);
    expect(sampleValue(t, 'proxyd_config_reloads_total{result="failure"}')).toBe(0);
    expect(sampleValue(t, 'proxyd_config_last_reload_successful')).toBe(1);
    const started = sampleValue(t, 'proxyd_config_last_reload_success_timestamp_seconds') ?? 0;
    expect(started).toBeGreaterThanOrEqual(before);
    let ok = false;
    const reloader = countReloads(
      { reload: async () => (ok ? { ok: true, message: 'reloaded' } : { ok: false, errorText: 'Proxyfile:1:1: …' }) },
      metrics,
    );
    expect(await reloader.reload()).toEqual({ ok: false, errorText: 'Proxyfile:1:1: …' });
    t = await text(metrics);
    expect(sampleValue(t, 'proxyd_config_reloads_total{result="failure"}')).toBe(1);
    expect(sampleValue(t, 'proxyd_config_last_reload_successful')).toBe(0);
    expect(sampleValue(t, 'proxyd_config_last_reload_success_timestamp_seconds')).toBe(started);
    ok = true;
    await reloader.reload();
    t = await text(metrics);
    expect(sampleValue(t, 'proxyd_config_reloads_total{result="success"}')).toBe(1);
    expect(sampleValue(t, 'proxyd_config_last_reload_successful')).toBe(1);
    // A worker has none of them: reloads are the primary's.
    const worker = createMetrics({ role: 'worker', processMetrics: false });
    expect((await worker.snapshot()).map((m) => m.name).filter((name) => name.startsWith('proxyd_config_'))).toEqual(
      [],
    );
  });

  it('the primary sums the new series over its workers and bounds rate_limited to the admitted domains', async () => {
    // Each worker keeps up to 3 domains; the primary, after summing, 2.
    const workers = [
      createMetrics({ role: 'worker', processMetrics: false, maxDomains: 3 }),
      createMetrics({ role: 'worker', processMetrics: false, maxDomains: 3 }),
    ];
    const primary = createMetrics({ role: 'primary', processMetrics: false, maxDomains: 2 });
    primary.setWorkerSource(() => overIpc(workers));
    const [one, two] = workers as [WorkerMetrics, WorkerMetrics];
    one.setDataPlaneStatsSource(() => ({ requestsInFlight: 2, openConnections: 5 }));
    two.setDataPlaneStatsSource(() => ({ requestsInFlight: 1, openConnections: 4 }));
    for (const w of workers) {
      w.onRequest({ ...record('a.test', 200), method: 'POST', bytesReceived: 300, events: RequestEvent.CacheHit });
      w.onRequest({ ...record('a.test', 429), events: RequestEvent.RateLimited });
      w.onRequest({ ...record('a.test', 503), events: RequestEvent.ChallengeIssued });
      w.onRequest({ ...record('a.test', 204), events: RequestEvent.BeaconAccepted });
    }
    // The primary has room for a and one of b and c: c, the busier.
    two.onRequest({ ...record('b.test', 429), events: RequestEvent.RateLimited });
    for (let i = 0; i < 3; i++) two.onRequest({ ...record('c.test', 429), events: RequestEvent.RateLimited });
    primary.recordReload(false);
    const t = await primary.render();
    expect(
      sampleValue(t, 'proxyd_http_requests_total{domain="a.test",method="POST",protocol="h1",status_class="2xx"}'),
    ).toBe(2);
    expect(sampleValue(t, 'proxyd_request_size_bytes_bucket{le="256"}')).toBe(10);
    expect(sampleValue(t, 'proxyd_request_size_bytes_bucket{le="1024"}')).toBe(12);
    expect(sampleValue(t, 'proxyd_request_size_bytes_sum')).toBe(600);
    expect(sampleValue(t, 'proxyd_requests_in_flight')).toBe(3);
    expect(sampleValue(t, 'proxyd_open_connections')).toBe(9);
    expect(sampleValue(t, 'proxyd_cache_requests_total{result="hit"}')).toBe(2);
    expect(sampleValue(t, 'proxyd_under_attack_challenges_total{result="issued"}')).toBe(2);
    expect(sampleValue(t, 'proxyd_analytics_beacons_total{result="accepted"}')).toBe(2);
    expect(sampleValue(t, 'proxyd_rate_limited_total{domain="a.test"}')).toBe(2);
    expect(sampleValue(t, 'proxyd_rate_limited_total{domain="c.test"}')).toBe(3);
    expect(sampleValue(t, `proxyd_rate_limited_total{domain="${OTHER_DOMAIN}"}`)).toBe(1); // b.test's
    expect(
      sampleValue(
        t,
        `proxyd_http_requests_total{domain="${OTHER_DOMAIN}",method="GET",protocol="h1",status_class="4xx"}`,
      ),
    ).toBe(1); // b.test's too
    expect(t).not.toContain('domain="b.test"');
    expect(sampleValue(t, 'proxyd_config_reloads_total{result="failure"}')).toBe(1);
    expect(sampleValue(t, 'proxyd_config_last_reload_successful')).toBe(0);
    expect([...headerCounts(t).values()].every((n) => n === 1)).toBe(true);
    expect(promtool(t)).toBe('');
  });
});
