import { ANALYTICS_TARGET, type AnalyticsWiring, createAnalyticsWiring, type MinuteRollup } from '@proxyd/analytics';
import type { CertificateManager } from '@proxyd/certificates';
// The light entry: a worker never loads the ACME client.
import { ChallengeTable } from '@proxyd/certificates/challenge-table';
import {
  type CacheIndexUpdate,
  type CertificateSupply,
  type CertificateUpdate,
  type Challenge,
  type DataPlaneNode,
  NodeRoutes,
  type NodeStats,
  type RouteAck,
  type RouteUpdate,
} from '@proxyd/cluster';
import type { Config, Site } from '@proxyd/model';
import {
  CacheRegistry,
  composeHooks,
  DataPlane,
  type DataPlaneOptions,
  type HealthEvent,
  PulledCertificateStore,
  SharedCache,
  type SharedCacheLink,
  type SharedEntryData,
} from '@proxyd/proxy-core';
import type { ProxydMetrics, WorkerMetrics } from '@proxyd/telemetry';
// The worker's entry: a data-plane worker loads no prom-client (issue 32).
import {
  createAccessLog,
  type Logging,
  type MetricsSnapshot,
  type SiteLogBatch,
  SiteLogRecorder,
} from '@proxyd/telemetry/worker';

/** What a proxyd node's telemetry answers carry (the contract leaves them to the daemon). */
export interface ProxydTelemetry {
  metrics: MetricsSnapshot;
  analytics: ReturnType<AnalyticsWiring['exportState']>;
  rollup: MinuteRollup;
}

/**
 * How a {@link startLocalNode} node gets certificates: the manager of this
 * process, or pulled from the control plane at a handshake into a bounded
 * cache (a worker: `initial` the names served, `askUnserved` with on-demand
 * TLS, `capacity` the contexts kept).
 */
export type NodeCertificates =
  | { mode: 'shared'; manager: CertificateManager }
  | { mode: 'pulled'; initial: CertificateUpdate; supply: CertificateSupply; askUnserved: boolean; capacity: number };

/** What {@link startLocalNode} needs. */
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
  /**
   * The node's shared response cache (a worker): the directory of its body
   * files, the index's entries now and the way to the index. Absent: the
   * node keeps its own caches in memory.
   */
  sharedCache?: { dir: string; entries: readonly SharedEntryData[]; link: SharedCacheLink };
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

/** One data-plane node in this process, as {@link startLocalNode} returns it. */
export interface LocalNode extends DataPlaneNode<ProxydTelemetry> {
  /** Its data plane (the bound addresses). */
  readonly plane: DataPlane;
}

/**
 * Starts one data-plane node in this process: a `DataPlane` with its
 * analytics, metrics, access log and site logs, fed through the
 * control↔data contract. The only code that applies routes, certificates,
 * challenges, health and purges to a DataPlane: one process uses it
 * directly (the in-process transport) and every worker serves it over IPC
 * (`serveNodeOverIpc`). It is wiring, so it lives in the app: not in
 * `@proxyd/cluster` (which imports only the model) nor in
 * `@proxyd/proxy-core` (which knows neither the certificate manager nor
 * analytics).
 */
