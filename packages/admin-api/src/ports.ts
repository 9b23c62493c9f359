/**
 * The small interfaces the admin app drives. The admin package defines them
 * and imports no implementation; the daemon passes implementations in.
 */

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
 * and published to the data plane.
 */
export interface RouteStorePort {
  list(): AdminRoute[];
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

/** Reads analytics snapshots; never flushes pending Web Vitals. */
export interface AnalyticsPort {
  list(): AnalyticsSnapshot[];
  get(domain: string): AnalyticsSnapshot | undefined;
}

/** The data plane's response cache. */
export interface CachePort {
  /** False when no site has `cache` (PURGE answers 501). */
  readonly enabled: boolean;
  /** Invalidates `{host}/{path}`; false when no such entry. */
  purge(key: string): boolean;
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

/** One audit event (spec §6); principal is always "admin". */
export interface AuditEvent {
  action: string;
  principal: 'admin';
  resource: string;
}
