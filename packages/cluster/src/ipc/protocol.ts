import type { PresentedChallenge } from '@proxyd/certificates';
import type { Config } from '@proxyd/model';
import type { HealthEvent } from '@proxyd/proxy-core';
import type { RouteTableMessage } from './route-tables.js';
import type { CertificatePem, CertificateUpdate } from './worker-certificates.js';

/**
 * What the primary (control plane) and its data-plane workers say to each
 * other over IPC (`@proxyd/cluster` channels, structured clone). Requests
 * from the primary to workers go by {@link ToWorker}; workers ask the
 * primary by {@link ToPrimary}.
 */

/** The init body of a worker: everything it needs to serve, as of when it starts. */
export interface WorkerInit {
  /** The worker's slot (0-based; its replacement keeps it). */
  index: number;
  /** The running config, `http_port`/`https_port` resolved (never 0). */
  config: Config;
  /** The route table now, whole (see `RoutePublisher`). */
  table: RouteTableMessage & { kind: 'full' };
  /** The certificates the primary's manager serves (absent with `auto_https off`). */
  certificates: CertificateUpdate | null;
  /** Whether a name the worker has no certificate for is asked of the primary (on-demand TLS). */
  onDemand: boolean;
  /** ACME challenges presented now (a worker may start during an order). */
  challenges: PresentedChallenge[];
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
}

/** A worker's answer to init: the ports it bound. */
export interface WorkerReady {
  http: number;
  https: number | null;
}

/** Requests the primary sends workers. */
export const ToWorker = {
  /** A {@link RouteTableMessage}: the whole table or what changed; answers once the worker serves it. */
  routes: 'routes',
  /** {@link CertificateUpdate}: certificates installed, replaced or dropped. */
  certificates: 'certificates',
  /** {@link PresentedChallenge}: start answering it (answered once every worker does). */
  challengePresent: 'challenge.present',
  /** {@link PresentedChallenge}: stop answering it. */
  challengeCleanUp: 'challenge.cleanup',
  /** A cache key: purge it; answers whether the worker had it. */
  cachePurge: 'cache.purge',
  /** Answers the worker's `MetricsSnapshot` (request counts, durations, health, process) for the primary's scrape. */
  metrics: 'metrics',
  /** A domain (or null: all): answers the collectors' `AnalyticsState` for the primary to merge. */
  analyticsState: 'analytics.state',
  /** (one way) A {@link HealthEvent} another worker saw: apply it. */
  health: 'health',
  /** An epoch ms time: answers the collectors' complete minutes before it (`MinuteRollup[]`), forgotten by the worker. */
  rollups: 'rollups.drain',
  /** The day's visitor salt (a Buffer): hash visitors with it from now on. */
  visitorSalt: 'visitor-salt',
} as const;

/** Requests workers send the primary. */
export const ToPrimary = {
  /** A server name: the primary's manager checks and obtains it (on-demand TLS); answers {@link CertificatePem} or null. */
  onDemandCertificate: 'certificates.on-demand',
  /** (one way) A {@link HealthEvent} this worker saw (worker 0's probes, anyone's passive failures): passed to the others. */
  health: 'health',
  /** A `SiteLogBatch` of sites' access lines for the primary to write (one way; a request when a drain flushes, answered once handed to the files). */
  siteLog: 'site-log',
  /** The `MinuteRollup[]` of a draining worker, the current minute included (a request: answered once history has them). */
  rollups: 'rollups',
} as const;

export type { CertificatePem, CertificateUpdate, HealthEvent, RouteTableMessage };
