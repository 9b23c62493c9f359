import type { MinuteRollup } from '@proxyd/analytics';
import type { CertificateManager } from '@proxyd/certificates';
// The light entry: a worker never loads the ACME client.
import { ChallengeTable } from '@proxyd/certificates/challenge-table';
import {
  type CertificateMode,
  type CertificateSupply,
  type CertificateUpdate,
  type Challenge,
  type DataPlaneNode,
  NodeRoutes,
  type NodeStats,
  type RouteAck,
  type RouteUpdate,
} from '@proxyd/cluster';
import type { Config } from '@proxyd/model';
import { composeHooks, DataPlane, type DataPlaneOptions, type HealthEvent } from '@proxyd/proxy-core';
import { createAccessLog } from '../access-log.js';
import { ANALYTICS_TARGET, type AnalyticsWiring, createAnalyticsWiring } from '../analytics.js';
import type { Logging } from '../logging.js';
import type { MetricsSnapshot, ProxydMetrics, WorkerMetrics } from '../metrics.js';
import { type SiteLogBatch, SiteLogRecorder } from '../site-log.js';
import { NodeCertificateStore } from './node-certificates.js';

/** What a proxyd node's telemetry answers carry (the contract leaves them to the daemon). */
export interface ProxydTelemetry {
  metrics: MetricsSnapshot;
  analytics: ReturnType<AnalyticsWiring['exportState']>;
  rollup: MinuteRollup;
}

/** How a {@link LocalNode} gets certificates: the manager of this process, or pushed copies (a worker). */
export type NodeCertificates =
  | { mode: 'shared'; manager: CertificateManager }
  | { mode: 'pushed'; initial: CertificateUpdate; supply: CertificateSupply | null };

/** What {@link LocalNode.start} needs. */
export interface LocalNodeOptions {
  index: number;
  /** The running config. */
  config: Config;
  /** The route table as one compact snapshot. */
  table: RouteUpdate;
  logging: Logging;
  /** This process's metrics (none with `--no-metrics`). */
  metrics?: ProxydMetrics | WorkerMetrics;
  stateDir: string;
  /** Whether the collectors count per-minute rollups for history. */
  rollups: boolean;
  visitorSalt: Uint8Array | null;
  /** Where sites' log lines go: `write` in batches; `writeLast` at a stop, resolved once they are handed over. */
  siteLogs: { write(batch: SiteLogBatch): void; writeLast(batch: SiteLogBatch): Promise<unknown> };
  /** Where the minutes left at a stop go (a worker's, to the primary's history); absent: history drains them here. */
  lastRollups?: (rollups: MinuteRollup[]) => Promise<unknown>;
  /** Absent with `auto_https off`. */
  certificates: NodeCertificates | null;
  /** Challenges presented now. */
  challenges: readonly Challenge[];
  /** The data plane's knobs the transport decides (reusePort, shared keys, node-wide limits, health sharing). */
  dataPlane: Pick<
    DataPlaneOptions,
    | 'reusePort'
    | 'secret'
    | 'ticketKeys'
    | 'rateLimitCounter'
    | 'connectionCounter'
    | 'health'
    | 'bindHost'
    | 'redirects'
  >;
}

/**
 * One data-plane node in this process: a `DataPlane` with its analytics,
 * metrics, access log and site logs, fed through the control↔data
 * contract. The only code that applies routes, certificates, challenges,
 * health and purges to a DataPlane: one process uses it directly (the
 * in-process transport) and every worker serves it over IPC
 * (`serveNodeOverIpc`). It lives in the app, not in `@proxyd/cluster`
 * (which imports only the model) nor in `@proxyd/proxy-core` (which knows
 * neither the certificate manager nor analytics): it is where the
 * daemon's parts meet.
 */
export class LocalNode implements DataPlaneNode<ProxydTelemetry> {
  readonly index: number;
  readonly certificateMode: CertificateMode;
  readonly plane: DataPlane;
  readonly analytics: AnalyticsWiring;
  readonly #routes: NodeRoutes;
  readonly #siteLog: SiteLogRecorder;
  readonly #store: NodeCertificateStore | null;
  readonly #challenges: ChallengeTable | null;
  readonly #metrics: ProxydMetrics | WorkerMetrics | undefined;
  readonly #options: LocalNodeOptions;
  readonly #report: (name: string, err: Error) => void;

  private constructor(
    options: LocalNodeOptions,
    parts: {
      plane: DataPlane;
      analytics: AnalyticsWiring;
      routes: NodeRoutes;
      siteLog: SiteLogRecorder;
      store: NodeCertificateStore | null;
      challenges: ChallengeTable | null;
      report: (name: string, err: Error) => void;
    },
  ) {
    this.index = options.index;
    this.certificateMode = options.certificates?.mode ?? 'shared';
    this.#options = options;
    this.#metrics = options.metrics;
    this.plane = parts.plane;
    this.analytics = parts.analytics;
    this.#routes = parts.routes;
    this.#siteLog = parts.siteLog;
    this.#store = parts.store;
    this.#challenges = parts.challenges;
    this.#report = parts.report;
  }

