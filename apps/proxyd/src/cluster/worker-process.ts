import { flushCompileCache } from 'node:module';
import { decodeRouteUpdate, serveNodeOverIpc, ToPrimary, type WorkerInit, type WorkerReady } from '@proxyd/cluster';
import { createLogging, createWorkerMetrics } from '@proxyd/telemetry/worker';
import { releaseStartupMemory, tuneHeapForStreaming } from '../heap-tuning.js';
import { startLocalNode } from './local-node.js';

// A data-plane worker of a multi-core daemon (`--workers N`, N > 1): forked
// by the primary (`startServing`), it runs the same node one process runs
// (`startLocalNode`) and serves the IPC side of the control↔data contract
// (`serveNodeOverIpc`). Its listeners are bound with SO_REUSEPORT beside
// the other workers'.

tuneHeapForStreaming();
// A stop is the primary's to run: a signal sent to the whole process group (Ctrl-C, systemd's
// control-group kill) must not cut this worker's requests before the primary asks it to drain.
process.on('SIGTERM', () => {});
process.on('SIGINT', () => {});

serveNodeOverIpc<WorkerInit>({
  async start(init, fleet) {
    const { channel } = fleet;
    // Every line (the access log's too) says which worker wrote it.
    const logging = createLogging(process.env.PROXY_LOG, undefined, { worker: init.index });
    const node = await startLocalNode({
      index: init.index,
      config: init.config,
      table: decodeRouteUpdate(init.table),
      logging,
      ...(init.metrics ? { metrics: createWorkerMetrics() } : {}),
      stateDir: init.stateDir,
      rollups: init.rollups,
      visitorSalt: init.visitorSalt,
      // The primary writes every site log file; this worker sends it its lines in batches (the last as a request).
      siteLogs: {
        write: (batch) => channel.notify(ToPrimary.siteLog, batch),
        writeLast: (batch) => channel.request(ToPrimary.siteLog, batch, 5000),
      },
      // At a drain, every minute left (the current one too) goes to history before this worker exits.
      ...(init.rollups ? { lastRollups: (rollups) => channel.request(ToPrimary.rollups, rollups, 5000) } : {}),
      certificates:
        init.certificates === null
          ? null
          : {
              mode: 'pulled',
              initial: init.certificates,
              supply: fleet,
              // A name with no certificate is asked too: the primary obtains an on-demand one, or moves a
              // managed name still waiting for its first certificate to the front (names with traffic first).
              askUnserved: true,
              capacity: init.certificateCacheCapacity,
            },
      challenges: init.challenges,
      // One response cache for the node: bodies in files, the index the primary's, a copy here.
      ...(init.cache === null
        ? {}
        : { sharedCache: { dir: init.cache.dir, entries: init.cache.entries, link: fleet.cacheIndex } }),
      dataPlane: {
        reusePort: true,
        secret: init.secret,
        ticketKeys: init.ticketKeys,
        rateLimitCounter: (limit) => fleet.rateLimitCounter(limit),
        // Connections per client address are the node's: the primary counts them for every worker.
        connectionCounter: fleet.connectionCounter,
        // One worker probes for all; what any worker sees reaches the others through the fleet.
        health: { probes: init.index === 0, report: (event) => fleet.reportHealth(event) },
        redirects: init.redirects,
        ...(init.bindHost === undefined ? {} : { bindHost: init.bindHost }),
      },
    });
    // The modules this worker compiled, for the next worker's start (NODE_COMPILE_CACHE, set by the primary).
    flushCompileCache();
    // What starting took goes back before the first request (issue 32).
    releaseStartupMemory();
    const ready: WorkerReady = { http: node.plane.httpAddress.port, https: node.plane.httpsAddress?.port ?? null };
    return { node, ready };
  },
});
