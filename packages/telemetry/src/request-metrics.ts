import type { RequestRecord } from '@proxyd/model';
import { RequestEvent } from '@proxyd/model/rules';
import type { Registry } from 'prom-client';

/** Status classes, in label order; `other` is a client that left before a status. */
export const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx', 'other'] as const;

/** Index of a status in {@link STATUS_CLASSES}. */
export function statusClass(status: number): number {
  const cls = Math.floor(status / 100);
  return cls >= 1 && cls <= 5 ? cls - 1 : 5;
}

/** The `method` label's values: the methods of RFC 9110 and PATCH; any other is `OTHER`. */
export const METHODS = [
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'DELETE',
  'PATCH',
  'OPTIONS',
  'CONNECT',
  'TRACE',
  'OTHER',
] as const;

/** Index of a request method in {@link METHODS} (case-sensitive, as RFC 9110 §9.1 says). */
export function methodIndex(method: string): number {
  switch (method) {
    case 'GET':
      return 0;
    case 'HEAD':
      return 1;
    case 'POST':
      return 2;
    case 'PUT':
      return 3;
    case 'DELETE':
      return 4;
    case 'PATCH':
      return 5;
    case 'OPTIONS':
      return 6;
    case 'CONNECT':
      return 7;
    case 'TRACE':
      return 8;
    default:
      return 9;
  }
}

/** `proxyd_request_duration_seconds` buckets, s: from 100 µs (a cache hit, a canned answer) to 30 s. */
export const DURATION_BUCKETS: readonly number[] = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];

/** `proxyd_request_size_bytes` and `proxyd_response_size_bytes` buckets: 256 B × 4ⁿ to 4 MiB (Caddy's). */
export const SIZE_BUCKETS: readonly number[] = [256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304];

/**
 * The labelled counters of {@link RequestEvent} bits: each family's label
 * values, and the bit each counts. A family's series all appear with the
 * first event of any of them (so a ratio such as hits / (hits + misses) has
 * both sides), never before.
 */
const EVENT_FAMILIES = [
  {
    name: 'proxyd_cache_requests_total',
    help: 'Cacheable requests of sites with cache, by result: hit (answered from the cache), miss (forwarded).',
    results: [
      ['hit', RequestEvent.CacheHit],
      ['miss', RequestEvent.CacheMiss],
    ],
  },
  {
    name: 'proxyd_under_attack_challenges_total',
    help: 'under_attack challenges: issued (the page served), passed (a solution accepted, clearance cookie set), failed (a solution refused).',
    results: [
      ['issued', RequestEvent.ChallengeIssued],
      ['passed', RequestEvent.ChallengePassed],
      ['failed', RequestEvent.ChallengeFailed],
    ],
  },
  {
    name: 'proxyd_analytics_beacons_total',
    help: 'Analytics beacons (Web Vitals) by result: accepted (counted), rejected (method, rate, size, syntax or token).',
    results: [
      ['accepted', RequestEvent.BeaconAccepted],
      ['rejected', RequestEvent.BeaconRejected],
    ],
  },
] as const;

/** Every bit {@link EVENT_FAMILIES} counts, in one array: index i counts bit `EVENT_BITS[i]`. */
const EVENT_BITS: readonly number[] = EVENT_FAMILIES.flatMap((f) => f.results.map(([, bit]) => bit));

/** The `protocol` label's values, by `RequestRecord.protocol`. */
const PROTOCOLS = ['h1', 'h2'] as const;

/**
 * Per domain: requests by status class, the requests `rate_limit` refused,
 * then requests by method × protocol × status class
 * (`proxyd_http_requests_total`; {@link detailSlot}).
 */
const RATE_LIMITED = STATUS_CLASSES.length;
const DETAIL = STATUS_CLASSES.length + 1;
const ROW_LENGTH = DETAIL + METHODS.length * PROTOCOLS.length * STATUS_CLASSES.length;

/** The row slot of (method, protocol, status class) indices. */
function detailSlot(method: number, protocol: number, cls: number): number {
  return DETAIL + (method * PROTOCOLS.length + protocol) * STATUS_CLASSES.length + cls;
}

/** What prom-client's registry reads from a metric object at each scrape. */
interface ExposedMetric {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  values: Sample[];
}

type Sample = { value: number; labels: Record<string, string | number>; metricName?: string };

/** One histogram's counts: per bucket (not cumulative; the last slot is +Inf), sum and count. */
class Buckets {
  readonly #bounds: readonly number[];
  readonly #counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(bounds: readonly number[]) {
    this.#bounds = bounds;
    this.#counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    this.#counts[i] = (this.#counts[i] ?? 0) + 1;
    this.sum += value;
    this.count++;
  }

  /** The `_bucket`, `_sum` and `_count` samples of `name`, each with `labels` (plus `le`). */
  samples(name: string, labels: Record<string, string>, into: Sample[]): void {
    let cumulative = 0;
    this.#bounds.forEach((le, i) => {
      cumulative += this.#counts[i] ?? 0;
      into.push({ value: cumulative, labels: { le, ...labels }, metricName: `${name}_bucket` });
    });
    into.push({ value: this.count, labels: { le: '+Inf', ...labels }, metricName: `${name}_bucket` });
    into.push({ value: this.sum, labels: { ...labels }, metricName: `${name}_sum` });
    into.push({ value: this.count, labels: { ...labels }, metricName: `${name}_count` });
  }
}

