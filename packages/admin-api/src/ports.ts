/**
 * The small interfaces the admin app drives. The admin package defines them
 * and imports no implementation; the daemon passes implementations in.
 */
import type { StatsDimension, StatsInterval, StatsRange } from '@proxyd/model';

/** A route as the admin API shows it (spec §2.1). */
export interface AdminRoute {
  domain: string;
  upstream: string | null;
  tls: boolean;
  rate_limit_rps: number | null;
  under_attack: boolean;
  source: string | null;
}

/** A validated route write (spec §2.2); domain already lowercase. */
export interface RouteWrite {
  domain: string;
  upstream: string;
  tls: boolean;
  source: string | null;
}

/** A validated snapshot (spec §2.3); domains lowercase and unique. */
export interface SnapshotWrite {
  source: string;
  routes: Array<{ domain: string; upstream: string; tls: boolean }>;
}

/** The result of a snapshot reconcile (spec §2.3 response). */
export interface SnapshotResult {
  source: string;
  applied: number;
  removed: number;
  total_routes: number;
  route_hash: string;
}

/**
 * The route store. Every write resolves only once it is durable (persisted)
 * and published to the data plane. A write the table has no room for
 * rejects with `AdminError('ADMIN_ROUTE_LIMIT', detail)` (409); any other
 * rejection is an internal error (500).
 */
export interface RouteStorePort {
  /** Every route, sorted by domain (code-unit order); the endpoint does not sort it again. */
  list(): readonly AdminRoute[];
  upsert(route: RouteWrite): Promise<AdminRoute>;
  /** Resolves false when no route has that domain. */
  remove(domain: string): Promise<boolean>;
  applySnapshot(snapshot: SnapshotWrite): Promise<SnapshotResult>;
}

/** One analytics snapshot (spec §2.4). */
export interface AnalyticsSnapshot {
  domain: string;
  page_views_1m: number;
  page_views_60m: number;
  unique_visitors: number;
  top_pages: Array<{ path: string; views: number }>;
  referrers: Array<{ domain: string; count: number }>;
  countries: Array<{ country: string; count: number }>;
  status_codes: { s1xx: number; s2xx: number; s3xx: number; s4xx: number; s5xx: number; other: number };
  bytes_sent: number;
  web_vitals: Record<'lcp' | 'cls' | 'inp', { p50: number; p75: number; p95: number; p99: number }>;
  timestamp: string;
}

/**
 * Reads analytics snapshots; never flushes pending Web Vitals. May be async:
 * with several workers the control plane gathers and merges their
 * collectors.
 */
export interface AnalyticsPort {
  list(): AnalyticsSnapshot[] | Promise<AnalyticsSnapshot[]>;
  get(domain: string): AnalyticsSnapshot | undefined | Promise<AnalyticsSnapshot | undefined>;
}

/** The data plane's response cache. */
export interface CachePort {
  /** False when no site has `cache` (PURGE answers 501). */
  readonly enabled: boolean;
  /**
   * Invalidates `{host}/{path}`; false when no such entry. May be async:
   * with several workers every worker's entry is purged (true when any had it).
   */
  purge(key: string): boolean | Promise<boolean>;
}

/**
 * Re-reads the Proxyfile and swaps the routes, or reports the parse error text.
 * Report every failure to produce a new config (unreadable file, parse or
 * compile error) as `{ ok: false, errorText }` (answered 400 text/plain);
 * a thrown error is a bug and answers 500 `internal error`. The admin app
 * enforces the 5 s cooldown itself.
 */
export interface ReloadPort {
  reload(): Promise<{ ok: true; message: string } | { ok: false; errorText: string }>;
}

/**
 * Prometheus exposition of the process's metrics (text format 0.0.4). Render
 * the registry passed as `metricsRegistry` too, so the admin app's own
 * request histogram is included.
 */
export interface MetricsPort {
  render(): Promise<string>;
}

/** A managed name's state: `valid`, `renewing` (an attempt runs or is due, also the first one), `failing` (retry scheduled), `gave-up` (no more attempts). */
export type CertificateState = 'valid' | 'renewing' | 'failing' | 'gave-up';

/**
 * One managed certificate name as the certificate manager reports it (the
 * rows of `CertificateManager.status()`): plain data, times in ms since the
 * epoch. The admin app formats the times and renames the fields.
 */
export interface CertificateInfo {
  /** The name: a DNS name, a `*.` wildcard or an IP address. */
  name: string;
  /** Who issued the current certificate (e.g. the CA's directory URL or `local`); null when there is none yet. */
  issuer: string | null;
  /** notAfter of the current certificate, ms since the epoch; null when there is none yet. */
  notAfter: number | null;
  status: CertificateState;
  /** The latest failure since the last success; null when none. */
  lastError: string | null;
  /** When the next attempt (retry or renewal) starts, ms since the epoch; null once given up. */
  nextAttemptAt: number | null;
  /** The ACME challenge type of the last order tried; absent or null: none (local CA, no order yet). */
  challenge?: 'http-01' | 'tls-alpn-01' | 'dns-01' | null;
  /** The DNS-01 step the last failure happened at; absent or null: none. */
  dnsStep?: 'zone-not-found' | 'update-refused' | 'not-propagated' | 'provider-invalid' | null;
}

