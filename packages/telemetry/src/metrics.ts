import type { RequestRecord, RouteOrigin } from '@proxyd/model';
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { replaceEventLoopDelayGauges } from './event-loop-metrics.js';
import { DomainCap, type MetricsSnapshot, mergeSnapshots, renderSnapshot, toSnapshot } from './metrics-merge.js';
import { RequestMetrics } from './request-metrics.js';
import { createWorkerMetrics, DATA_PLANE_HELP, OTHER_DOMAIN, UNROUTED_DOMAIN } from './worker-metrics.js';

export type { MetricsSnapshot } from './metrics-merge.js';
export { OTHER_DOMAIN, UNROUTED_DOMAIN } from './worker-metrics.js';

/**
 * Which process the metrics are of: `single` serves and controls (one
 * process, no `--workers`); with `--workers N`, each `worker` counts the
 * traffic it serves and the `primary` (control plane) merges the workers'
 * snapshots with its own metrics at each scrape.
 */
export type MetricsRole = 'single' | 'primary' | 'worker';

/** Options of {@link createMetrics}. */
export interface MetricsOptions {
  /** Distinct `domain` label values before the rest share `_other` (default 1000); give the primary and its workers the same. */
  maxDomains?: number;
  /** Collect Node.js process metrics (`process_*`, `nodejs_*`; default true). */
  processMetrics?: boolean;
  /** Default `single`. */
  role?: MetricsRole;
}

/** One pool member's health as the data plane sees it. */
export interface UpstreamHealth {
  /** `host:port`, IPv6 in brackets. */
  upstream: string;
  /** In rotation: active checks pass and no passive failure holds it out. */
  healthy: boolean;
}

/** What the certificate metrics read at each scrape (the certificates manager's status and order counts). */
export interface CertificateMetricsSource {
  /** Each managed name, its issuer and its current certificate's notAfter (epoch ms; null when there is none). */
  certificates: readonly { name: string; issuer: string | null; notAfter: number | null }[];
  /** ACME orders placed since start, by result. */
  orders: Readonly<Record<'valid' | 'invalid' | 'error', number>>;
}

/** The shared storage (global option `storage redis`) and whether it answers, read at each scrape. */
export interface StorageMetricsSource {
  backend: string;
  reachable: boolean;
}

/** What the certificate-cache metrics read at each scrape: a cache's counts since start and its size now. */
export interface CertificateCacheStatsSource {
  hits: number;
  misses: number;
  evictions: number;
  size: number;
}

/** Which certificate cache: the control plane's loaded certificates, or a worker's TLS contexts. */
export type CertificateCacheKind = 'control' | 'worker';

/**
 * `reloader` with each reload counted in `metrics`
 * (`proxyd_config_reloads_total`, `proxyd_config_last_reload_*`): every
 * caller (POST /reload, SIGHUP) reloads through it.
 */
export function countReloads<Result extends { ok: boolean }>(
  reloader: { reload(): Promise<Result> },
  metrics: { recordReload(ok: boolean): void },
): { reload(): Promise<Result> } {
  return {
    async reload() {
      const result = await reloader.reload();
      metrics.recordReload(result.ok);
      return result;
    },
  };
}

/** What `proxyd_requests_in_flight` and `proxyd_open_connections` read at each scrape (`DataPlane.stats()`). */
export interface DataPlaneStats {
  requestsInFlight: number;
  openConnections: number;
}

/** What the admin app needs of any role: `GET /metrics` and the registry it adds its own histogram to. */
export interface MetricsExposition {
  /** The process's registry (the admin app may add its own series to it). */
  readonly registry: Registry;
  /** The text exposition (format 0.0.4). */
  render(): Promise<string>;
}

