import type { RequestRecord } from '@proxyd/model';
import type {
  CertificateCacheKind,
  CertificateCacheStatsSource,
  DataPlaneStats,
  MetricsOptions,
  UpstreamHealth,
  WorkerMetrics,
} from './metrics.js';
import type { MetricJson, MetricsSnapshot } from './metrics-merge.js';
import { ProcessMetrics } from './process-metrics.js';
import { RequestMetrics } from './request-metrics.js';

/** Label value of requests no route matched. */
export const UNROUTED_DOMAIN = '_unrouted';
/** Label value of every domain past the cardinality cap. */
export const OTHER_DOMAIN = '_other';

/** The help of the series a data-plane process reads from its sources at each scrape (every role shares them). */
export const DATA_PLANE_HELP = {
  proxyd_requests_in_flight: 'Requests the data plane has begun and not yet answered in full.',
  proxyd_open_connections: "Client connections open on the data plane's listeners (HTTP, HTTPS, WebSocket).",
  proxyd_upstream_healthy: 'Whether an upstream is in rotation (1) or out after failed health checks (0).',
  proxyd_analytics_dropped_requests_total: 'Requests not counted by analytics because its domain cap was reached.',
  proxyd_certificate_cache_requests_total:
    'Certificate cache lookups at handshakes, by cache (control, worker) and result (hit, miss).',
  proxyd_certificate_cache_evictions_total:
    'Certificates evicted from a full certificate cache (least recently used), by cache.',
  proxyd_certificate_cache_entries: 'Certificates held in a certificate cache now, by cache.',
} as const;

/**
 * A data-plane worker's metrics (`createMetrics({ role: 'worker' })`)
 * without prom-client: the request series in typed arrays
 * ({@link RequestMetrics}), the gauges read from their sources and the
 * process metrics ({@link ProcessMetrics}) become plain data only in
 * {@link WorkerMetrics.snapshot}, which the primary merges and renders with
 * prom-client at each scrape. The same families, help, types and labels as
 * a prom-client registry of the worker's metrics, in the same order; it
 * spares each worker prom-client and `@opentelemetry/api` (issue 32).
 */
export function createWorkerMetrics(options: MetricsOptions = {}): WorkerMetrics {
  const maxDomains = options.maxDomains ?? 1000;
  const requests = new RequestMetrics({ maxDomains, otherDomain: OTHER_DOMAIN });
  const processMetrics = options.processMetrics === false ? null : new ProcessMetrics();
  let statsSource: (() => DataPlaneStats) | null = null;
  let healthSource: (() => Iterable<UpstreamHealth>) | null = null;
  let droppedSource: (() => number) | null = null;
  const cacheSources = new Map<CertificateCacheKind, () => CertificateCacheStatsSource>();

  const family = (name: keyof typeof DATA_PLANE_HELP, type: MetricJson['type'], values: MetricJson['values']) => ({
    name,
    help: DATA_PLANE_HELP[name],
    type,
    aggregator: 'sum' as const,
    values,
  });

  const snapshot = (): MetricsSnapshot => {
    const stats = statsSource?.();
    const healthy = new Map<string, boolean>();
    if (healthSource) {
      for (const { upstream, healthy: up } of healthSource()) {
        if (!healthy.has(upstream) && healthy.size >= maxDomains) continue;
        healthy.set(upstream, (healthy.get(upstream) ?? true) && up);
      }
    }
    const caches = [...cacheSources].map(([cache, source]) => ({ cache, stats: source() }));
    return [
      ...requests.snapshot(),
      family('proxyd_requests_in_flight', 'gauge', [{ value: stats?.requestsInFlight ?? 0, labels: {} }]),
      family('proxyd_open_connections', 'gauge', [{ value: stats?.openConnections ?? 0, labels: {} }]),
      family(
        'proxyd_upstream_healthy',
        'gauge',
        [...healthy].map(([upstream, up]) => ({ value: up ? 1 : 0, labels: { upstream } })),
      ),
      family('proxyd_analytics_dropped_requests_total', 'counter', [{ value: droppedSource?.() ?? 0, labels: {} }]),
      family(
        'proxyd_certificate_cache_requests_total',
        'counter',
        caches.flatMap(({ cache, stats }) => [
          { value: stats.hits, labels: { cache, result: 'hit' } },
          { value: stats.misses, labels: { cache, result: 'miss' } },
        ]),
      ),
      family(
        'proxyd_certificate_cache_evictions_total',
        'counter',
        caches.map(({ cache, stats }) => ({ value: stats.evictions, labels: { cache } })),
      ),
      family(
        'proxyd_certificate_cache_entries',
        'gauge',
        caches.map(({ cache, stats }) => ({ value: stats.size, labels: { cache } })),
      ),
      ...(processMetrics?.snapshot() ?? []),
    ];
  };

  return {
    role: 'worker',
    onRequest(record: RequestRecord) {
      requests.observe(record.domain ?? UNROUTED_DOMAIN, record);
    },
    setUpstreamHealthSource(source) {
      healthSource = source;
    },
    setAnalyticsDroppedSource(source) {
      droppedSource = source;
    },
    setDataPlaneStatsSource(source) {
      statsSource = source;
    },
    setCertificateCacheSource(kind, source) {
      cacheSources.set(kind, source);
    },
    snapshot: async () => snapshot(),
  };
}
