import { flushCompileCache } from 'node:module';
import { ANALYTICS_TARGET, type AnalyticsWiring, createAnalyticsWiring } from '@proxyd/analytics';
import type { PresentedChallenge } from '@proxyd/certificates';
// The light entry: a worker never loads the ACME client.
import { ChallengeTable } from '@proxyd/certificates/challenge-table';
import { connectToPrimary } from '@proxyd/cluster';
import type { RouteSnapshot } from '@proxyd/model';
import { composeHooks, DataPlane } from '@proxyd/proxy-core';
import { createAccessLog, createLogging, createMetrics, SiteLogRecorder } from '@proxyd/telemetry';
import { tuneHeapForStreaming } from '../heap-tuning.js';
import { RemoteConnectionCounter } from './connection-counts.js';
import {
  type CertificatePem,
  type HealthEvent,
  ToPrimary,
  ToWorker,
  type WorkerInit,
  type WorkerReady,
} from './protocol.js';
import { RemoteRateLimits } from './rate-limits.js';
import { type RouteTableMessage, WorkerRoutes } from './route-tables.js';
import { type CertificateUpdate, WorkerCertificateStore } from './worker-certificates.js';

// A data-plane worker of a multi-core daemon (`--workers N`, N > 1): forked
// by the primary (`startWorkers`), it serves the listeners (bound with
// SO_REUSEPORT beside the other workers) from what the primary sends.

tuneHeapForStreaming();
// A stop is the primary's to run: a signal sent to the whole process group (Ctrl-C, systemd's
// control-group kill) must not cut this worker's requests before the primary asks it to drain.
process.on('SIGTERM', () => {});
process.on('SIGINT', () => {});
let plane: DataPlane | undefined;
let analytics: AnalyticsWiring | undefined;
let flushSiteLog: (() => Promise<unknown>) | undefined;
let flushRollups: (() => Promise<unknown>) | undefined;