/** The process's Prometheus metrics (`single`: one process, data plane and control plane). */
export interface ProxydMetrics extends MetricsExposition {
  readonly role: 'single';
  /** The data plane hook: counts a finished request. O(1), no allocation after a domain's first request. */
  onRequest(record: RequestRecord): void;
  /** Sets `proxyd_routes{origin}`. */
  setRouteCounts(counts: Record<RouteOrigin, number>): void;
  /** Where `proxyd_upstream_healthy` reads pool members' health at each scrape. */
  setUpstreamHealthSource(source: () => Iterable<UpstreamHealth>): void;
  /** Where `proxyd_analytics_dropped_requests_total` reads the analytics collector's count at each scrape. */
  setAnalyticsDroppedSource(source: () => number): void;
  /** Where `proxyd_certificate_not_after_seconds` and `proxyd_acme_orders_total` read at each scrape. */
  setCertificateSource(source: () => CertificateMetricsSource): void;
  /** Where `proxyd_storage_reachable` reads at each scrape (set with `storage redis`, automatic HTTPS or not). */
  setStorageSource(source: () => StorageMetricsSource): void;
  /** Where the `proxyd_certificate_cache_*` series of cache `kind` read at each scrape. */
  setCertificateCacheSource(kind: CertificateCacheKind, source: () => CertificateCacheStatsSource): void;
  /** Where `proxyd_requests_in_flight` and `proxyd_open_connections` read at each scrape. */
  setDataPlaneStatsSource(source: () => DataPlaneStats): void;
  /** Counts a config reload (`proxyd_config_reloads_total`, `proxyd_config_last_reload_*`). */
  recordReload(ok: boolean): void;
}

/**
 * A data-plane worker's metrics: its traffic, its pools' health, its
 * analytics drops, its process. No registry and no exposition of its own:
 * the primary renders them (`src/worker-metrics.ts`, without prom-client).
 */
export interface WorkerMetrics {
  readonly role: 'worker';
  /** The data plane hook, as {@link ProxydMetrics.onRequest}. */
  onRequest(record: RequestRecord): void;
  /** As {@link ProxydMetrics.setUpstreamHealthSource}. */
  setUpstreamHealthSource(source: () => Iterable<UpstreamHealth>): void;
  /** As {@link ProxydMetrics.setAnalyticsDroppedSource}. */
  setAnalyticsDroppedSource(source: () => number): void;
  /** As {@link ProxydMetrics.setDataPlaneStatsSource}. */
  setDataPlaneStatsSource(source: () => DataPlaneStats): void;
  /** As {@link ProxydMetrics.setCertificateCacheSource} (the worker's cache). */
  setCertificateCacheSource(kind: CertificateCacheKind, source: () => CertificateCacheStatsSource): void;
  /** The registry as plain data (`getMetricsAsJSON()`, structured-clone safe): the answer to the primary's scrape. */
  snapshot(): Promise<MetricsSnapshot>;
}

/** The primary's metrics: the control plane's own, and at each scrape the workers' merged in. */
export interface PrimaryMetrics extends MetricsExposition {
  readonly role: 'primary';
  /** As {@link ProxydMetrics.setRouteCounts}. */
  setRouteCounts(counts: Record<RouteOrigin, number>): void;
  /** As {@link ProxydMetrics.setCertificateSource}. */
  setCertificateSource(source: () => CertificateMetricsSource): void;
  /** As {@link ProxydMetrics.setStorageSource}. */
  setStorageSource(source: () => StorageMetricsSource): void;
  /** As {@link ProxydMetrics.setCertificateCacheSource} (the control plane's cache). */
  setCertificateCacheSource(kind: CertificateCacheKind, source: () => CertificateCacheStatsSource): void;
  /** As {@link ProxydMetrics.recordReload}. */
  recordReload(ok: boolean): void;
  /**
   * Where `render()` reads the workers' metrics at each scrape: one
   * {@link WorkerMetrics.snapshot} per worker that answered. A worker that
   * did not answer is left out (its counts are then missing from that
   * scrape: a dip Prometheus reads as a counter reset) or, better, given by
   * its last snapshot. A rejection fails the scrape.
   */
  setWorkerSource(source: () => Promise<readonly MetricsSnapshot[]>): void;
}

