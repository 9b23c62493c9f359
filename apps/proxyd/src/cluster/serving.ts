import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { isSea } from 'node:sea';
import { fileURLToPath } from 'node:url';
import { type AnalyticsSnapshot, type MinuteRollup, mergeAnalyticsStates } from '@proxyd/analytics';
import type { CertificateWiring } from '@proxyd/certificates';
import { ChallengeTable } from '@proxyd/certificates/challenge-table';
import {
  type CertificatePem,
  Fleet,
  type Limiter,
  type NodeSet,
  reusePortMigration,
  startWorkerNodes,
  ToPrimary,
  type WorkerInit,
  type WorkerReady,
} from '@proxyd/cluster';
import { type Config, changesFrom, type RouteSnapshot, stateOf } from '@proxyd/model';
import {
  ConnectionCounts,
  DEFAULT_WORKER_CERTIFICATE_CACHE_CAPACITY,
  LISTENER_DEFAULTS,
  RateLimiter,
} from '@proxyd/proxy-core';
import type { Logging, MetricsSnapshot, ProxydMetrics, SiteLogBatch, SiteLogOutputs } from '@proxyd/telemetry';
import { mallocEnv, workerExecArgv, workerNodeOptions } from '../heap-tuning.js';
import { type CacheDir, createCacheDir } from './cache-dir.js';
import { type ProxydTelemetry, startLocalNode } from './local-node.js';

/** The module every worker runs (built beside this one). */
const WORKER_ENTRY = fileURLToPath(new URL('./worker.js', import.meta.url));

/**
 * The control plane's challenge table, relayed to the fleet: a challenge is
 * presented to every node before the issuer tells the CA to validate
 * (`present` resolves once each answers it), and a node that starts during
 * an order gets the challenges presented then (`Fleet.join`). A node in this
 * process answers from this table itself. `fleet()` is read at each
 * challenge (the fleet exists once the table is given to the manager).
 */
export function fleetChallengeTable(
  fleet: () => Pick<Fleet, 'presentChallenge' | 'cleanUpChallenge'> | null,
): ChallengeTable {
  return new ChallengeTable({
    present: async (challenge) => await fleet()?.presentChallenge(challenge),
    cleanUp: async (challenge) => await fleet()?.cleanUpChallenge(challenge),
  });
}

/** What {@link startServing} needs. */
export interface ServingOptions {
  /** Nodes: 1 serves in this process; N > 1 forks N workers. */
  count: number;
  /** With workers, keep one started spare process to replace a crashed worker (`--spare-worker`). */
  spare?: boolean;
  /** The running config; with workers its `http_port` and `https_port` resolved (not 0: every worker binds the same port). */
  config: Config;
  /** The published route snapshot now. */
  routes(): RouteSnapshot;
  certificates: CertificateWiring | undefined;
  /** TLS contexts each worker keeps (default {@link DEFAULT_WORKER_CERTIFICATE_CACHE_CAPACITY}). */
  workerCertCache?: number;
  stateDir: string;
  bindHost?: string;
  redirects: boolean;
  /** This process's metrics (`single` with one node; with workers they keep their own). */
  metrics?: ProxydMetrics;
  /** Whether workers keep request metrics (false with `--no-metrics`). */
  workerMetrics: boolean;
  logging: Logging;
  /** Where sites' log lines are written: this process owns every file. */
  siteLogs: SiteLogOutputs;
  /**
   * `rate_limit_scope fleet`: every node's `rate_limit` counts (this
   * daemon's, in this process) added up with the other daemons' (absent:
   * this daemon's alone).
   */
  rateLimits?: (limit: number) => Limiter;
  /** History, when on: the day's visitor salt for a node's start, and where a draining worker's last rollups go. */
  history?: { visitorSalt(): Buffer | null; accept(rollups: readonly MinuteRollup[]): void };
}

/** The data plane as the daemon drives it: one {@link Fleet}, whatever carries its nodes. */
export interface Serving {
  readonly fleet: Fleet<ProxydTelemetry>;
  readonly httpAddress: { host: string; port: number };
  /** The admin API's AnalyticsPort: every node's collectors merged, as one collector fed all traffic would show. */
  analytics: {
    list(): Promise<AnalyticsSnapshot[]>;
    get(domain: string): Promise<AnalyticsSnapshot | undefined>;
  };
  /** The admin API's CachePort: a purge reaches every node. */
  cache: { readonly enabled: boolean; purge(key: string): Promise<boolean> };
  /** With workers: their metrics, one snapshot per worker that answered. */
  metricsSnapshots(): Promise<MetricsSnapshot[]>;
  /** Publishes a route snapshot; resolves once every node serves it. */
  setRoutes(snapshot: RouteSnapshot): Promise<void>;
  /** Gives every node the TLS session-ticket keys (48 bytes), and a worker started later too. */
  setTicketKeys(keys: Buffer): Promise<void>;
}