/**
 * The per-request series, counted in typed arrays and turned into
 * Prometheus values only when scraped:
 *
 * - `proxyd_requests_total{domain,status_class}`: a domain's six series
 *   appear with its first request; `_other` (the domains past the cap)
 *   only once the cap is reached.
 * - `proxyd_request_duration_seconds{status_class}` (histogram, {@link DURATION_BUCKETS}):
 *   a class's series appear with its first request.
 * - `proxyd_requests_by_protocol_total{protocol}`: `h1` and `h2`, both from the start.
 * - `proxyd_http_requests_total{domain,method,protocol,status_class}` (Traefik's
 *   `traefik_service_requests_total` shape; {@link METHODS}, `h1`/`h2`): a series
 *   appears with its first request, so a domain has the few its traffic makes
 *   (e.g. GET over h2 answered 2xx), not all 120.
 * - `proxyd_request_size_bytes`, `proxyd_response_size_bytes` (histograms, {@link SIZE_BUCKETS}):
 *   the declared request body, the response body bytes written.
 * - `proxyd_rate_limited_total{domain}`: a domain's series with its first refusal.
 * - `proxyd_cache_requests_total{result}`, `proxyd_under_attack_challenges_total{result}`,
 *   `proxyd_analytics_beacons_total{result}` ({@link EVENT_FAMILIES}).
 *
 * prom-client's own counters and histograms hash their label set on every
 * increment (a third of the metrics hook's cost per request); here a
 * request costs one map lookup (its domain's row) and a few array
 * increments. The registry sees ordinary metric objects (`get()` at
 * scrape), so the text exposition is prom-client's.
 */
export class RequestMetrics {
  readonly #maxDomains: number;
  readonly #otherDomain: string;
  /** Per domain label: {@link ROW_LENGTH} counts (status classes, then rate limited). */
  readonly #rows = new Map<string, Float64Array>();
  /** The row of every domain past the cap; created when the first one comes. */
  #other: Float64Array | null = null;
  readonly #durations: Buckets[];
  readonly #requestSizes = new Buckets(SIZE_BUCKETS);
  readonly #responseSizes = new Buckets(SIZE_BUCKETS);
  readonly #byProtocol = new Float64Array(PROTOCOLS.length);
  /** Counts of each bit of {@link EVENT_BITS}. */
  readonly #events = new Float64Array(EVENT_BITS.length);

  constructor(options: { durationBuckets?: readonly number[]; maxDomains: number; otherDomain: string }) {
    const buckets = [...(options.durationBuckets ?? DURATION_BUCKETS)].sort((a, b) => a - b);
    this.#maxDomains = options.maxDomains;
    this.#otherDomain = options.otherDomain;
    this.#durations = STATUS_CLASSES.map(() => new Buckets(buckets));
  }

  /** Counts one finished request of `domain` (the label value: the route's domain, or the unrouted one). */
  observe(domain: string, record: RequestRecord): void {
    const cls = statusClass(record.status);
    const row = this.#rows.get(domain) ?? this.#admit(domain);
    row[cls] = (row[cls] ?? 0) + 1;
    const events = record.events ?? 0;
    if ((events & RequestEvent.RateLimited) !== 0) row[RATE_LIMITED] = (row[RATE_LIMITED] ?? 0) + 1;
    (this.#durations[cls] as Buckets).observe(record.durationMs / 1000);
    const protocol = record.protocol === 'h2' ? 1 : 0;
    this.#byProtocol[protocol] = (this.#byProtocol[protocol] ?? 0) + 1;
    const slot = detailSlot(methodIndex(record.method), protocol, cls);
    row[slot] = (row[slot] ?? 0) + 1;
    this.#requestSizes.observe(record.bytesReceived ?? 0);
    this.#responseSizes.observe(record.bytesSent);
    if (events !== 0) {
      for (let i = 0; i < EVENT_BITS.length; i++) {
        if ((events & (EVENT_BITS[i] as number)) !== 0) this.#events[i] = (this.#events[i] ?? 0) + 1;
      }
    }
  }

  /** A new domain's row, or the shared `_other` row once {@link maxDomains} domains have one. */
  #admit(domain: string): Float64Array {
    if (this.#rows.size - (this.#other === null ? 0 : 1) >= this.#maxDomains) {
      if (this.#other === null) {
        this.#other = new Float64Array(ROW_LENGTH);
        this.#rows.set(this.#otherDomain, this.#other);
      }
      return this.#other;
    }
    const row = new Float64Array(ROW_LENGTH);
    this.#rows.set(domain, row);
    return row;
  }