/**
 * Builds the metrics (names after Prometheus' conventions: base units,
 * `_total` counters, no series of zeros for values never seen but where
 * said):
 * - `proxyd_requests_total{domain,status_class}` — requests per matched
 *   route domain (the route's pattern, e.g. `*.example.com`; `_unrouted`
 *   when none matched) and status class (`1xx`…`5xx`, `other` for a client
 *   that left before the status). At most `maxDomains` domain values; the
 *   rest are counted under `_other`, which appears only then.
 * - `proxyd_request_duration_seconds{status_class}` — request start to the
 *   response closing, by the monotonic clock, buckets from 100 µs to 30 s
 *   (no domain label, to keep the bucket series bounded).
 * - `proxyd_requests_by_protocol_total{protocol}` — requests per client
 *   protocol, `h1` (HTTP/1.x) or `h2` (HTTP/2); both series from the start.
 * - `proxyd_http_requests_total{domain,method,protocol,status_class}` — per
 *   route domain, method (`OTHER` for one outside RFC 9110 and PATCH),
 *   client protocol and status class, as Traefik's per-service counter; a
 *   series appears with its first request; domains capped as above.
 * - `proxyd_request_size_bytes`, `proxyd_response_size_bytes` — histograms
 *   of the declared request body and of the response body bytes written.
 * - `proxyd_requests_in_flight`, `proxyd_open_connections` — gauges read
 *   from the data plane at each scrape.
 * - `proxyd_rate_limited_total{domain}` — requests `rate_limit` refused.
 * - `proxyd_cache_requests_total{result}` (`hit`, `miss`),
 *   `proxyd_under_attack_challenges_total{result}` (`issued`, `passed`,
 *   `failed`), `proxyd_analytics_beacons_total{result}` (`accepted`,
 *   `rejected`) — a family's series appear together with its first event.
 * - `proxyd_config_reloads_total{result}` (`success`, `failure`; both from
 *   the start), `proxyd_config_last_reload_successful` (1 from the start)
 *   and `proxyd_config_last_reload_success_timestamp_seconds` (the start,
 *   then each successful reload), as Prometheus names its own.
 * - `proxyd_routes{origin}` — routes in the table per origin.
 * - `proxyd_upstream_healthy{upstream}` — 1 when the upstream is in rotation,
 *   0 when out (in any pool); read from the data plane at each scrape, at
 *   most `maxDomains` upstreams.
 * - `proxyd_analytics_dropped_requests_total` — requests analytics did not
 *   count because its domain cap was reached; read from the collector at
 *   each scrape (0 until a source is set).
 * - `proxyd_certificate_not_after_seconds{name,issuer}` — when each managed
 *   name's current certificate expires (Unix seconds); a name without a
 *   certificate has no series. At most `maxDomains` names.
 * - `proxyd_acme_orders_total{result}` — ACME orders placed since start:
 *   `valid` (issued), `invalid` (the CA refused), `error` (network, TLS,
 *   timeout). All three series exist from the first scrape with a source.
 * - `proxyd_certificate_cache_requests_total{cache,result}` (`hit`,
 *   `miss`), `proxyd_certificate_cache_evictions_total{cache}` and
 *   `proxyd_certificate_cache_entries{cache}` — the bounded certificate
 *   caches: `control` (the manager's loaded certificates; a miss reads
 *   storage) and `worker` (each worker's TLS contexts, summed; a miss asks
 *   the control plane). A cache's series exist from the first scrape with
 *   its source.
 * - Node.js process metrics (`process_*`, `nodejs_*`) from prom-client, less
 *   the three `nodejs_active_*_total` gauges (see below); the event-loop
 *   delay statistics (`nodejs_eventloop_lag_*_seconds`) are 0 in a scrape
 *   with no delay sampled since the previous one, never `Nan`.
 *
 * By role: a `worker` has neither `proxyd_routes`, the certificate metrics
 * nor the reload metrics (the primary's), and holds its metrics as plain
 * data without prom-client ({@link createWorkerMetrics}); the `primary` has all but
 * `proxyd_upstream_healthy`, its request families staying empty and its
 * gauges 0 (so that each family is there when no worker answers), and renders its own metrics merged with its workers'
 * ({@link mergeSnapshots}: counters and histograms summed, the domain cap
 * applied again, the other aggregators as `AGGREGATORS` says).
 */
