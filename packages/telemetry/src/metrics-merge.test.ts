import { spawnSync } from 'node:child_process';
import v8 from 'node:v8';
import { type Metric, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetrics } from './metrics.js';
import {
  AGGREGATORS,
  DomainCap,
  firstLabelValues,
  type MetricJson,
  type MetricSample,
  type MetricsSnapshot,
  mergeSnapshots,
  renderSnapshot,
  toSnapshot,
} from './metrics-merge.js';
import { RequestMetrics } from './request-metrics.js';

const gauge = (name: string, value: number, labels: MetricSample['labels'] = {}): MetricJson => ({
  name,
  help: `${name} help`,
  type: 'gauge',
  aggregator: 'sum',
  values: [{ value, labels }],
});

/** Each family's samples as `metricName{labels} value`, labels in key order. */
function lines(snapshot: MetricsSnapshot): Record<string, number> {
  const out: Record<string, number> = {};
  for (const metric of snapshot) {
    for (const { value, labels, metricName } of metric.values) {
      const keys = Object.keys(labels).sort();
      const printed = keys.map((k) => `${k}=${labels[k]}`).join(',');
      out[`${metricName ?? metric.name}{${printed}}`] = value;
    }
  }
  return out;
}

describe('mergeSnapshots', () => {
  it('sums counters and histogram samples by sample name and label set, whatever the label order or le type', () => {
    const requests = (a: number, b: number): MetricJson => ({
      name: 'proxyd_requests_total',
      help: 'h',
      type: 'counter',
      values: [
        { value: a, labels: { domain: 'a.test', status_class: '2xx' } },
        { value: b, labels: { status_class: '2xx', domain: 'b.test' } },
      ],
    });
    const histogram = (le1: number, inf: number, sum: number): MetricJson => ({
      name: 'proxyd_request_duration_seconds',
      help: 'h',
      type: 'histogram',
      values: [
        { value: le1, labels: { le: 0.1, status_class: '2xx' }, metricName: 'proxyd_request_duration_seconds_bucket' },
        {
          value: inf,
          labels: { le: '+Inf', status_class: '2xx' },
          metricName: 'proxyd_request_duration_seconds_bucket',
        },
        { value: sum, labels: { status_class: '2xx' }, metricName: 'proxyd_request_duration_seconds_sum' },
        { value: inf, labels: { status_class: '2xx' }, metricName: 'proxyd_request_duration_seconds_count' },
      ],
    });
    const other = histogram(4, 5, 0.75);
    other.values[0] = { ...(other.values[0] as MetricSample), labels: { status_class: '2xx', le: '0.1' } };
    const merged = mergeSnapshots([
      [requests(1, 2), histogram(1, 2, 0.5)],
      [requests(10, 20), other],
    ]);
    expect(lines(merged)).toEqual({
      'proxyd_requests_total{domain=a.test,status_class=2xx}': 11,
      'proxyd_requests_total{domain=b.test,status_class=2xx}': 22,
      'proxyd_request_duration_seconds_bucket{le=0.1,status_class=2xx}': 5,
      'proxyd_request_duration_seconds_bucket{le=+Inf,status_class=2xx}': 7,
      'proxyd_request_duration_seconds_sum{status_class=2xx}': 1.25,
      'proxyd_request_duration_seconds_count{status_class=2xx}': 7,
    });
    expect(merged.map((m) => m.name)).toEqual(['proxyd_requests_total', 'proxyd_request_duration_seconds']);
  });

  it('aggregates process metrics as chosen: resources summed, start time min, version first, lag max, fds per process', () => {
    const proc = (n: number): MetricsSnapshot => [
      gauge('process_resident_memory_bytes', 100 * n),
      gauge('process_start_time_seconds', 1000 + n),
      gauge('nodejs_version_info', 1, { version: `v24.${n}.0` }),
      gauge('nodejs_eventloop_lag_p99_seconds', n / 100),
      gauge('nodejs_eventloop_lag_min_seconds', 0.001 * n),
      gauge('process_open_fds', 10 * n),
      gauge('process_max_fds', 1000 * n),
      { ...gauge('process_cpu_seconds_total', n), type: 'counter' },
    ];
    const merged = lines(mergeSnapshots([proc(2), proc(1), proc(3)]));
    expect(merged).toEqual({
      'process_resident_memory_bytes{}': 600,
      'process_start_time_seconds{}': 1001,
      'nodejs_version_info{version=v24.1.0}': 1,
      'nodejs_version_info{version=v24.3.0}': 1,
      'nodejs_version_info{version=v24.2.0}': 1,
      'nodejs_eventloop_lag_p99_seconds{}': 0.03,
      'nodejs_eventloop_lag_min_seconds{}': 0.001,
      'process_open_fds{}': 30,
      'process_max_fds{}': 1000,
      'process_cpu_seconds_total{}': 6,
    });
  });

  it('the primary-only families come from the first snapshot, never added to', () => {
    const routes = (n: number): MetricJson => ({ ...gauge('proxyd_routes', n, { origin: 'api' }) });
    expect(lines(mergeSnapshots([[routes(5)], [routes(7)]]))).toEqual({ 'proxyd_routes{origin=api}': 5 });
  });

  it('upstream health: 1 only when every process that has the upstream says 1', () => {
    const health = (a: number, b?: number): MetricsSnapshot => [
      {
        ...gauge('proxyd_upstream_healthy', a, { upstream: 'u1:80' }),
        values: [
          { value: a, labels: { upstream: 'u1:80' } },
          ...(b === undefined ? [] : [{ value: b, labels: { upstream: 'u2:80' } }]),
        ],
      },
    ];
    expect(lines(mergeSnapshots([health(1, 1), health(0), health(1)]))).toEqual({
      'proxyd_upstream_healthy{upstream=u1:80}': 0,
      'proxyd_upstream_healthy{upstream=u2:80}': 1,
    });
  });

  it("a family not listed keeps its sender's aggregator; omit leaves it out", () => {
    const merged = mergeSnapshots([
      [
        { ...gauge('custom_max', 1), aggregator: 'max' },
        { ...gauge('custom_omitted', 1), aggregator: 'omit' },
        gauge('custom_sum', 1),
      ],
      [{ ...gauge('custom_max', 4), aggregator: 'max' }, gauge('custom_sum', 4)],
    ]);
    expect(lines(merged)).toEqual({ 'custom_max{}': 4, 'custom_sum{}': 5 });
  });

  it('every metric a worker, the primary or the admin app exposes has an aggregator chosen', async () => {
    // The admin app's histogram (fastify-metrics) goes into the primary's registry.
    const names = new Set<string>(['proxyd_admin_http_request_duration_seconds']);
    const worker = createMetrics({ role: 'worker' });
    for (const metric of await worker.snapshot()) names.add(metric.name);
    const primary = createMetrics({ role: 'primary' });
    for (const metric of await primary.registry.getMetricsAsJSON()) names.add(metric.name);
    expect(names.size).toBeGreaterThan(30);
    expect([...names].filter((name) => AGGREGATORS[name] === undefined)).toEqual([]);
  });
});

