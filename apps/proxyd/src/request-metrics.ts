import type { Registry } from 'prom-client';

/** Status classes, in label order; `other` is a client that left before a status. */
export const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx', 'other'] as const;

/** Index of a status in {@link STATUS_CLASSES}. */
export function statusClass(status: number): number {
  const cls = Math.floor(status / 100);
  return cls >= 1 && cls <= 5 ? cls - 1 : 5;
}

/** What prom-client's registry reads from a metric object at each scrape. */
interface ExposedMetric {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  values: { value: number; labels: Record<string, string | number>; metricName?: string }[];
}

/**
 * The two per-request series, counted in typed arrays and turned into
 * Prometheus values only when scraped:
 *
 * - `proxyd_requests_total{domain,status_class}`
 * - `proxyd_request_duration_seconds{status_class}` (histogram)
 *
 * prom-client's own counters and histograms hash their label set on every
 * increment (a third of the metrics hook's cost per request); here a
 * request costs one map lookup and three array increments. The registry
 * sees two ordinary metric objects (`get()` at scrape), so the text
 * exposition is prom-client's.
 */
export class RequestMetrics {
  readonly #buckets: readonly number[];
  readonly #maxDomains: number;
  readonly #otherDomain: string;
  /** Per domain label: requests by status class. */
  readonly #rows = new Map<string, Float64Array>();
  readonly #other: Float64Array;
  /** Per status class: bucket counts (not cumulative; the last slot is +Inf), sum and count. */
  readonly #bucketCounts: Float64Array[];
  readonly #sums = new Float64Array(STATUS_CLASSES.length);
  readonly #counts = new Float64Array(STATUS_CLASSES.length);

  constructor(options: { buckets: readonly number[]; maxDomains: number; otherDomain: string }) {
    this.#buckets = [...options.buckets].sort((a, b) => a - b);
    this.#maxDomains = options.maxDomains;
    this.#otherDomain = options.otherDomain;
    this.#other = new Float64Array(STATUS_CLASSES.length);
    this.#rows.set(this.#otherDomain, this.#other);
    this.#bucketCounts = STATUS_CLASSES.map(() => new Float64Array(this.#buckets.length + 1));
  }

  /** Counts one request of `domain` with `status` that took `seconds`. */
  observe(domain: string, status: number, seconds: number): void {
    let row = this.#rows.get(domain);
    if (row === undefined) {
      if (this.#rows.size > this.#maxDomains) row = this.#other;
      else {
        row = new Float64Array(STATUS_CLASSES.length);
        this.#rows.set(domain, row);
      }
    }
    const cls = statusClass(status);
    row[cls] = (row[cls] ?? 0) + 1;
    const buckets = this.#buckets;
    let i = 0;
    while (i < buckets.length && seconds > (buckets[i] as number)) i++;
    const counts = this.#bucketCounts[cls] as Float64Array;
    counts[i] = (counts[i] ?? 0) + 1;
    this.#sums[cls] = (this.#sums[cls] ?? 0) + seconds;
    this.#counts[cls] = (this.#counts[cls] ?? 0) + 1;
  }

  /** Registers both series in `registry`. */
  register(registry: Registry): void {
    const counter = {
      name: 'proxyd_requests_total',
      help: 'Requests answered by the data plane, by route domain and status class.',
      type: 'counter' as const,
      aggregator: 'sum' as const,
      get: async (): Promise<ExposedMetric> => ({ ...counter, values: this.#counterValues() }),
    };
    const histogram = {
      name: 'proxyd_request_duration_seconds',
      help: 'Time from request start to the last response byte, by status class.',
      type: 'histogram' as const,
      aggregator: 'sum' as const,
      get: async (): Promise<ExposedMetric> => ({ ...histogram, values: this.#histogramValues() }),
    };
    // The registry accepts any object with a name and get(); its typings ask for a full Metric.
    registry.registerMetric(counter as unknown as Parameters<Registry['registerMetric']>[0]);
    registry.registerMetric(histogram as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  #counterValues(): ExposedMetric['values'] {
    const values: ExposedMetric['values'] = [];
    for (const [domain, row] of this.#rows) {
      row.forEach((n, cls) => {
        values.push({ value: n, labels: { domain, status_class: STATUS_CLASSES[cls] as string } });
      });
    }
    return values;
  }

  #histogramValues(): ExposedMetric['values'] {
    const values: ExposedMetric['values'] = [];
    const name = 'proxyd_request_duration_seconds';
    STATUS_CLASSES.forEach((label, cls) => {
      const counts = this.#bucketCounts[cls] as Float64Array;
      let cumulative = 0;
      this.#buckets.forEach((le, i) => {
        cumulative += counts[i] ?? 0;
        values.push({ value: cumulative, labels: { le, status_class: label }, metricName: `${name}_bucket` });
      });
      values.push({
        value: this.#counts[cls] ?? 0,
        labels: { le: '+Inf', status_class: label },
        metricName: `${name}_bucket`,
      });
      values.push({ value: this.#sums[cls] ?? 0, labels: { status_class: label }, metricName: `${name}_sum` });
      values.push({ value: this.#counts[cls] ?? 0, labels: { status_class: label }, metricName: `${name}_count` });
    });
    return values;
  }
}