connectToPrimary<WorkerInit>({
  async init(init, channel): Promise<WorkerReady> {
    // Every line (the access log's too) says which worker wrote it.
    const logging = createLogging(process.env.PROXY_LOG, undefined, { worker: init.index });
    const serverLog = logging.forTarget('proxy::server');
    const tlsLog = logging.forTarget('proxy::tls');
    analytics = await createAnalyticsWiring(init.config, {
      stateDir: init.stateDir,
      logger: logging.forTarget(ANALYTICS_TARGET),
      rollups: init.rollups,
    });
    if (init.visitorSalt !== null) analytics.setVisitorSalt(init.visitorSalt);
    const accessLog = createAccessLog(logging);
    const metrics = init.metrics ? createMetrics({ role: 'worker' }) : undefined;
    // The primary writes every site log file; this worker sends it its lines in batches.
    const siteLog = new SiteLogRecorder((batch) => channel.notify(ToPrimary.siteLog, batch));
    const hooks = composeHooks(
      analytics.hooks,
      metrics ? { onRequest: (record) => metrics.onRequest(record) } : {},
      accessLog ? { onRequest: accessLog } : {},
      { onRequest: siteLog.onRequest },
    );
    const certificates =
      init.certificates === null
        ? undefined
        : new WorkerCertificateStore(
            init.onDemand
              ? (name) => channel.request<CertificatePem | null>(ToPrimary.onDemandCertificate, name, 30_000)
              : null,
          );
    const report = (name: string, err: Error) =>
      tlsLog.error({ name, error: err.message }, `certificate for ${name} not loaded`);
    if (init.certificates !== null) certificates?.apply(init.certificates, report);
    const challenges = new ChallengeTable();
    for (const challenge of init.challenges) challenges.present(challenge);
    const rateLimits = new RemoteRateLimits(channel);
    const tables = new WorkerRoutes();
    const first = tables.apply(init.table) as RouteSnapshot;
    siteLog.setRoutes(first.routes);
    // At a drain, the last lines go as a request: the primary has them before this worker exits.
    flushSiteLog = async () => {
      const batch = siteLog.take();
      if (batch !== null) await channel.request(ToPrimary.siteLog, batch, 5000).catch(() => {});
    };
    const dataPlane = await DataPlane.start(init.config, first.routes, hooks, {
      reusePort: true,
      secret: init.secret,
      ticketKeys: init.ticketKeys,
      rateLimitCounter: (limit) => rateLimits.counter(limit),
      // Connections per client address are the node's: the primary counts them for every worker.
      connectionCounter: new RemoteConnectionCounter(channel),
      // One worker probes for all; what any worker sees reaches the others through the primary.
      health: { probes: init.index === 0, report: (event) => channel.notify(ToPrimary.health, event) },
      redirects: init.redirects,
      ...(init.bindHost === undefined ? {} : { bindHost: init.bindHost }),
      ...(certificates === undefined
        ? {}
        : {
            certificates,
            challenges,
            alpnChallenges: { contextFor: (name: string) => challenges.alpnContextFor(name) },
          }),
      onCertificateError: (err) => tlsLog.error({ error: err.message }, 'certificate not loaded'),
      onSitePortError: (err) => serverLog.error({ error: err.message }, 'listener not opened'),
    });
    plane = dataPlane;
    if (first.version !== 1) dataPlane.setRoutes(first);
    channel.handle<RouteTableMessage>(ToWorker.routes, (message) => {
      const next = tables.apply(message);
      if (next !== null) {
        siteLog.setRoutes(next.routes);
        dataPlane.setRoutes(next);
      }
      return true;
    });
    channel.handle<CertificateUpdate>(ToWorker.certificates, (update) => {
      certificates?.apply(update, report);
      dataPlane.certificatesChanged();
      return true;
    });
    channel.handle<PresentedChallenge>(ToWorker.challengePresent, (challenge) => {
      challenges.present(challenge);
      return true;
    });
    channel.handle<PresentedChallenge>(ToWorker.challengeCleanUp, (challenge) => {
      challenges.cleanUp(challenge);
      return true;
    });
    channel.handle<string>(ToWorker.cachePurge, (key) => dataPlane.cache.purge(key));
    channel.handle<HealthEvent>(ToWorker.health, (event) => dataPlane.applyHealth(event));
    if (metrics !== undefined) {
      const collectorsForMetrics = analytics;
      metrics.setUpstreamHealthSource(() => dataPlane.upstreamHealth());
      metrics.setAnalyticsDroppedSource(() => collectorsForMetrics.droppedRequests());
      metrics.setDataPlaneStatsSource(() => dataPlane.stats());
      channel.handle(ToWorker.metrics, () => metrics.snapshot());
    }
    const collectors = analytics;
    channel.handle<string | null>(ToWorker.analyticsState, (domain) => collectors.exportState(domain ?? undefined));
    channel.handle<number>(ToWorker.rollups, (now) => collectors.drainRollups(now));
    channel.handle<Buffer>(ToWorker.visitorSalt, (salt) => {
      collectors.setVisitorSalt(salt);
      return true;
    });
    // At a drain, every minute left (the current one too) goes to history before this worker exits.
    if (init.rollups) {
      flushRollups = async () => {
        const rollups = collectors.drainRollups(Number.MAX_SAFE_INTEGER);
        if (rollups.length > 0) await channel.request(ToPrimary.rollups, rollups, 5000).catch(() => {});
      };
    }
    // The modules this worker compiled, for the next worker's start (NODE_COMPILE_CACHE, set by the primary).
    flushCompileCache();
    return { http: dataPlane.httpAddress.port, https: dataPlane.httpsAddress?.port ?? null };
  },
  async drain({ graceMs }) {
    await plane?.drain(graceMs);
    await flushSiteLog?.();
    await flushRollups?.();
    await analytics?.close();
  },
});
