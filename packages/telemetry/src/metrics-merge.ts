import { type Metric, Registry } from 'prom-client';

/**
 * The metrics of a multi-core daemon (`--workers N`), merged in the primary:
 * each worker sends its registry as JSON ({@link MetricsSnapshot}, what
 * prom-client's `getMetricsAsJSON()` returns, as plain data), and the
 * primary merges them with its own into one exposition. Pure functions over
 * that JSON form, but for {@link DomainCap}, whose admitted domains persist
 * from scrape to scrape.
 */

/** How the values of one series from several processes become one (prom-client's names). */
export type Aggregator = 'sum' | 'first' | 'min' | 'max' | 'average' | 'omit';

/** One sample of a metric family: a histogram's `_bucket`, `_sum` and `_count` lines name themselves in `metricName`. */
export interface MetricSample {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}

/** One metric family as prom-client's `getMetricsAsJSON()` gives it, as plain data (structured-clone safe). */
export interface MetricJson {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary';
  /** The aggregator the sending process declared; the primary's {@link AGGREGATORS} win over it. */
  aggregator?: Aggregator;
  values: MetricSample[];
}

/** A process's metrics: what a worker answers the primary over IPC. */
export type MetricsSnapshot = MetricJson[];

/**
 * The aggregator of every metric the daemon exposes, chosen by the primary
 * (what the sender declared is used only for a name not listed here).
 * "Summed" includes the primary's own process: its process metrics are part
 * of the daemon's total.
 */
export const AGGREGATORS: Readonly<Record<string, Aggregator>> = {
  // Data plane, one count per worker: the daemon's count is the sum.
  proxyd_requests_total: 'sum',
  proxyd_request_duration_seconds: 'sum',
  proxyd_requests_by_protocol_total: 'sum',
  proxyd_http_requests_total: 'sum',
  proxyd_request_size_bytes: 'sum',
  proxyd_response_size_bytes: 'sum',
  proxyd_rate_limited_total: 'sum',
  proxyd_cache_requests_total: 'sum',
  proxyd_under_attack_challenges_total: 'sum',
  proxyd_analytics_beacons_total: 'sum',
  // Each worker's own requests and connections (the primary's are 0): the daemon's are the sum.
  proxyd_requests_in_flight: 'sum',
  proxyd_open_connections: 'sum',
  // The control plane's certificate cache (the primary's series) and each worker's (summed): distinct `cache` labels.
  proxyd_certificate_cache_requests_total: 'sum',
  proxyd_certificate_cache_evictions_total: 'sum',
  proxyd_certificate_cache_entries: 'sum',
  // Each worker's analytics collector drops its own requests.
  proxyd_analytics_dropped_requests_total: 'sum',
  // Each worker checks its pools itself: an upstream is in rotation (1) only
  // if every worker that has it keeps it in rotation, as one process reports
  // 0 for an upstream out of rotation in any of its pools.
  proxyd_upstream_healthy: 'min',
  // The primary's alone (control plane, admin API): never added to anything.
  proxyd_routes: 'first',
  proxyd_certificate_not_after_seconds: 'first',
  proxyd_acme_orders_total: 'first',
  proxyd_storage_reachable: 'first',
  proxyd_config_reloads_total: 'first',
  proxyd_config_last_reload_successful: 'first',
  proxyd_config_last_reload_success_timestamp_seconds: 'first',
  proxyd_admin_http_request_duration_seconds: 'first',
  // Process resources: the daemon's total, every process's included.
  process_cpu_user_seconds_total: 'sum',
  process_cpu_system_seconds_total: 'sum',
  process_cpu_seconds_total: 'sum',
  process_resident_memory_bytes: 'sum',
  process_virtual_memory_bytes: 'sum',
  process_heap_bytes: 'sum',
  nodejs_heap_size_total_bytes: 'sum',
  nodejs_heap_size_used_bytes: 'sum',
  nodejs_external_memory_bytes: 'sum',
  nodejs_heap_space_size_total_bytes: 'sum',
  nodejs_heap_space_size_used_bytes: 'sum',
  nodejs_heap_space_size_available_bytes: 'sum',
  nodejs_active_handles: 'sum',
  nodejs_active_requests: 'sum',
  nodejs_active_resources: 'sum',
  nodejs_gc_duration_seconds: 'sum',
  // The file-descriptor limit is per process: `open / max` stays an upper
  // bound of every process's ratio with the most open and the lowest limit.
  process_open_fds: 'max',
  process_max_fds: 'min',
  // The oldest process: the primary, which runs as long as the daemon.
  process_start_time_seconds: 'min',
  // One binary: every process runs the same Node.js.
  nodejs_version_info: 'first',
  // Event-loop delay: the worst process (one saturated worker is what an
  // alert must see, an average hides it); the minimum is the least of all.
  nodejs_eventloop_lag_seconds: 'max',
  nodejs_eventloop_lag_min_seconds: 'min',
  nodejs_eventloop_lag_max_seconds: 'max',
  nodejs_eventloop_lag_mean_seconds: 'max',
  nodejs_eventloop_lag_stddev_seconds: 'max',
  nodejs_eventloop_lag_p50_seconds: 'max',
  nodejs_eventloop_lag_p90_seconds: 'max',
  nodejs_eventloop_lag_p99_seconds: 'max',
};

