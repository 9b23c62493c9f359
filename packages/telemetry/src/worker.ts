/**
 * What a data-plane worker loads of telemetry (`@proxyd/telemetry/worker`):
 * its metrics as plain data, the access log, the sites' log lines and the
 * logging, without prom-client (the primary renders the workers' metrics;
 * issue 32). The main entry re-exports all of it.
 */

export { ACCESS_TARGET, accessLogEnabled, createAccessLog } from './access-log.js';
export { AUDIT_TARGET, createLogging, type LogFilter, type Logging, levelFor, parseLogFilter } from './logging.js';
export type { MetricJson, MetricSample, MetricsSnapshot } from './metrics-merge.js';
export {
  SITE_LOG_TARGET,
  type SiteLogBatch,
  type SiteLogKey,
  SiteLogRecorder,
  type SiteLogRecorderOptions,
  siteLogKey,
} from './site-log.js';
export { formatSiteLogLine, SITE_LOG_LOGGER } from './site-log-line.js';
export { createWorkerMetrics, OTHER_DOMAIN, UNROUTED_DOMAIN } from './worker-metrics.js';