export async function startLocalNode(options: LocalNodeOptions): Promise<LocalNode> {
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
  let store: PulledCertificateStore | null = null;
  let challenges: ChallengeTable | null = null;
  let tls: Pick<DataPlaneOptions, 'certificates' | 'challenges' | 'alpnChallenges'> = {};
  if (certificates?.mode === 'shared') {
    const { manager } = certificates;
    tls = {
      certificates: manager,
      challenges: manager,
      alpnChallenges: { contextFor: (name: string) => manager.alpnContextFor(name) },
    };
  } else if (certificates?.mode === 'pulled') {
    const { supply } = certificates;
    const pulled = new PulledCertificateStore({
      fetch: (name) => supply.certificateFor(name),
      served: certificates.initial.served,
      askUnserved: certificates.askUnserved,
      capacity: certificates.capacity,
      report,
    });
    store = pulled;
    const table = new ChallengeTable();
    challenges = table;
    for (const challenge of options.challenges) table.present(challenge);
    tls = {
      certificates: pulled,
      challenges: table,
      alpnChallenges: { contextFor: (name: string) => table.alpnContextFor(name) },
    };
  }
  const routes = new NodeRoutes();
  const shared = options.sharedCache;
  const cache =
    shared === undefined
      ? null
      : new SharedCache({
          dir: shared.dir,
          // Unique on the node: a replacement of this worker has another pid.
          prefix: `${options.index}-${process.pid}`,
          link: shared.link,
          entries: shared.entries,
          // Site objects are the route publisher's numbers here, the same on every worker.
          siteNumber: (site) => routes.siteNumber(site as Site),
        });
  const first = routes.apply(options.table);
  if (first === null) throw new Error('a node starts from a whole route table');
  siteLog.setRoutes(first.routes);
  let plane: DataPlane;
  try {
    plane = await DataPlane.start(config, first, hooks, {
      ...options.dataPlane,
      ...tls,
      ...(cache === null ? {} : { caches: new CacheRegistry(cache) }),
      onCertificateError: (err) => tlsLog.error({ error: err.message }, 'certificate not loaded'),
      onSitePortError: (err) => serverLog.error({ error: err.message }, 'listener not opened'),
    });
  } catch (err) {
    await analytics.close();
    throw err;
  }
  if (metrics !== undefined) {
    metrics.setUpstreamHealthSource(() => plane.upstreamHealth());
    metrics.setAnalyticsDroppedSource(() => analytics.droppedRequests());
    metrics.setDataPlaneStatsSource(() => plane.stats());
    const pulled = store;
    if (pulled !== null && metrics.role === 'worker') metrics.setCertificateCacheSource('worker', () => pulled.stats());
  }
  return {
    index: options.index,
    certificateMode: certificates?.mode ?? 'shared',
    plane,
    async applyRoutes(update: RouteUpdate): Promise<RouteAck> {
      if (routes.missed(update)) return { version: routes.version, needsSnapshot: true };
      const next = routes.apply(update);
      if (next !== null) {
        // Changes cost what they change (NodeRoutes gives them whenever it applied a delta).
        if (next.changes === null) siteLog.setRoutes(next.routes);
        else siteLog.applyChanges(next.changes.upserted, next.changes.removed);
        plane.setRoutes(next);
      }
      return { version: routes.version };
    },
    async certificatesChanged(update: CertificateUpdate | null) {
      if (update !== null) store?.apply(update);
      plane.certificatesChanged();
    },
    // A shared node answers from the manager's own table, which has the challenge already.
    async presentChallenge(challenge: Challenge) {
      if (challenge.type !== 'dns-01') challenges?.present(challenge);
    },
    async cleanUpChallenge(challenge: Challenge) {
      challenges?.cleanUp(challenge);
    },
    purge: async (key: string) => await plane.cache.purge(key),
    applyCacheIndex: (update: CacheIndexUpdate) => cache?.apply(update),
    applyHealth: (event: HealthEvent) => plane.applyHealth(event),
    async metrics() {
      return metrics?.role === 'worker' ? await metrics.snapshot() : null;
    },
    analyticsState: async (domain: string | null) => analytics.exportState(domain ?? undefined),
    drainRollups: async (now: number) => analytics.drainRollups(now),
    async setVisitorSalt(salt: Uint8Array) {
      analytics.setVisitorSalt(Buffer.from(salt));
    },
    async setTicketKeys(keys: Uint8Array) {
      plane.setTicketKeys(Buffer.from(keys));
    },
    stats: async (): Promise<NodeStats> => plane.stats(),
    /** Drains the data plane, then hands over the last site-log lines and (a worker's) minutes, and closes analytics. */
    async stop(graceMs: number) {
      await plane.drain(graceMs);
      cache?.close();
      const batch = siteLog.take();
      if (batch !== null) await options.siteLogs.writeLast(batch).catch(() => {});
      const last = options.lastRollups;
      if (last !== undefined) {
        const rollups = analytics.drainRollups(Number.MAX_SAFE_INTEGER);
        if (rollups.length > 0) await last(rollups).catch(() => {});
      }
      await analytics.close();
    },
  };
}
