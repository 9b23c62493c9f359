import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { RequestRecord } from '@proxyd/proxy-core';
import { describe, expect, it } from 'vitest';
import { createMetrics, OTHER_DOMAIN, UNROUTED_DOMAIN } from './metrics.js';

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
  });
});