/**
 * The certificates automatic HTTPS manages. Async because a worker or the
 * control plane may answer. Absent (automatic HTTPS off) → `GET /certificates`
 * answers `[]`; a thrown error answers 500 `internal error`.
 */
export interface CertificatesPort {
  /** Every managed name, in any order (the admin app sorts by name). */
  list(): Promise<CertificateInfo[]>;
}

/** Why a container gave no route (or not the one its labels ask for). */
export interface ContainerWarning {
  /** The container, as the discovery source names it (e.g. `web-1 (3f2a9c1e4b7d)`). */
  container: string;
  /** The label at fault (e.g. `proxy.port`); null when no one label is (e.g. an ambiguous network). */
  label: string | null;
  /** What is wrong, in words (e.g. `"80x" is not a port 1-65535`). */
  reason: string;
}

/**
 * The state of container discovery (spec §1, §2.5: routes from `proxy.*`
 * labels, watched through the container runtime socket), as the docker
 * source reports it. Plain data; the admin app renames the fields.
 */
export interface DiscoveryStatus {
  /** False when discovery is turned off (`--no-docker` or the Proxyfile's `docker off`). */
  enabled: boolean;
  /** The runtime endpoint in use (e.g. `unix:///var/run/docker.sock`); null when none was found or discovery is off. */
  socket: string | null;
  /** Whether the event stream is connected now. */
  connected: boolean;
  /** The runtime's API version (e.g. `1.41`); null before the first answer. */
  apiVersion: string | null;
  /** The latest connection or runtime error since the last successful connection; null when none. */
  lastError: string | null;
  /** Discovered containers: running, with a `proxy.domain` label. */
  containers: number;
  /** Invalid labels and ambiguous networks, one per problem. */
  warnings: ContainerWarning[];
}

/**
 * Container discovery (the docker source). Async because a worker or the
 * control plane may answer. Absent (no discovery in this process) →
 * `GET /discovery` answers `enabled: false`; a thrown error answers 500
 * `internal error`.
 */
export interface DiscoveryPort {
  status(): Promise<DiscoveryStatus>;
}

/** One audit event (spec §6); principal is always "admin". */
export interface AuditEvent {
  action: string;
  principal: 'admin';
  resource: string;
}

/** A bucket size, a breakdown dimension and a validated time range of the stats API: the model's stats-query rule. */
export type { StatsDimension, StatsInterval, StatsRange };

/** One bucket of a time series. */
export interface StatsSeriesPoint {
  /** The bucket's start, epoch ms. */
  t: number;
  page_views: number;
  visitors: number;
  requests: number;
  bot_requests: number;
  bytes_sent: number;
}

/** What a domain did over a range. */
export interface StatsRangeTotals {
  page_views: number;
  /** Each UTC day's unique visitors, summed over the days of the range. */
  visitors: number;
  requests: number;
  bot_requests: number;
  bytes_sent: number;
  status: { s1xx: number; s2xx: number; s3xx: number; s4xx: number; s5xx: number; other: number };
}

/** One key of a breakdown. */
export interface StatsBreakdownItem {
  key: string;
  page_views: number;
}

/** Counts of one Web Vital of a page: good / needs improvement / poor (spec §2.4 thresholds) and their sum. */
export interface StatsVitalCounts {
  good: number;
  needs_improvement: number;
  poor: number;
  samples: number;
}

/** The Web Vitals of one page over a range. */
export interface StatsPageVitals {
  path: string;
  lcp: StatsVitalCounts;
  cls: StatsVitalCounts;
  inp: StatsVitalCounts;
}

/**
 * Analytics history (the `history` package's store, or what answers for
 * it). Absent (history off) → every `/stats` request answers 501 `history
 * not enabled`; a thrown error answers 500 `internal error`. Ranges,
 * intervals (at most 1,500 buckets), dimensions and limits arrive validated;
 * domains lowercase.
 */
export interface StatsPort {
  /** Domains with history, sorted. */
  domains(): string[] | Promise<string[]>;
  /** Whether a domain has history (false → 404). */
  hasDomain(domain: string): boolean | Promise<boolean>;
  /** Every bucket of `interval` in the range, zeros included. */
  timeseries(
    domain: string,
    range: StatsRange,
    interval: StatsInterval,
  ): StatsSeriesPoint[] | Promise<StatsSeriesPoint[]>;
  totals(domain: string, range: StatsRange): StatsRangeTotals | Promise<StatsRangeTotals>;
  /** The `limit` keys with the most page views, descending. */
  breakdown(
    domain: string,
    dimension: StatsDimension,
    range: StatsRange,
    limit: number,
  ): StatsBreakdownItem[] | Promise<StatsBreakdownItem[]>;
  /** The `limit` pages with the most samples, descending. */
  vitals(domain: string, range: StatsRange, limit: number): StatsPageVitals[] | Promise<StatsPageVitals[]>;
}

/** The shared certificate storage's state (global option `storage`): shown by `GET /health`. */
export interface StoragePort {
  /** Where certificates live (`redis`) and whether it answers now; never throws. */
  state(): { backend: 'redis'; reachable: boolean };
}
