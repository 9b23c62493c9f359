import type { Channel } from '../channel.js';
import type { CacheIndexUpdate, SharedCacheEntry } from '../contract/cache-index.js';
import type { Fleet, NodeJoin, NodeSet } from '../contract/fleet.js';
import type {
  CertificateUpdate,
  Challenge,
  DataPlaneNode,
  HealthEvent,
  NodeStats,
  RouteAck,
  Telemetry,
} from '../contract/node.js';
import type { RouteUpdate } from '../contract/route-tables.js';
import { WorkerPool } from '../worker-pool.js';
import { serveConnectionCounts } from './connection-counts.js';
import { ToPrimary, ToWorker } from './protocol.js';
import { RATE_LIMIT_ADMIT } from './rate-limits.js';
import { encodeRouteUpdate } from './route-encoding.js';

/** What {@link startWorkerNodes} needs. */
export interface WorkerNodesOptions<I, T extends Telemetry = Telemetry> {
  count: number;
  /** The module each worker runs (it calls `serveNodeOverIpc`). */
  entry: string;
  env?: NodeJS.ProcessEnv;
  /** Node flags of the workers (default this process's). */
  execArgv?: string[];
  /** Keep a started spare process for a crashed worker's replacement (see `WorkerPoolOptions.spare`). */
  spare?: boolean;
  /** The fleet the nodes join: a starting worker gets its {@link NodeJoin}, and its requests go to it. */
  fleet: Fleet<T>;
  /** The init body of worker `index` from what the fleet gives a starting node (`table` is encoded once per version). */
  init(index: number, join: NodeJoin & { table: Uint8Array }): I;
  /** Registers the daemon's own handlers of a worker's channel (site logs, last rollups). */
  setup?(channel: Channel, index: number): void;
  onReady?(index: number, pid: number, answer: unknown): void;
  onExit?(index: number, pid: number, code: number | null, signal: NodeJS.Signals | null, respawnInMs: number): void;
  onStartFailure?(index: number, error: Error): void;
}

/**
 * The IPC transport, primary side: forks `count` workers (a `WorkerPool`:
 * replaced when they die, drained on stop) and gives the fleet one
 * {@link DataPlaneNode} per worker slot. Each node call is a request on
 * that worker's channel; what a worker asks (certificates on an SNI miss,
 * health for the others, node-wide rate limits and connection counts)
 * goes to the fleet's `FleetPort`. The nodes join `fleet` (`Fleet.attach`)
 * as the first worker starts.
 */
export async function startWorkerNodes<I, T extends Telemetry = Telemetry>(
  options: WorkerNodesOptions<I, T>,
): Promise<NodeSet<T> & { pool: WorkerPool }> {
  const { fleet } = options;
  // The pool is usable from the first worker's setup on, before `start` resolves: worker 0's first
  // health probe, a challenge presented meanwhile, reach the workers that are starting.
  let pool: WorkerPool | null = null;
  const nodes = Array.from({ length: options.count }, (_, index) => new WorkerNode<T>(() => pool, index));
  const set = {
    nodes,
    // A worker still running 1 s after the grace period is killed.
    stop: async (graceMs: number) => await pool?.stop(graceMs, graceMs + 1000),
  };
  fleet.attach(set);
  const started = await WorkerPool.start({
    count: options.count,
    entry: options.entry,
    ...(options.spare === undefined ? {} : { spare: options.spare }),
    ...(options.env === undefined ? {} : { env: options.env }),
    ...(options.execArgv === undefined ? {} : { execArgv: options.execArgv }),
    init(index) {
      const join = fleet.join();
      return options.init(index, { ...join, table: encodeRouteUpdate(join.routes) });
    },
    setup(channel, index, self) {
      pool = self;
      channel.handle<HealthEvent>(ToPrimary.health, (event) => fleet.reportHealth(index, event));
      channel.handle<unknown[]>(RATE_LIMIT_ADMIT, (batch) => fleet.admitRateLimited(batch));
      serveConnectionCounts(channel, index, fleet);
      channel.handle<string>(ToPrimary.certificate, (name) => fleet.certificateFor(name));
      channel.handle<SharedCacheEntry>(ToPrimary.cacheStored, (entry) => fleet.cacheStored(index, entry));
      channel.handle<string[]>(ToPrimary.cacheTouched, (keys) => fleet.cacheTouched(index, keys));
      channel.handle<number[]>(ToPrimary.cacheReleased, (sites) => fleet.cacheReleased(index, sites));
      options.setup?.(channel, index);
    },
    ...(options.onReady === undefined ? {} : { onReady: options.onReady }),
    onExit(index, pid, code, signal, respawnInMs) {
      fleet.nodeGone(index);
      options.onExit?.(index, pid, code, signal, respawnInMs);
    },
    ...(options.onStartFailure === undefined ? {} : { onStartFailure: options.onStartFailure }),
  });
  pool = started;
  return { ...set, pool: started };
}