/** Where the primary and its workers' metrics pass through {@link mergeSnapshots}. */
export interface MergeOptions {
  /**
   * Bounds `proxyd_requests_total{domain}` after summing (see
   * {@link DomainCap}), and `proxyd_rate_limited_total{domain}` and
   * `proxyd_http_requests_total{domain,…}` to the same domains.
   */
  domains?: DomainCap;
  /** At most this many `proxyd_upstream_healthy{upstream}` series, as each process keeps (default: no bound). */
  maxUpstreams?: number;
}

const REDUCERS: Record<Exclude<Aggregator, 'omit'>, (values: readonly number[]) => number> = {
  sum: (values) => values.reduce((a, b) => a + b, 0),
  first: (values) => values[0] ?? 0,
  min: (values) => values.reduce((a, b) => Math.min(a, b), Number.POSITIVE_INFINITY),
  max: (values) => values.reduce((a, b) => Math.max(a, b), Number.NEGATIVE_INFINITY),
  average: (values) => values.reduce((a, b) => a + b, 0) / values.length,
};

/**
 * Copies `getMetricsAsJSON()`'s answer into plain data: prom-client passes
 * each metric object's own fields through (a custom metric's `get` function
 * among them, which structured clone refuses) and types `type` as an enum.
 */
export function toSnapshot(
  metrics: readonly {
    name: string;
    help: string;
    type: unknown;
    aggregator?: unknown;
    values: readonly { value: number; labels: object; metricName?: string }[];
  }[],
): MetricsSnapshot {
  return metrics.map((metric) => {
    const plain: MetricJson = {
      name: metric.name,
      help: metric.help,
      type: String(metric.type) as MetricJson['type'],
      values: metric.values.map((sample) => {
        const labels: Record<string, string | number> = {};
        for (const [key, value] of Object.entries(sample.labels)) {
          if (typeof value === 'string' || typeof value === 'number') labels[key] = value;
        }
        return sample.metricName === undefined
          ? { value: sample.value, labels }
          : { value: sample.value, labels, metricName: sample.metricName };
      }),
    };
    if (typeof metric.aggregator === 'string') plain.aggregator = metric.aggregator as Aggregator;
    return plain;
  });
}

/** The same string for the same label set, whatever the key order and whether `le` is a number or a string. */
function labelKey(labels: Record<string, string | number>): string {
  return JSON.stringify(
    Object.keys(labels)
      .sort()
      .map((key) => [key, String(labels[key])]),
  );
}

/**
 * Merges the snapshots of several processes into one: families by name (in
 * order of first appearance, so the first snapshot's order leads), series by
 * sample name and label set, each reduced by its family's aggregator
 * ({@link AGGREGATORS}). A family's help and type are the first snapshot's
 * that has it. Pass the primary's own snapshot first: `first` takes it.
 */
export function mergeSnapshots(snapshots: readonly MetricsSnapshot[], options: MergeOptions = {}): MetricsSnapshot {
  const families = new Map<string, MetricJson[]>();
  for (const snapshot of snapshots) {
    for (const metric of snapshot) {
      const same = families.get(metric.name);
      if (same) same.push(metric);
      else families.set(metric.name, [metric]);
    }
  }
  const merged: MetricsSnapshot = [];
  for (const [name, metrics] of families) {
    const head = metrics[0] as MetricJson;
    const aggregator = AGGREGATORS[name] ?? head.aggregator ?? 'sum';
    if (aggregator === 'omit') continue;
    const reduce = REDUCERS[aggregator];
    const series = new Map<string, { sample: MetricSample; values: number[] }>();
    for (const metric of metrics) {
      if (metric.type !== head.type) continue;
      for (const sample of metric.values) {
        const key = `${sample.metricName ?? ''} ${labelKey(sample.labels)}`;
        const entry = series.get(key);
        if (entry) entry.values.push(sample.value);
        else series.set(key, { sample, values: [sample.value] });
      }
    }
    let values: MetricSample[] = [...series.values()].map(({ sample, values }) => ({
      ...sample,
      labels: { ...sample.labels },
      value: reduce(values),
    }));
    if (name === 'proxyd_upstream_healthy' && options.maxUpstreams !== undefined) {
      values = firstLabelValues(values, 'upstream', options.maxUpstreams);
    }
    merged.push({ name, help: head.help, type: head.type, aggregator, values });
  }
  const { domains } = options;
  if (domains) {
    // Requests first: the domains it admits are those the other family keeps.
    const requests = merged.find((m) => m.name === 'proxyd_requests_total');
    if (requests) requests.values = domains.apply(requests.values);
    for (const name of ['proxyd_rate_limited_total', 'proxyd_http_requests_total']) {
      const family = merged.find((m) => m.name === name);
      if (family) family.values = domains.fold(family.values);
    }
  }
  return merged;
}