  /** Every family as plain data now (a worker's snapshot: no registry). */
  snapshot(): ExposedMetric[] {
    return this.#families().map(([name, type, help, values]) => ({
      name,
      help,
      type,
      aggregator: 'sum',
      values: values(),
    }));
  }

  /** Registers every series in `registry`. */
  register(registry: Registry): void {
    for (const [name, type, help, values] of this.#families()) {
      const metric = {
        name,
        help,
        type,
        aggregator: 'sum' as const,
        get: async (): Promise<ExposedMetric> => ({ name, help, type, aggregator: 'sum', values: values() }),
      };
      // The registry accepts any object with a name and get(); its typings ask for a full Metric.
      registry.registerMetric(metric as unknown as Parameters<Registry['registerMetric']>[0]);
    }
  }

  /** Each family: name, type, help, and its samples read now. */
  #families(): [name: string, type: ExposedMetric['type'], help: string, values: () => Sample[]][] {
    return [
      [
        'proxyd_requests_total',
        'counter',
        'Requests answered by the data plane, by route domain and status class.',
        () => this.#requestValues(),
      ],
      [
        'proxyd_request_duration_seconds',
        'histogram',
        'Time from request start to the response closing (monotonic clock), by status class.',
        () => this.#durationValues(),
      ],
      [
        'proxyd_requests_by_protocol_total',
        'counter',
        'Finished requests by client protocol (h1: HTTP/1.x, h2: HTTP/2).',
        () => PROTOCOLS.map((protocol, i) => ({ value: this.#byProtocol[i] ?? 0, labels: { protocol } })),
      ],
      [
        'proxyd_http_requests_total',
        'counter',
        'Requests answered by the data plane, by route domain, method (OTHER: outside RFC 9110 and PATCH), client protocol and status class.',
        () => this.#detailValues(),
      ],
      [
        'proxyd_request_size_bytes',
        'histogram',
        'Request body size as its Content-Length declares it (0 without one).',
        () => this.#sizeValues('proxyd_request_size_bytes', this.#requestSizes),
      ],
      [
        'proxyd_response_size_bytes',
        'histogram',
        'Response body bytes written to the client.',
        () => this.#sizeValues('proxyd_response_size_bytes', this.#responseSizes),
      ],
      [
        'proxyd_rate_limited_total',
        'counter',
        "Requests refused by a site's rate_limit (429), by route domain.",
        () => this.#rateLimitedValues(),
      ],
      ...EVENT_FAMILIES.map(
        (family) =>
          [family.name, 'counter', family.help, () => this.#eventValues(family)] as [
            string,
            ExposedMetric['type'],
            string,
            () => Sample[],
          ],
      ),
    ];
  }

  #requestValues(): Sample[] {
    const values: Sample[] = [];
    for (const [domain, row] of this.#rows) {
      for (let cls = 0; cls < STATUS_CLASSES.length; cls++) {
        values.push({ value: row[cls] ?? 0, labels: { domain, status_class: STATUS_CLASSES[cls] as string } });
      }
    }
    return values;
  }

  #durationValues(): Sample[] {
    const values: Sample[] = [];
    STATUS_CLASSES.forEach((label, cls) => {
      const buckets = this.#durations[cls] as Buckets;
      if (buckets.count > 0) buckets.samples('proxyd_request_duration_seconds', { status_class: label }, values);
    });
    return values;
  }

  #detailValues(): Sample[] {
    const values: Sample[] = [];
    for (const [domain, row] of this.#rows) {
      METHODS.forEach((method, m) => {
        PROTOCOLS.forEach((protocol, p) => {
          STATUS_CLASSES.forEach((status_class, cls) => {
            const n = row[detailSlot(m, p, cls)] ?? 0;
            if (n > 0) values.push({ value: n, labels: { domain, method, protocol, status_class } });
          });
        });
      });
    }
    return values;
  }

  #sizeValues(name: string, buckets: Buckets): Sample[] {
    const values: Sample[] = [];
    buckets.samples(name, {}, values);
    return values;
  }

  #rateLimitedValues(): Sample[] {
    const values: Sample[] = [];
    for (const [domain, row] of this.#rows) {
      const n = row[RATE_LIMITED] ?? 0;
      if (n > 0) values.push({ value: n, labels: { domain } });
    }
    return values;
  }

  #eventValues(family: (typeof EVENT_FAMILIES)[number]): Sample[] {
    const counts = family.results.map(([, bit]) => this.#events[EVENT_BITS.indexOf(bit)] ?? 0);
    if (counts.every((n) => n === 0)) return [];
    return family.results.map(([result], i) => ({ value: counts[i] ?? 0, labels: { result } }));
  }
}