/**
 * Starts the data plane behind one fleet: with `count` 1 a node in this
 * process (the in-process transport), else `count` forked workers (the IPC
 * transport; the primary serves no traffic). The fleet keeps them fed:
 * the route table as deltas, certificates, ACME challenges before the CA
 * checks them, on-demand certificates when a handshake asks, upstream
 * health (worker 0 probes; what any worker sees goes to the others),
 * `rate_limit` admissions and connections per client address
 * (`max_connections_per_ip`), both counted for the whole node. Workers
 * bind with SO_REUSEPORT: the kernel spreads connections over them, and a
 * worker's crash leaves the others serving while it is replaced.
 */
export async function startServing(options: ServingOptions): Promise<Serving> {
  const { config } = options;
  const logger = options.logging.forTarget('proxy::server');
  const manager = options.certificates?.manager;
  const workers = options.count > 1;
  const pem = ({ name, cert, key }: CertificatePem): CertificatePem => ({ name, cert, key });
  // With workers, one response cache for the node: its index here, its bodies in files every worker reads.
  const cacheDir = workers ? await createCacheDir() : null;
  const fleet = new Fleet<ProxydTelemetry>({
    routes: options.routes,
    ...(cacheDir === null ? {} : { cache: { removeFile: cacheDir.removeFile } }),
    ...(manager === undefined
      ? {}
      : {
          certificates: {
            names: () => manager.servedNames(),
            // Loads an evicted certificate, obtains an on-demand one, moves a waiting managed name to the front.
            async certificateFor(name) {
              const context = await manager.contextFor(name);
              const one = context === null ? null : await manager.pemFor(name);
              return one === null ? null : pem(one);
            },
          },
        }),
    // With workers, `rate_limit` windows and `max_connections_per_ip` are counted here for every one.
    ...(workers
      ? {
          rateLimiter: options.rateLimits ?? ((limit: number) => new RateLimiter({ limit })),
          connections: new ConnectionCounts(
            config.global.servers?.max_connections_per_ip ?? LISTENER_DEFAULTS.maxConnectionsPerIp,
          ),
        }
      : {}),
    onError: (what, error) => logger.error({ error: error.message }, what),
  });
  // Workers share one set of ticket keys (a session resumes on any of them); storage redis replaces it.
  const ticketKeys: { current: Buffer } = { current: randomBytes(48) };
  const set =
    cacheDir !== null ? await startWorkers(options, fleet, ticketKeys, cacheDir) : await startHere(options, fleet);
  fleet.attach(set);
  // The domains whose site caches, kept per change: a route write does not walk the table.
  const cached = new Set<string>();
  let cachedOf: object | null = null;
  const followCache = (snapshot: RouteSnapshot) => {
    const changes = changesFrom(cachedOf, snapshot);
    if (changes === null) {
      cached.clear();
      for (const route of snapshot.routes) if (route.site.cache !== null) cached.add(route.domain.toLowerCase());
    } else {
      for (const domain of changes.removed) cached.delete(domain);
      for (const route of changes.upserted) {
        if (route.site.cache !== null) cached.add(route.domain.toLowerCase());
        else cached.delete(route.domain.toLowerCase());
      }
    }
    cachedOf = stateOf(snapshot);
  };
  followCache(options.routes());
  return {
    fleet,
    httpAddress: set.httpAddress,
    analytics: {
      async list() {
        return mergeAnalyticsStates(await fleet.analyticsStates(null)).list();
      },
      async get(domain) {
        return mergeAnalyticsStates(await fleet.analyticsStates(domain)).get(domain);
      },
    },
    cache: {
      get enabled() {
        return cached.size > 0;
      },
      purge: (key) => fleet.purge(key),
    },
    metricsSnapshots: () => fleet.metrics(),
    setRoutes(snapshot) {
      followCache(snapshot);
      return fleet.publishRoutes(snapshot);
    },
    setTicketKeys(keys) {
      ticketKeys.current = keys;
      return fleet.setTicketKeys(keys);
    },
  };
}