/** The samples of the first `max` distinct values of `label` (a gauge's bound: the rest are left out). */
export function firstLabelValues(values: readonly MetricSample[], label: string, max: number): MetricSample[] {
  const kept = new Set<string>();
  return values.filter((sample) => {
    const value = String(sample.labels[label]);
    if (kept.has(value)) return true;
    if (kept.size >= max) return false;
    kept.add(value);
    return true;
  });
}

/**
 * The `domain` label bound of the merged `proxyd_requests_total`. Each
 * worker admits at most `maxDomains` domains of its own and counts the rest
 * under `_other`, but two workers may admit different ones, so their union
 * can reach N × `maxDomains`. After summing, this admits again, and keeps
 * what it admitted from one scrape to the next (as a worker does):
 *
 * - at most `maxDomains` domain values, plus `otherDomain`;
 * - nothing is lost: per status class, the series add up to the sum of
 *   every worker's requests;
 * - a domain admitted keeps its series; one refused stays in `_other`: so
 *   every series only grows while no worker restarts (a counter, for
 *   `rate()`);
 * - when several new domains compete for the last places, the busiest win;
 * - a domain's series counts the requests the workers counted under its
 *   name: a worker whose own cap was full when the domain first came counted
 *   its requests in `_other`, where they stay (so a domain's value is a lower
 *   bound, and `_other` holds the rest).
 */
export class DomainCap {
  readonly #maxDomains: number;
  readonly #otherDomain: string;
  readonly #admitted = new Set<string>();

  constructor(options: { maxDomains: number; otherDomain: string }) {
    this.#maxDomains = options.maxDomains;
    this.#otherDomain = options.otherDomain;
  }

  /**
   * Another family's summed samples with a `domain` label: those of the
   * domains {@link apply} admitted kept, the rest folded into
   * `otherDomain`; admits none.
   */
  fold(values: readonly MetricSample[]): MetricSample[] {
    return this.#fold(values);
  }

  /** `proxyd_requests_total`'s summed samples, the domains past the cap folded into `otherDomain`. */
  apply(values: readonly MetricSample[]): MetricSample[] {
    const other = this.#otherDomain;
    const candidates = new Map<string, number>();
    for (const { labels, value } of values) {
      const domain = String(labels.domain);
      if (domain !== other && !this.#admitted.has(domain))
        candidates.set(domain, (candidates.get(domain) ?? 0) + value);
    }
    const room = this.#maxDomains - this.#admitted.size;
    if (candidates.size > 0 && room > 0) {
      const busiest = [...candidates].sort(([a, n], [b, m]) => m - n || (a < b ? -1 : a > b ? 1 : 0));
      for (const [domain] of busiest.slice(0, room)) this.#admitted.add(domain);
    }
    return this.#fold(values);
  }

  #fold(values: readonly MetricSample[]): MetricSample[] {
    const other = this.#otherDomain;
    const out: MetricSample[] = [];
    const folded = new Map<string, MetricSample>();
    for (const sample of values) {
      const domain = String(sample.labels.domain);
      if (domain !== other && this.#admitted.has(domain)) {
        out.push(sample);
        continue;
      }
      const labels = { ...sample.labels, domain: other };
      const key = labelKey(labels);
      const into = folded.get(key);
      if (into) into.value += sample.value;
      else {
        const first = { ...sample, labels };
        folded.set(key, first);
        out.push(first);
      }
    }
    return out;
  }
}

/** The text exposition (format 0.0.4) of a snapshot, by prom-client's own formatter. */
export function renderSnapshot(snapshot: MetricsSnapshot): Promise<string> {
  const registry = new Registry();
  for (const metric of snapshot) {
    // The registry reads any object with a name and get(); its typings ask for a full Metric.
    registry.registerMetric({ ...metric, get: async () => metric } as unknown as Metric);
  }
  return registry.metrics();
}
