import type { RequestRecord, RouteOrigin } from '@proxyd/proxy-core';
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { replaceEventLoopDelayGauges } from './event-loop-metrics.js';
import { RequestMetrics } from './request-metrics.js';

/** Label value of requests no route matched. */
export const UNROUTED_DOMAIN = '_unrouted';
/** Label value of every domain past the cardinality cap. */
export const OTHER_DOMAIN = '_other';

/** Options of {@link createMetrics}. */
export interface MetricsOptions {
  /** Distinct `domain` label values before the rest share `_other` (default 1000). */
  maxDomains?: number;
  /** Collect Node.js process metrics (`process_*`, `nodejs_*`; default true). */
  processMetrics?: boolean;
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

/** The process's Prometheus metrics: one registry, fed by the data plane and the route store. */
export interface ProxydMetrics {
  /** The one registry (the admin app may add its own series to it). */
  readonly registry: Registry;
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
  /** The text exposition (format 0.0.4). */
  render(): Promise<string>;
}

/**
 * Builds the metrics:
 * - `proxyd_requests_total{domain,status_class}` — requests per matched
 *   route domain (the route's pattern, e.g. `*.example.com`; `_unrouted`
 *   when none matched) and status class (`1xx`…`5xx`, `other` for a client
 *   that left before the status). At most `maxDomains` domain values; the
 *   rest are counted under `_other`.
 * - `proxyd_request_duration_seconds{status_class}` — request start to last
 *   byte (no domain label, to keep the bucket series bounded).
 * - `proxyd_requests_by_protocol_total{protocol}` — requests per client
 *   protocol, `h1` (HTTP/1.x) or `h2` (HTTP/2); both series from the start.
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
 * - Node.js process metrics (`process_*`, `nodejs_*`) from prom-client, less
 *   the three `nodejs_active_*_total` gauges (see below); the event-loop
 *   delay statistics (`nodejs_eventloop_lag_*_seconds`) are omitted from a
 *   scrape with no delay sampled since the previous one, never `Nan`.
 */
export function createMetrics(options: MetricsOptions = {}): ProxydMetrics {
  const maxDomains = options.maxDomains ?? 1000;
  const registry = new Registry();
  const requests = new RequestMetrics({
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    maxDomains,
    otherDomain: OTHER_DOMAIN,
  });
  requests.register(registry);
  // Plain counts, turned into the two series at scrape: a labelled
  // prom-client child hashes its label set on every increment.
  const byProtocol = { h1: 0, h2: 0 };
  new Counter({
    name: 'proxyd_requests_by_protocol_total',
    help: 'Finished requests by client protocol (h1: HTTP/1.x, h2: HTTP/2).',
    labelNames: ['protocol'] as const,
    registers: [registry],
    collect() {
      this.reset();
      this.labels('h1').inc(byProtocol.h1);
      this.labels('h2').inc(byProtocol.h2);
    },
  });
  const routes = new Gauge({
    name: 'proxyd_routes',
    help: 'Routes in the published route table, by origin.',
    labelNames: ['origin'] as const,
    registers: [registry],
  });
  let healthSource: (() => Iterable<UpstreamHealth>) | null = null;
  new Gauge({
    name: 'proxyd_upstream_healthy',
    help: 'Whether an upstream is in rotation (1) or out after failed health checks (0).',
    labelNames: ['upstream'] as const,
    registers: [registry],
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
    help: 'Requests not counted by analytics because its domain cap was reached.',
    registers: [registry],
    collect() {
      this.reset();
      if (droppedSource) this.inc(droppedSource());
    },
  });
  let certificateSource: (() => CertificateMetricsSource) | null = null;
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

  return {
    registry,
    onRequest(record) {
      requests.observe(record.domain ?? UNROUTED_DOMAIN, record.status, record.durationMs / 1000);
      if (record.protocol === 'h2') byProtocol.h2++;
      else byProtocol.h1++;
    },
    setUpstreamHealthSource(source) {
      healthSource = source;
    },
    setAnalyticsDroppedSource(source) {
      droppedSource = source;
    },
    setCertificateSource(source) {
      certificateSource = source;
    },
    setRouteCounts(counts) {
      for (const [origin, n] of Object.entries(counts)) routes.labels(origin).set(n);
    },
    render: () => registry.metrics(),
  };
}