/**
 * How long a worker may take to confirm a route change before it is
 * reported: as long as a worker may take to start (a hang, not a slow
 * machine). The fleet answers the write long before (`routeAckWaitMs`).
 */
const ROUTE_TIMEOUT_MS = 60_000;

/** A node that is a worker process: each call a request on its channel. */
class WorkerNode<T extends Telemetry> implements DataPlaneNode<T> {
  readonly certificateMode = 'pulled';
  readonly #pool: () => WorkerPool | null;
  readonly index: number;

  constructor(pool: () => WorkerPool | null, index: number) {
    this.#pool = pool;
    this.index = index;
  }

  async applyRoutes(update: RouteUpdate): Promise<RouteAck> {
    // A worker being replaced starts from the fleet's table of now: nothing to send it. A slow one gets
    // the changes in order and applies them when it gets there (the fleet does not wait that long).
    const ack = await this.#change<RouteAck>(ToWorker.routes, encodeRouteUpdate(update), ROUTE_TIMEOUT_MS);
    return ack ?? { version: update.version };
  }

  async certificatesChanged(update: CertificateUpdate | null): Promise<void> {
    await this.#change(ToWorker.certificates, update);
  }

  async presentChallenge(challenge: Challenge): Promise<void> {
    await this.#change(ToWorker.challengePresent, challenge);
  }

  async cleanUpChallenge(challenge: Challenge): Promise<void> {
    await this.#change(ToWorker.challengeCleanUp, challenge);
  }

  async purge(key: string): Promise<boolean> {
    return (await this.#ask<boolean>(ToWorker.cachePurge, key)) === true;
  }

  applyHealth(event: HealthEvent): void {
    this.#pool()?.channel(this.index)?.notify(ToWorker.health, event);
  }

  applyCacheIndex(update: CacheIndexUpdate): void {
    // A worker being replaced copies the index when it starts (its init): nothing to send it.
    this.#pool()?.channel(this.index)?.notify(ToWorker.cacheIndex, update);
  }

  metrics(): Promise<T['metrics'] | null> {
    return this.#ask(ToWorker.metrics, null, 2000);
  }

  analyticsState(domain: string | null): Promise<T['analytics']> {
    return this.#ask(ToWorker.analyticsState, domain);
  }

  drainRollups(now: number): Promise<T['rollup'][]> {
    return this.#ask(ToWorker.rollups, now);
  }

  async setVisitorSalt(salt: Uint8Array): Promise<void> {
    await this.#change(ToWorker.visitorSalt, salt);
  }

  async setTicketKeys(keys: Uint8Array): Promise<void> {
    await this.#change(ToWorker.ticketKeys, keys);
  }

  stats(): Promise<NodeStats> {
    return this.#ask(ToWorker.stats, null, 2000);
  }

  async stop(): Promise<void> {
    // The pool drains its workers together (`NodeSet.stop`); one node alone is not stopped.
    throw new Error('a worker node stops with its pool');
  }

  /** A question: rejects when the worker is not there to answer. */
  #ask<A>(type: string, body: unknown, timeoutMs = 5000): Promise<A> {
    const channel = this.#pool()?.channel(this.index);
    if (channel === null || channel === undefined)
      return Promise.reject(new Error(`worker ${this.index} is not running`));
    return channel.request<A>(type, body, timeoutMs);
  }

  /**
   * A change: resolves with the answer, or undefined when the worker went
   * away (its replacement starts from the fleet's state of now); rejects
   * with an error a live worker answered, or a timeout.
   */
  async #change<A>(type: string, body: unknown, timeoutMs = 5000): Promise<A | undefined> {
    const channel = this.#pool()?.channel(this.index);
    if (channel === null || channel === undefined) return undefined;
    try {
      return await channel.request<A>(type, body, timeoutMs);
    } catch (err) {
      if ((err as { code?: string }).code === 'CLOSED' || this.#pool()?.channel(this.index) !== channel)
        return undefined;
      throw err;
    }
  }
}