  /** Opens the listeners for the table and serves it. */
  static async start(options: LocalNodeOptions): Promise<LocalNode> {
    const { config, logging, metrics } = options;
    const serverLog = logging.forTarget('proxy::server');
    const tlsLog = logging.forTarget('proxy::tls');
    const analytics = await createAnalyticsWiring(config, {
      stateDir: options.stateDir,
      logger: logging.forTarget(ANALYTICS_TARGET),
      rollups: options.rollups,
    });
    if (options.visitorSalt !== null) analytics.setVisitorSalt(Buffer.from(options.visitorSalt));
    const accessLog = createAccessLog(logging);
    const siteLog = new SiteLogRecorder((batch) => options.siteLogs.write(batch));
    const hooks = composeHooks(
      analytics.hooks,
      metrics ? { onRequest: (record) => metrics.onRequest(record) } : {},
      accessLog ? { onRequest: accessLog } : {},
      { onRequest: siteLog.onRequest },
    );
    const report = (name: string, err: Error) =>
      tlsLog.error({ name, error: err.message }, `certificate for ${name} not loaded`);
    const certificates = options.certificates;
    let store: NodeCertificateStore | null = null;
    let challenges: ChallengeTable | null = null;
    let tls: Pick<DataPlaneOptions, 'certificates' | 'challenges' | 'alpnChallenges'> = {};
    if (certificates?.mode === 'shared') {
      const { manager } = certificates;
      tls = {
        certificates: manager,
        challenges: manager,
        alpnChallenges: { contextFor: (name: string) => manager.alpnContextFor(name) },
      };
    } else if (certificates?.mode === 'pushed') {
      const supply = certificates.supply;
      store = new NodeCertificateStore(supply === null ? null : (name) => supply.certificateFor(name));
      store.apply(certificates.initial, report);
      const table = new ChallengeTable();
      challenges = table;
      for (const challenge of options.challenges) table.present(challenge);
      tls = {
        certificates: store,
        challenges: table,
        alpnChallenges: { contextFor: (name: string) => table.alpnContextFor(name) },
      };
    }
    const routes = new NodeRoutes();
    const first = routes.apply(options.table);
    if (first === null) throw new Error('a node starts from a whole route table');
    siteLog.setRoutes(first.routes);
    let plane: DataPlane;
    try {
      plane = await DataPlane.start(config, first.routes, hooks, {
        ...options.dataPlane,
        ...tls,
        onCertificateError: (err) => tlsLog.error({ error: err.message }, 'certificate not loaded'),
        onSitePortError: (err) => serverLog.error({ error: err.message }, 'listener not opened'),
      });
    } catch (err) {
      await analytics.close();
      throw err;
    }
    if (first.version !== 1) plane.setRoutes(first);
    if (metrics !== undefined) {
      metrics.setUpstreamHealthSource(() => plane.upstreamHealth());
      metrics.setAnalyticsDroppedSource(() => analytics.droppedRequests());
      metrics.setDataPlaneStatsSource(() => plane.stats());
    }
    return new LocalNode(options, { plane, analytics, routes, siteLog, store, challenges, report });
  }

  async applyRoutes(update: RouteUpdate): Promise<RouteAck> {
    if (this.#routes.missed(update)) return { version: this.#routes.version, needsSnapshot: true };
    const next = this.#routes.apply(update);
    if (next !== null) {
      this.#siteLog.setRoutes(next.routes);
      this.plane.setRoutes(next);
    }
    return { version: this.#routes.version };
  }

  async certificatesChanged(update: CertificateUpdate | null): Promise<void> {
    if (update !== null) this.#store?.apply(update, this.#report);
    this.plane.certificatesChanged();
  }

  async presentChallenge(challenge: Challenge): Promise<void> {
    // A shared node answers from the manager's own table, which has it already.
    this.#challenges?.present(challenge);
  }

  async cleanUpChallenge(challenge: Challenge): Promise<void> {
    this.#challenges?.cleanUp(challenge);
  }

  async purge(key: string): Promise<boolean> {
    return await this.plane.cache.purge(key);
  }

  applyHealth(event: HealthEvent): void {
    this.plane.applyHealth(event);
  }

  async metrics(): Promise<MetricsSnapshot | null> {
    const metrics = this.#metrics;
    return metrics?.role === 'worker' ? await metrics.snapshot() : null;
  }

  async analyticsState(domain: string | null): Promise<ProxydTelemetry['analytics']> {
    return this.analytics.exportState(domain ?? undefined);
  }

  async drainRollups(now: number): Promise<MinuteRollup[]> {
    return this.analytics.drainRollups(now);
  }

  async setVisitorSalt(salt: Uint8Array): Promise<void> {
    this.analytics.setVisitorSalt(Buffer.from(salt));
  }

  async stats(): Promise<NodeStats> {
    return this.plane.stats();
  }

  /** Drains the data plane, then hands over the last site-log lines and (a worker's) minutes, and closes analytics. */
  async stop(graceMs: number): Promise<void> {
    await this.plane.drain(graceMs);
    const batch = this.#siteLog.take();
    if (batch !== null) await this.#options.siteLogs.writeLast(batch).catch(() => {});
    const last = this.#options.lastRollups;
    if (last !== undefined) {
      const rollups = this.analytics.drainRollups(Number.MAX_SAFE_INTEGER);
      if (rollups.length > 0) await last(rollups).catch(() => {});
    }
    await this.analytics.close();
  }
}