/** The in-process transport: one node, this process's data plane, reading the manager's certificates. */
async function startHere(
  options: ServingOptions,
  fleet: Fleet<ProxydTelemetry>,
): Promise<NodeSet<ProxydTelemetry> & { httpAddress: { host: string; port: number } }> {
  const join = fleet.join();
  const manager = options.certificates?.manager;
  const node = await startLocalNode({
    index: 0,
    config: options.config,
    table: join.routes,
    logging: options.logging,
    ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
    stateDir: options.stateDir,
    rollups: options.history !== undefined,
    visitorSalt: null,
    siteLogs: {
      write: (batch) => options.siteLogs.writeBatch(batch),
      writeLast: async (batch) => options.siteLogs.writeBatch(batch),
    },
    certificates: manager === undefined ? null : { mode: 'shared', manager },
    challenges: join.challenges,
    dataPlane: {
      redirects: options.redirects,
      ...(options.bindHost === undefined ? {} : { bindHost: options.bindHost }),
      ...(options.rateLimits === undefined ? {} : { rateLimitCounter: options.rateLimits }),
    },
  });
  return { nodes: [node], stop: (graceMs) => node.stop(graceMs), httpAddress: node.plane.httpAddress };
}

/** The IPC transport: `count` forked workers, each a node. */
async function startWorkers(
  options: ServingOptions,
  fleet: Fleet<ProxydTelemetry>,
  ticketKeys: { current: Buffer },
  cacheDir: CacheDir,
): Promise<NodeSet<ProxydTelemetry> & { httpAddress: { host: string; port: number } }> {
  const { config } = options;
  const logger = options.logging.forTarget('proxy::server');
  const secret = randomBytes(32);
  const singleExecutable = isSea();
  const set = await startWorkerNodes<WorkerInit, ProxydTelemetry>({
    count: options.count,
    entry: WORKER_ENTRY,
    // A started spare takes a crashed worker's place (~20 ms instead of a Node start under load); asked for.
    spare: options.spare === true,
    // A young generation capped at start (V8 sizes it then): ~30 MB less per worker after load (issue 32);
    // the single executable takes it through NODE_OPTIONS (its arguments are all its own).
    execArgv: singleExecutable ? [...process.execArgv] : workerExecArgv(),
    // V8's compile cache (the first worker writes it): a fresh worker starts in ~60 % of the time.
    // glibc's malloc thresholds fixed, so a burst's freed memory goes back (heap-tuning.ts).
    env: {
      NODE_COMPILE_CACHE: path.join(options.stateDir, 'compile-cache'),
      ...mallocEnv(),
      ...(singleExecutable ? { NODE_OPTIONS: workerNodeOptions() } : {}),
    },
    fleet,
    init: (index, join) => ({
      index,
      config,
      table: join.table,
      certificates: join.certificates,
      certificateCacheCapacity: options.workerCertCache ?? DEFAULT_WORKER_CERTIFICATE_CACHE_CAPACITY,
      challenges: join.challenges,
      secret,
      ticketKeys: ticketKeys.current,
      ...(options.bindHost === undefined ? {} : { bindHost: options.bindHost }),
      redirects: options.redirects,
      stateDir: options.stateDir,
      metrics: options.workerMetrics,
      rollups: options.history !== undefined,
      visitorSalt: options.history?.visitorSalt() ?? null,
      cache: { dir: cacheDir.path, entries: join.cache ?? [] },
    }),
    setup(channel) {
      channel.handle<MinuteRollup[]>(ToPrimary.rollups, (rollups) => {
        options.history?.accept(rollups);
        return true;
      });
      channel.handle<SiteLogBatch>(ToPrimary.siteLog, (batch) => {
        options.siteLogs.writeBatch(batch);
        return true;
      });
    },
    onReady(index, pid, answer) {
      const ready = answer as WorkerReady;
      logger.info({ worker: index, pid, http: ready.http, https: ready.https }, `worker ${index} serving`);
    },
    onExit(index, pid, code, signal, respawnInMs) {
      logger.error(
        { worker: index, pid, code, signal, respawn_in_ms: respawnInMs },
        `worker ${index} exited (${signal ?? `code ${code}`}); replacing it`,
      );
    },
    onStartFailure(index, error) {
      logger.error({ worker: index, error: error.message }, `worker ${index} did not start; replacing it`);
    },
  });
  if (reusePortMigration() === 'off') {
    logger.info(
      { sysctl: 'net.ipv4.tcp_migrate_req=1' },
      'workers share each port with SO_REUSEPORT; set net.ipv4.tcp_migrate_req=1 so that a graceful stop hands the connections queued on a worker to the others instead of resetting them (packaging/sysctl.d/50-proxyd.conf)',
    );
  }
  return {
    nodes: set.nodes,
    async stop(graceMs) {
      await set.stop(graceMs);
      await cacheDir.remove();
    },
    httpAddress: {
      host: config.global.default_bind[0] ?? options.bindHost ?? '0.0.0.0',
      port: config.global.http_port,
    },
  };
}
