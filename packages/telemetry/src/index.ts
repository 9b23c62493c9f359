/**
 * Telemetry: what proxyd tells its operator about the traffic and itself.
 * Request metrics and the metric catalogue (prom-client), the merge of the
 * workers' snapshots into one exposition (a worker's metrics are plain data:
 * `@proxyd/telemetry/worker` loads no prom-client), the access log, the sites' `log`
 * files, and the JSON-lines logging with `PROXY_LOG`'s per-target levels
 * (pino). It reads the model's request record; it never loads the data
 * plane.
 */

export { ACCESS_TARGET, accessLogEnabled, createAccessLog } from './access-log.js';
export { AUDIT_TARGET, createLogging, type LogFilter, type Logging, levelFor, parseLogFilter } from './logging.js';
export {
  type CertificateCacheKind,
  type CertificateCacheStatsSource,
  type CertificateMetricsSource,
  countReloads,
  createMetrics,
  type DataPlaneStats,
  type MetricsExposition,
  type MetricsOptions,
  type MetricsRole,
  OTHER_DOMAIN,
  type PrimaryMetrics,
  type ProxydMetrics,
  type StorageMetricsSource,
  UNROUTED_DOMAIN,
  type UpstreamHealth,
  type WorkerMetrics,
} from './metrics.js';
export {
  AGGREGATORS,
  type Aggregator,
  type MetricJson,
  type MetricSample,
  type MetricsSnapshot,
} from './metrics-merge.js';
export {
  SITE_LOG_TARGET,
  type SiteLogBatch,
  type SiteLogKey,
  SiteLogOutputs,
  type SiteLogOutputsOptions,
  SiteLogRecorder,
  type SiteLogRecorderOptions,
  siteLogKey,
} from './site-log.js';
export { formatSiteLogLine, SITE_LOG_LOGGER } from './site-log-line.js';
export { createWorkerMetrics } from './worker-metrics.js';
