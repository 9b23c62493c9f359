import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type AnalyticsSnapshot,
  type AnalyticsState,
  type MinuteRollup,
  mergeAnalyticsStates,
} from '@proxyd/analytics';
import type { CertificateWiring } from '@proxyd/certificates';
import { ChallengeTable, type PresentedChallenge } from '@proxyd/certificates';
import { WorkerPool } from '@proxyd/cluster';
import type { Config, RouteSnapshot } from '@proxyd/model';
import { ConnectionCounts, LISTENER_DEFAULTS } from '@proxyd/proxy-core';
import type { MetricsSnapshot, SiteLogBatch, SiteLogOutputs } from '@proxyd/telemetry';
import type { Logger } from 'pino';
import { serveConnectionCounts } from './connection-counts.js';
import {
  type CertificatePem,
  type HealthEvent,
  ToPrimary,
  ToWorker,
  type WorkerInit,
  type WorkerReady,
} from './protocol.js';
import { RATE_LIMIT_ADMIT, RateLimitAuthority } from './rate-limits.js';
import { reusePortMigration } from './reuseport-migration.js';
import { RoutePublisher } from './route-tables.js';
import { CertificateSync } from './worker-certificates.js';

/** The module every worker runs (built beside this one). */
const WORKER_ENTRY = fileURLToPath(new URL('./worker.js', import.meta.url));

/**
 * The challenge table of a multi-core daemon: a challenge is answered by
 * every worker before the issuer tells the CA to validate (`present`
 * resolves once each worker has it), and a worker that starts during an
 * order gets the challenges presented then.
 */
export class BroadcastChallengeTable extends ChallengeTable {
  #pool: WorkerPool | null = null;
  readonly #presented = new Map<string, PresentedChallenge>();

  /** Where challenges go from now on (set once the workers run). */
  attach(pool: WorkerPool): void {
    this.#pool = pool;
  }

