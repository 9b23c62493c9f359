import type { Config } from '@proxyd/model';
import type { SharedCacheEntry } from '../contract/cache-index.js';
import type { CertificateUpdate, Challenge } from '../contract/node.js';

/**
 * The IPC transport of the control↔data contract: what the primary
 * (control plane) and its data-plane workers say to each other over
 * {@link Channel}s (structured clone). Each `DataPlaneNode` call is one
 * request by {@link ToWorker}; each `FleetPort` call a worker makes is one
 * request or notification by {@link ToPrimary}.
 */

/** The init body of a worker: everything it needs to serve, as of when it starts. */
export interface WorkerInit {
  /** The worker's slot (0-based; its replacement keeps it). */
  index: number;
  /** The running config, `http_port`/`https_port` resolved (never 0). */
  config: Config;
  /** The route table now, one compact snapshot (`RouteUpdate` of kind `full`), serialised once for every worker. */
  table: Uint8Array;
  /** The names the primary's manager serves, no certificate: the worker asks at a handshake (null with `auto_https off`). */
  certificates: CertificateUpdate | null;
  /** TLS contexts the worker keeps (least recently used out first). */
  certificateCacheCapacity: number;
  /** ACME challenges presented now (a worker may start during an order). */
  challenges: Challenge[];
  /** HMAC key of `under_attack` clearance cookies: one for every worker, so a cookie is valid on all. */
  secret: Buffer;
  /** TLS session-ticket keys (48 bytes): one set for every worker, so a session resumes on any of them. */
  ticketKeys: Buffer;
  bindHost?: string;
  /** HTTP→HTTPS redirects (false with `auto_https off` and `disable_redirects`). */
  redirects: boolean;
  /** The state dir (the analytics key file). */
  stateDir: string;
  /** Whether the worker keeps request metrics (false with `--no-metrics`). */
  metrics: boolean;
  /** Whether the collectors count per-minute rollups for history (false with `history off`). */
  rollups: boolean;
  /** The day's visitor salt (history's; null without history: a random one per worker). */
  visitorSalt: Buffer | null;
  /**
   * The node's shared response cache: the directory of its body files and
   * the index's entries now (null: the worker keeps its own cache).
   */
  cache: { dir: string; entries: SharedCacheEntry[] } | null;
}

/** A worker's answer to init: the ports it bound. */
export interface WorkerReady {
  http: number;
  https: number | null;
}

/** Requests the primary sends workers. */
export const ToWorker = {
  /** A serialised `RouteUpdate`: the whole table or what changed; answers the worker's `RouteAck` once it serves it. */
  routes: 'routes',
  /** {@link CertificateUpdate} (or null: look again): certificates installed, replaced or dropped. */
  certificates: 'certificates',
  /** {@link Challenge}: start answering it (answered once every worker does). */
  challengePresent: 'challenge.present',
  /** {@link Challenge}: stop answering it. */
  challengeCleanUp: 'challenge.cleanup',
  /** A cache key: purge it; answers whether the worker had it. */
  cachePurge: 'cache.purge',
  /** (one way) A `CacheIndexUpdate` of the shared response cache: the worker's copy follows it. */
  cacheIndex: 'cache.index',
  /** Answers the worker's `MetricsSnapshot` (request counts, durations, health, process) for the primary's scrape. */
  metrics: 'metrics',
  /** Answers the worker's `NodeStats` (requests in flight, connections open). */
  stats: 'stats',
  /** A domain (or null: all): answers the collectors' `AnalyticsState` for the primary to merge. */
  analyticsState: 'analytics.state',
  /** (one way) A `HealthEvent` another worker saw: apply it. */
  health: 'health',
  /** An epoch ms time: answers the collectors' complete minutes before it (`MinuteRollup[]`), forgotten by the worker. */
  rollups: 'rollups.drain',
  /** The day's visitor salt (a Buffer): hash visitors with it from now on. */
  visitorSalt: 'visitor-salt',
  /** The fleet's TLS session-ticket keys (48 bytes): every HTTPS listener uses them from now on. */
  ticketKeys: 'tls.ticket-keys',
} as const;

/** Requests workers send the primary. */
export const ToPrimary = {
  /** A server name the worker has no certificate for: the primary's manager answers a `CertificatePem` or null (`certificateFor`). */
  certificate: 'certificates.for',
  /** (one way) A `HealthEvent` this worker saw (worker 0's probes, anyone's passive failures): passed to the others. */
  health: 'health',
  /** A `SiteLogBatch` of sites' access lines for the primary to write (one way; a request when a drain flushes, answered once handed to the files). */
  siteLog: 'site-log',
  /** The `MinuteRollup[]` of a draining worker, the current minute included (a request: answered once history has them). */
  rollups: 'rollups',
  /** (one way) A `SharedCacheEntry` the worker stored (its body file written): the index takes it. */
  cacheStored: 'cache.stored',
  /** (one way) Keys the worker served from the shared cache since it last said (their recency). */
  cacheTouched: 'cache.touched',
  /** (one way) Site numbers the worker no longer serves: their cache entries go. */
  cacheReleased: 'cache.released',
} as const;