export function createMetrics(options?: MetricsOptions & { role?: 'single' }): ProxydMetrics;
export function createMetrics(options: MetricsOptions & { role: 'worker' }): WorkerMetrics;
export function createMetrics(options: MetricsOptions & { role: 'primary' }): PrimaryMetrics;
export function createMetrics(options: MetricsOptions): ProxydMetrics | WorkerMetrics | PrimaryMetrics;
export function createMetrics(options: MetricsOptions = {}): ProxydMetrics | WorkerMetrics | PrimaryMetrics {
  if (options.role === 'worker') return createWorkerMetrics(options);
  const maxDomains = options.maxDomains ?? 1000;
  const role = options.role ?? 'single';
  const servesTraffic = role !== 'primary';
  const registry = new Registry();
  const requests = new RequestMetrics({ maxDomains, otherDomain: OTHER_DOMAIN });
  requests.register(registry);
  let statsSource: (() => DataPlaneStats) | null = null;
  new Gauge({
    name: 'proxyd_requests_in_flight',
    help: DATA_PLANE_HELP.proxyd_requests_in_flight,
    registers: [registry],
    collect() {
      this.set(statsSource?.().requestsInFlight ?? 0);
    },
  });
  new Gauge({
    name: 'proxyd_open_connections',
    help: DATA_PLANE_HELP.proxyd_open_connections,
    registers: [registry],
    collect() {
      this.set(statsSource?.().openConnections ?? 0);
    },
  });
  const reloads = new Counter({
    name: 'proxyd_config_reloads_total',
    help: 'Proxyfile reloads (admin POST /reload, SIGHUP), by result: success, failure (the running config kept).',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const lastReloadOk = new Gauge({
    name: 'proxyd_config_last_reload_successful',
    help: 'Whether the last Proxyfile reload succeeded (1) or failed (0); 1 from the start.',
    registers: [registry],
  });
  const lastReloadAt = new Gauge({
    name: 'proxyd_config_last_reload_success_timestamp_seconds',
    help: 'When the running config was last loaded successfully (at start, then each successful reload), Unix seconds.',
    registers: [registry],
  });
  reloads.labels('success').inc(0);
  reloads.labels('failure').inc(0);
  lastReloadOk.set(1);
  lastReloadAt.set(Math.floor(Date.now() / 1000));
  const routes = new Gauge({
    name: 'proxyd_routes',
    help: 'Routes in the published route table, by origin.',
    labelNames: ['origin'] as const,
    registers: [registry],
  });
  let healthSource: (() => Iterable<UpstreamHealth>) | null = null;
  new Gauge({
    name: 'proxyd_upstream_healthy',
    help: DATA_PLANE_HELP.proxyd_upstream_healthy,
    labelNames: ['upstream'] as const,
    registers: servesTraffic ? [registry] : [],
    collect() {
      this.reset();
      if (!healthSource) return;
      const seen = new Map<string, boolean>();
      for (const { upstream, healthy } of healthSource()) {
        if (!seen.has(upstream) && seen.size >= maxDomains) continue;
        seen.set(upstream, (seen.get(upstream) ?? true) && healthy);
      }
      for (const [upstream, healthy] of seen) this.labels(upstream).set(healthy ? 1 : 0);
    },
  });
  let droppedSource: (() => number) | null = null;
  new Counter({
    name: 'proxyd_analytics_dropped_requests_total',
    help: DATA_PLANE_HELP.proxyd_analytics_dropped_requests_total,
    registers: [registry],
    collect() {
      this.reset();
      if (droppedSource) this.inc(droppedSource());
    },
  });
  let certificateSource: (() => CertificateMetricsSource) | null = null;
  let storageSource: (() => StorageMetricsSource) | null = null;
  new Gauge({
    name: 'proxyd_certificate_not_after_seconds',
    help: "Expiry (notAfter) of each managed name's current certificate, Unix seconds.",
    labelNames: ['name', 'issuer'] as const,
    registers: [registry],
    collect() {
      this.reset();
      if (!certificateSource) return;
      let n = 0;
      for (const { name, issuer, notAfter } of certificateSource().certificates) {
        if (notAfter === null || issuer === null) continue;
        if (n++ >= maxDomains) break;
        this.labels(name, issuer).set(Math.floor(notAfter / 1000));
      }
    },
  });
  new Gauge({
    name: 'proxyd_storage_reachable',
    help: 'Whether the shared storage (storage redis: certificates, API routes) answers: 1 yes, 0 no; no series without it.',
    labelNames: ['backend'] as const,
    registers: [registry],
    collect() {
      this.reset();
      const storage = storageSource?.();
      if (storage !== undefined) this.labels(storage.backend).set(storage.reachable ? 1 : 0);
    },
  });
  new Counter({
    name: 'proxyd_acme_orders_total',
    help: 'ACME orders placed since start, by result: valid (issued), invalid (refused by the CA), error (network, TLS, timeout).',
    labelNames: ['result'] as const,
    registers: [registry],
    collect() {
      this.reset();
      if (!certificateSource) return;
      const { orders } = certificateSource();
      for (const result of ['valid', 'invalid', 'error'] as const) this.labels(result).inc(orders[result]);
    },
  });
  const cacheSources = new Map<CertificateCacheKind, () => CertificateCacheStatsSource>();
  new Counter({
    name: 'proxyd_certificate_cache_requests_total',
    help: DATA_PLANE_HELP.proxyd_certificate_cache_requests_total,
    labelNames: ['cache', 'result'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [kind, source] of cacheSources) {
        const stats = source();
        this.labels(kind, 'hit').inc(stats.hits);
        this.labels(kind, 'miss').inc(stats.misses);
      }
    },
  });
  new Counter({
    name: 'proxyd_certificate_cache_evictions_total',
    help: DATA_PLANE_HELP.proxyd_certificate_cache_evictions_total,
    labelNames: ['cache'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [kind, source] of cacheSources) this.labels(kind).inc(source().evictions);
    },
  });
  new Gauge({
    name: 'proxyd_certificate_cache_entries',
    help: DATA_PLANE_HELP.proxyd_certificate_cache_entries,
    labelNames: ['cache'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [kind, source] of cacheSources) this.labels(kind).set(source().size);
    },
  });
  const setCertificateCacheSource = (kind: CertificateCacheKind, source: () => CertificateCacheStatsSource) => {
    cacheSources.set(kind, source);
  };
  if (options.processMetrics !== false) {
    collectDefaultMetrics({ register: registry });
    // Gauges named *_total break `promtool check metrics`; each is the sum of its labelled twin (e.g. nodejs_active_handles{type}).
    for (const name of [
      'nodejs_active_handles_total',
      'nodejs_active_requests_total',
      'nodejs_active_resources_total',
    ]) {
      registry.removeSingleMetric(name);
    }
    replaceEventLoopDelayGauges(registry);
  }

  const onRequest = (record: RequestRecord) => {
    requests.observe(record.domain ?? UNROUTED_DOMAIN, record);
  };
  const setDataPlaneStatsSource = (source: () => DataPlaneStats) => {
    statsSource = source;
  };
  const recordReload = (ok: boolean) => {
    reloads.labels(ok ? 'success' : 'failure').inc();
    lastReloadOk.set(ok ? 1 : 0);
    if (ok) lastReloadAt.set(Math.floor(Date.now() / 1000));
  };
  const setUpstreamHealthSource = (source: () => Iterable<UpstreamHealth>) => {
    healthSource = source;
  };
  const setAnalyticsDroppedSource = (source: () => number) => {
    droppedSource = source;
  };
  const setCertificateSource = (source: () => CertificateMetricsSource) => {
    certificateSource = source;
  };
  const setStorageSource = (source: () => StorageMetricsSource) => {
    storageSource = source;
  };
  const setRouteCounts = (counts: Record<RouteOrigin, number>) => {
    for (const [origin, n] of Object.entries(counts)) routes.labels(origin).set(n);
  };
  const render = () => registry.metrics();

  if (role === 'primary') {
    let workerSource: () => Promise<readonly MetricsSnapshot[]> = async () => [];
    const domains = new DomainCap({ maxDomains, otherDomain: OTHER_DOMAIN });
    return {
      role,
      registry,
      setRouteCounts,
      setCertificateSource,
      setStorageSource,
      setCertificateCacheSource,
      recordReload,
      setWorkerSource(source) {
        workerSource = source;
      },
      async render() {
        const [own, workers] = await Promise.all([registry.getMetricsAsJSON(), workerSource()]);
        return renderSnapshot(mergeSnapshots([toSnapshot(own), ...workers], { domains, maxUpstreams: maxDomains }));
      },
    };
  }
  return {
    role,
    registry,
    onRequest,
    setUpstreamHealthSource,
    setAnalyticsDroppedSource,
    setCertificateSource,
    setStorageSource,
    setCertificateCacheSource,
    setRouteCounts,
    setDataPlaneStatsSource,
    recordReload,
    render,
  };
}