describe('DomainCap', () => {
  const sample = (domain: string, value: number, cls = '2xx'): MetricSample => ({
    value,
    labels: { domain, status_class: cls },
  });

  it('admits the busiest new domains up to the cap, folds the rest into _other, loses no count', () => {
    const cap = new DomainCap({ maxDomains: 2, otherDomain: '_other' });
    const out = cap.apply([
      sample('_other', 3),
      sample('_other', 1, '5xx'),
      sample('a', 1),
      sample('b', 5),
      sample('c', 4),
      sample('a', 2, '5xx'),
    ]);
    expect(out).toEqual([sample('_other', 4), sample('_other', 3, '5xx'), sample('b', 5), sample('c', 4)]);
  });

  it('keeps what it admitted from one scrape to the next: a domain never moves in or out of _other', () => {
    const cap = new DomainCap({ maxDomains: 2, otherDomain: '_other' });
    expect(cap.apply([sample('a', 1), sample('b', 1), sample('c', 1)])).toEqual([
      sample('a', 1),
      sample('b', 1),
      sample('_other', 1),
    ]);
    // c is now the busiest: still in _other, whose count only grows.
    expect(cap.apply([sample('a', 1), sample('b', 1), sample('c', 50), sample('d', 1)])).toEqual([
      sample('a', 1),
      sample('b', 1),
      sample('_other', 51),
    ]);
  });

  it('leaves room for later domains while under the cap', () => {
    const cap = new DomainCap({ maxDomains: 3, otherDomain: '_other' });
    cap.apply([sample('a', 1)]);
    expect(cap.apply([sample('a', 2), sample('b', 1), sample('c', 1)]).map((s) => s.labels.domain)).toEqual([
      'a',
      'b',
      'c',
    ]);
  });
});

describe('firstLabelValues', () => {
  it('keeps every sample of the first max label values', () => {
    const s = (upstream: string): MetricSample => ({ value: 1, labels: { upstream } });
    expect(firstLabelValues([s('x'), s('y'), s('x'), s('z')], 'upstream', 2)).toEqual([s('x'), s('y'), s('x')]);
  });
});

describe('toSnapshot and renderSnapshot', () => {
  it("makes getMetricsAsJSON's answer structured-clone safe (a custom metric's get() is in it)", async () => {
    const registry = new Registry();
    new RequestMetrics({ durationBuckets: [0.1], maxDomains: 10, otherDomain: '_other' }).register(registry);
    // A custom metric that answers get() with itself spread, its get() included.
    const custom = { name: 'custom_total', help: 'h', type: 'counter', aggregator: 'sum', get: async () => custom };
    Object.assign(custom, { values: [{ value: 1, labels: {} }] });
    registry.registerMetric(custom as unknown as Metric);
    const raw = await registry.getMetricsAsJSON();
    expect(() => v8.serialize(raw)).toThrow(/could not be cloned/);
    const snapshot = toSnapshot(raw);
    expect(v8.deserialize(v8.serialize(snapshot))).toStrictEqual(snapshot);
    expect(snapshot[0]).toMatchObject({ name: 'proxyd_requests_total', type: 'counter', aggregator: 'sum' });
    expect(snapshot.at(-1)).toEqual({
      name: 'custom_total',
      help: 'h',
      type: 'counter',
      aggregator: 'sum',
      values: [{ value: 1, labels: {} }],
    });
  });

  it('prints one HELP and TYPE per family, and passes promtool', async () => {
    const snapshot = mergeSnapshots([
      [gauge('proxyd_routes', 1, { origin: 'api' }), gauge('process_resident_memory_bytes', 1)],
      [gauge('process_resident_memory_bytes', 2)],
    ]);
    const text = await renderSnapshot(snapshot);
    expect(text).toBe(
      [
        '# HELP proxyd_routes proxyd_routes help',
        '# TYPE proxyd_routes gauge',
        'proxyd_routes{origin="api"} 1',
        '',
        '# HELP process_resident_memory_bytes process_resident_memory_bytes help',
        '# TYPE process_resident_memory_bytes gauge',
        'process_resident_memory_bytes 3',
        '',
      ].join('\n'),
    );
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(`${check.stdout}${check.stderr}`.trim()).toBe('');
    expect(check.status).toBe(0);
  });
});
