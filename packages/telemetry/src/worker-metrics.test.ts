import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { RequestEvent, type RequestRecord } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import { createMetrics, type ProxydMetrics } from './metrics.js';
import { type MetricJson, type MetricsSnapshot, toSnapshot } from './metrics-merge.js';
import { createWorkerMetrics } from './worker-metrics.js';

// A worker's metrics are plain data, without prom-client (issue 32); the
// reference is what a prom-client registry holds for the same process: the
// one-process daemon's (`single`) less the control plane's families, which
// is what a worker's registry held before.

const CONTROL_PLANE_ONLY = new Set([
  'proxyd_config_reloads_total',
  'proxyd_config_last_reload_successful',
  'proxyd_config_last_reload_success_timestamp_seconds',
  'proxyd_routes',
  'proxyd_certificate_not_after_seconds',
  'proxyd_storage_reachable',
  'proxyd_acme_orders_total',
]);

/** Families whose values are the process's own state now (CPU, memory, handles, GCs so far): compared by shape. */
const PROCESS_STATE = /^(process_|nodejs_)/;

const record = (domain: string | null, status: number, extra: Partial<RequestRecord> = {}): RequestRecord => ({
  host: domain ?? 'unknown.test',
  domain,
  analytics: true,
  method: 'GET',
  path: '/',
  status,
  bytesSent: 700,
  durationMs: 3,
  clientIp: '127.0.0.1',
  referer: undefined,
  userAgent: undefined,
  contentType: undefined,
  startedAt: Date.now(),
  ...extra,
});

/** Feeds both the same traffic and sources. */
function feed(
  metrics: Pick<
    ProxydMetrics,
    | 'onRequest'
    | 'setUpstreamHealthSource'
    | 'setAnalyticsDroppedSource'
    | 'setDataPlaneStatsSource'
    | 'setCertificateCacheSource'
  >,
) {
  metrics.onRequest(record('a.test', 200));
  metrics.onRequest(record('a.test', 503, { method: 'POST', bytesReceived: 5000, protocol: 'h2' }));
  metrics.onRequest(record(null, 404, { events: RequestEvent.CacheMiss }));
  metrics.onRequest(record('b.test', 429, { events: RequestEvent.RateLimited }));
  metrics.onRequest(record('b.test', 200, { method: 'BREW', events: RequestEvent.BeaconRejected }));
  metrics.setUpstreamHealthSource(() => [
    { upstream: '127.0.0.1:1', healthy: true },
    { upstream: '127.0.0.1:2', healthy: false },
    { upstream: '127.0.0.1:1', healthy: false },
  ]);
  metrics.setAnalyticsDroppedSource(() => 7);
  metrics.setDataPlaneStatsSource(() => ({ requestsInFlight: 3, openConnections: 11 }));
  metrics.setCertificateCacheSource('worker', () => ({ hits: 5, misses: 2, evictions: 1, size: 9 }));
}

/** A family's shape: its head, and each sample's name and label names (values and label values left out). */
const shape = (metric: MetricJson) => ({
  name: metric.name,
  help: metric.help,
  type: metric.type,
  samples: [...new Set(metric.values.map((s) => `${s.metricName ?? metric.name} ${Object.keys(s.labels).join(',')}`))],
});

async function reference(maxDomains?: number): Promise<MetricsSnapshot> {
  const single = createMetrics(maxDomains === undefined ? {} : { maxDomains });
  feed(single);
  return toSnapshot(await single.registry.getMetricsAsJSON()).filter((m) => !CONTROL_PLANE_ONLY.has(m.name));
}

describe('a worker’s metrics without prom-client (issue 32)', () => {
  it('has the families of a prom-client registry, in its order, with the same help, types and label names', async () => {
    const worker = createWorkerMetrics();
    feed(worker);
    await new Promise((resolve) => setTimeout(resolve, 30)); // event-loop delay samples
    const [mine, theirs] = [await worker.snapshot(), await reference()];
    expect(mine.map((m) => m.name)).toEqual(theirs.map((m) => m.name));
    for (const [i, metric] of mine.entries()) {
      const other = theirs[i] as MetricJson;
      if (PROCESS_STATE.test(metric.name)) {
        // The same sample names and label names wherever both have samples (handles and GC kinds come and go).
        expect({ ...shape(metric), samples: [] }).toEqual({ ...shape(other), samples: [] });
        if (metric.values.length > 0 && other.values.length > 0) {
          expect(shape(metric).samples[0]).toEqual(shape(other).samples[0]);
        }
      } else {
        // The data plane's families: every sample, value and label, equal.
        expect(metric).toEqual({ ...other, aggregator: 'sum' });
      }
    }
    const one = (name: string) => mine.find((m) => m.name === name)?.values ?? [];
    expect(one('nodejs_version_info')).toEqual(
      (theirs.find((m) => m.name === 'nodejs_version_info') as MetricJson).values,
    );
    expect(one('process_start_time_seconds')).toEqual(
      (theirs.find((m) => m.name === 'process_start_time_seconds') as MetricJson).values,
    );
    expect((one('process_resident_memory_bytes')[0]?.value ?? 0) > 10_000_000).toBe(true);
    expect((one('process_max_fds')[0]?.value ?? 0) > 0).toBe(true);
    expect(one('nodejs_heap_space_size_used_bytes').map((s) => s.labels.space)).toContain('old');
  });

  it('caps domains and upstreams as the registry does', async () => {
    const worker = createWorkerMetrics({ maxDomains: 1, processMetrics: false });
    feed(worker);
    const theirs = (await reference(1)).filter((m) => !PROCESS_STATE.test(m.name));
    expect(await worker.snapshot()).toEqual(theirs.map((m) => ({ ...m, aggregator: 'sum' })));
  });

  it('counts its CPU time, garbage collections and event-loop delay from one snapshot to the next', async () => {
    const worker = createWorkerMetrics();
    await worker.snapshot();
    const end = Date.now() + 30;
    while (Date.now() < end) {} // busy: CPU time, and a delayed event loop
    const garbage: unknown[] = [];
    for (let i = 0; i < 200_000; i++) garbage.push({ i });
    // A collection for certain: unit test files share one process (isolate: false), whose young generation may
    // hold those objects without one. V8's own gc(), reached the documented way for a process without --expose-gc.
    setFlagsFromString('--expose-gc');
    (runInNewContext('gc') as () => void)();
    await new Promise((resolve) => setTimeout(resolve, 30));
    const snapshot = await worker.snapshot();
    const value = (name: string) => snapshot.find((m) => m.name === name)?.values[0]?.value ?? Number.NaN;
    expect(value('process_cpu_seconds_total')).toBeGreaterThanOrEqual(0.02);
    expect(value('process_cpu_seconds_total')).toBeCloseTo(
      value('process_cpu_user_seconds_total') + value('process_cpu_system_seconds_total'),
      9,
    );
    expect(value('nodejs_eventloop_lag_max_seconds')).toBeGreaterThan(0);
    const gc = snapshot.find((m) => m.name === 'nodejs_gc_duration_seconds')?.values ?? [];
    expect(gc.some((s) => s.metricName === 'nodejs_gc_duration_seconds_count' && s.value > 0)).toBe(true);
    // Nothing sampled since: the statistics read 0, never NaN.
    const again = await worker.snapshot();
    expect(again.find((m) => m.name === 'nodejs_eventloop_lag_mean_seconds')?.values).toEqual([
      { value: 0, labels: {} },
    ]);
    expect(garbage.length).toBe(200_000);
  });
});