  /** The challenges presented now (a new worker's init). */
  presented(): PresentedChallenge[] {
    return [...this.#presented.values()];
  }

  override async present(challenge: PresentedChallenge): Promise<void> {
    super.present(challenge);
    this.#presented.set(keyOf(challenge), challenge);
    await this.#pool?.broadcast(ToWorker.challengePresent, challenge);
  }

  override async cleanUp(challenge: PresentedChallenge): Promise<void> {
    super.cleanUp(challenge);
    this.#presented.delete(keyOf(challenge));
    await this.#pool?.broadcast(ToWorker.challengeCleanUp, challenge).catch(() => {});
  }
}

function keyOf(challenge: PresentedChallenge): string {
  return `${challenge.type} ${challenge.identifier.toLowerCase()} ${challenge.token}`;
}

/** What {@link startWorkers} needs. */
export interface WorkersOptions {
  count: number;
  /** The running config, its `http_port` and `https_port` resolved (not 0: every worker binds the same port). */
  config: Config;
  /** The published route snapshot now (a worker's init). */
  routes(): RouteSnapshot;
  certificates: CertificateWiring | undefined;
  challenges: BroadcastChallengeTable | undefined;
  stateDir: string;
  bindHost?: string;
  redirects: boolean;
  /** Whether workers keep request metrics (false with `--no-metrics`). */
  metrics: boolean;
  logger: Logger;
  /** Where workers' site log lines are written: this process owns every file. */
  siteLogs: SiteLogOutputs;
  /** History, when on: the day's visitor salt for a worker's init, and where a draining worker's last rollups go. */
  history?: { visitorSalt(): Buffer | null; accept(rollups: readonly MinuteRollup[]): void };
}

/** The data plane of a multi-core daemon, as the primary drives it. */
export interface Workers {
  readonly httpAddress: { host: string; port: number };
  readonly pool: WorkerPool;
  /** Publishes a route snapshot to every worker; resolves once each swapped (failures are logged). */
  setRoutes(snapshot: RouteSnapshot): Promise<void>;
  /** Sends every worker the certificates that changed in the manager since the last call. */
  certificatesChanged(name?: string): Promise<void>;
  /** The admin API's AnalyticsPort: every worker's collectors merged, as one collector fed all traffic would show. */
  analytics: {
    list(): Promise<AnalyticsSnapshot[]>;
    get(domain: string): Promise<AnalyticsSnapshot | undefined>;
  };
  /** Every worker's metrics (those that answer within 2 s), for the primary's scrape. */
  metricsSnapshots(): Promise<MetricsSnapshot[]>;
  /** Every worker's complete minutes before `now` (those that answer within 5 s), forgotten by the workers. */
  drainRollups(now: number): Promise<MinuteRollup[]>;
  /** Gives every worker the day's visitor salt. */
  setVisitorSalt(salt: Buffer): Promise<void>;
  /** The admin API's CachePort: a purge reaches every worker. */
  cache: { readonly enabled: boolean; purge(key: string): Promise<boolean> };
  /** Drains every worker: each finishes what it serves within `graceMs` and exits (killed 1 s later if not). */
  close(graceMs: number): Promise<void>;
}

/**
 * Forks `count` data-plane workers (`./worker.js`) and keeps them fed: the
 * route table and certificates at start and on every change, ACME
 * challenges before the CA checks them, on-demand certificates when a
 * worker's handshake asks, upstream health (worker 0 probes; what any
 * worker sees goes to the others), `rate_limit` admissions (counted here, for
 * all workers: `rate-limits.ts`) and connections per client address
 * (`max_connections_per_ip`, the node's cap: `connection-counts.ts`). The primary itself serves no traffic. Every
 * worker binds the listeners with SO_REUSEPORT: the kernel spreads
 * connections over them, and a worker's crash leaves the others serving
 * while it is replaced (see `WorkerPool`).
 */
export async function startWorkers(options: WorkersOptions): Promise<Workers> {
  const { config, logger } = options;
  const manager = options.certificates?.manager;
  const sync = new CertificateSync();
  const secret = randomBytes(32);
  const ticketKeys = randomBytes(48);
  const served = (): CertificatePem[] => manager?.served() ?? [];
  const rateLimits = new RateLimitAuthority();
  // `max_connections_per_ip` counted here for every worker: the cap is the node's.
  const connections = new ConnectionCounts(
    config.global.servers?.max_connections_per_ip ?? LISTENER_DEFAULTS.maxConnectionsPerIp,
  );
  const publisher = new RoutePublisher();
  let cacheEnabled = options.routes().routes.some((r) => r.site.cache !== null);
  const pool = await WorkerPool.start({
    count: options.count,
    entry: WORKER_ENTRY,
    // A started spare takes a crashed worker's place (~20 ms instead of a Node start under load).
    spare: true,
    // V8's compile cache (the first worker writes it): a fresh worker starts in ~60 % of the time.
    env: { NODE_COMPILE_CACHE: path.join(options.stateDir, 'compile-cache'), ...process.env },
    init(index): WorkerInit {
      return {
        index,
        config,
        table: publisher.full(options.routes()),
        certificates: manager === undefined ? null : sync.all(served()),
        onDemand: config.global.on_demand_ask !== null,
        challenges: options.challenges?.presented() ?? [],
        secret,
        ticketKeys,
        ...(options.bindHost === undefined ? {} : { bindHost: options.bindHost }),
        redirects: options.redirects,
        stateDir: options.stateDir,
        metrics: options.metrics,
        rollups: options.history !== undefined,
        visitorSalt: options.history?.visitorSalt() ?? null,
      };
    },
    setup(channel, index, self) {
      channel.handle<HealthEvent>(ToPrimary.health, (event) => self.notify(ToWorker.health, event, index));
      channel.handle<unknown[]>(RATE_LIMIT_ADMIT, (batch) => rateLimits.admit(batch));
      serveConnectionCounts(channel, index, connections);
      channel.handle<MinuteRollup[]>(ToPrimary.rollups, (rollups) => {
        options.history?.accept(rollups);
        return true;
      });
      channel.handle<SiteLogBatch>(ToPrimary.siteLog, (batch) => {
        options.siteLogs.writeBatch(batch);
        return true;
      });
      channel.handle<string>(ToPrimary.onDemandCertificate, async (name) => {
        if (manager === undefined) return null;
        const context = await manager.contextFor(name);
        return context === null ? null : manager.servedFor(name);
      });
    },
    onReady(index, pid, answer) {
      const ready = answer as WorkerReady;
      logger.info({ worker: index, pid, http: ready.http, https: ready.https }, `worker ${index} serving`);
    },
    onExit(index, pid, code, signal, respawnInMs) {
      // Its connections are gone with it.
      connections.forget(index);
      logger.error(
        { worker: index, pid, code, signal, respawn_in_ms: respawnInMs },
        `worker ${index} exited (${signal ?? `code ${code}`}); replacing it`,
      );
    },
    onStartFailure(index, error) {
      logger.error({ worker: index, error: error.message }, `worker ${index} did not start; replacing it`);
    },
  });
  options.challenges?.attach(pool);
  if (options.count > 1 && reusePortMigration() === 'off') {
    logger.info(
      { sysctl: 'net.ipv4.tcp_migrate_req=1' },
      'workers share each port with SO_REUSEPORT; set net.ipv4.tcp_migrate_req=1 so that a graceful stop hands the connections queued on a worker to the others instead of resetting them (packaging/sysctl.d/50-proxyd.conf)',
    );
  }
  return {
    httpAddress: {
      host: config.global.default_bind[0] ?? options.bindHost ?? '0.0.0.0',
      port: config.global.http_port,
    },
    pool,
    async setRoutes(snapshot) {
      const { version } = snapshot;
      cacheEnabled = snapshot.routes.some((r) => r.site.cache !== null);
      try {
        await pool.broadcast(ToWorker.routes, publisher.next(snapshot));
        return;
      } catch {
        // A worker missed a change (or refused it): the whole table, to every worker; those up to date skip it.
      }
      await pool.broadcast(ToWorker.routes, publisher.full(snapshot)).catch((err: unknown) => {
        logger.error({ version, error: (err as Error).message }, 'route table not published to every worker');
      });
    },
    async certificatesChanged(name) {
      if (manager === undefined) return;
      // One installed certificate: that one only (not a pass over every name served).
      const one = name === undefined ? undefined : manager.servedFor(name);
      const update = one === undefined ? sync.diff(served()) : one === null ? null : sync.one(one);
      if (update === null) return;
      await pool.broadcast(ToWorker.certificates, update).catch((err: unknown) => {
        logger.error({ error: (err as Error).message }, 'certificates not sent to every worker');
      });
    },
    metricsSnapshots: () => pool.gather<MetricsSnapshot>(ToWorker.metrics, null, 2000),
    drainRollups: async (now) => (await pool.gather<MinuteRollup[]>(ToWorker.rollups, now, 5000)).flat(),
    setVisitorSalt: (salt) => pool.broadcast(ToWorker.visitorSalt, salt),
    analytics: {
      async list() {
        const states = await pool.gather<AnalyticsState>(ToWorker.analyticsState, null);
        return mergeAnalyticsStates(states).list();
      },
      async get(domain) {
        const states = await pool.gather<AnalyticsState>(ToWorker.analyticsState, domain);
        return mergeAnalyticsStates(states).get(domain);
      },
    },
    cache: {
      get enabled() {
        return cacheEnabled;
      },
      async purge(key) {
        const answers = await pool.gather<boolean>(ToWorker.cachePurge, key);
        return answers.some((had) => had);
      },
    },
    close: (graceMs) => pool.stop(graceMs, graceMs + 1000),
  };
}
