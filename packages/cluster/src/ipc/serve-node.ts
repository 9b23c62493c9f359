import type { Channel } from '../channel.js';
import type { CacheIndexUpdate, SharedCacheEntry } from '../contract/cache-index.js';
import type { CertificatePem, CertificateUpdate, Challenge, DataPlaneNode, HealthEvent } from '../contract/node.js';
import { connectToPrimary } from '../worker.js';
import { RemoteConnectionCounter } from './connection-counts.js';
import { ToPrimary, ToWorker } from './protocol.js';
import { RemoteRateLimits } from './rate-limits.js';
import { decodeRouteUpdate } from './route-encoding.js';

/** A worker's way to its fleet (the `FleetPort` seen from a node across IPC). */
export interface FleetLink {
  /** Asks the control plane for a name's certificate on an SNI miss (`FleetPort.certificateFor`); null: not served. */
  certificateFor(name: string): Promise<CertificatePem | null>;
  /** What this node saw of an upstream, for the other nodes. */
  reportHealth(event: HealthEvent): void;
  /** The node-wide counter of a `rate_limit <limit>/s` window. */
  rateLimitCounter(limit: number): { admit(domain: string, ip: string): Promise<boolean> };
  /** The node-wide count of connections per client address (proxy-core's `ConnectionCounter`). */
  readonly connectionCounter: RemoteConnectionCounter;
  /** The node's shared response-cache index, kept by the primary (`FleetPort.cacheStored` and the rest). */
  readonly cacheIndex: {
    stored(entry: SharedCacheEntry): void;
    touched(keys: readonly string[]): void;
    released(sites: readonly number[]): void;
  };
  /** The channel to the primary, for the daemon's own messages (site logs, last rollups). */
  readonly channel: Channel;
}

/** What a worker process does with the IPC side of the contract. */
export interface WorkerNodeHandlers<I> {
  /** Starts the node from the primary's init; `ready` is the primary's `onReady` answer (the ports bound). */
  start(init: I, link: FleetLink): Promise<{ node: DataPlaneNode; ready: unknown }>;
}

/**
 * The IPC transport, worker side: connects to the primary, starts the node
 * with its init (the route table arrives as one compact snapshot) and
 * answers every `DataPlaneNode` call the primary's `WorkerNode` sends,
 * with the same node code one process runs. A drain stops the node; the
 * process exits after it.
 */
export function serveNodeOverIpc<I>(handlers: WorkerNodeHandlers<I>): void {
  let node: DataPlaneNode | undefined;
  connectToPrimary<I>({
    async init(init, channel) {
      const rateLimits = new RemoteRateLimits(channel);
      const link: FleetLink = {
        certificateFor: (name) => channel.request<CertificatePem | null>(ToPrimary.certificate, name, 30_000),
        reportHealth: (event) => channel.notify(ToPrimary.health, event),
        rateLimitCounter: (limit) => rateLimits.counter(limit),
        connectionCounter: new RemoteConnectionCounter(channel),
        cacheIndex: {
          stored: (entry) => channel.notify(ToPrimary.cacheStored, entry),
          touched: (keys) => channel.notify(ToPrimary.cacheTouched, keys),
          released: (sites) => channel.notify(ToPrimary.cacheReleased, sites),
        },
        channel,
      };
      const started = await handlers.start(init, link);
      const served = started.node;
      node = served;
      serveNode(channel, served);
      return started.ready;
    },
    async drain({ graceMs }) {
      await node?.stop(graceMs);
    },
  });
}

/** Registers a handler per `DataPlaneNode` call on `channel` (the primary's `WorkerNode` sends them). */
export function serveNode(channel: Channel, node: DataPlaneNode): void {
  channel.handle<Uint8Array>(ToWorker.routes, (bytes) => node.applyRoutes(decodeRouteUpdate(bytes)));
  channel.handle<CertificateUpdate | null>(ToWorker.certificates, async (update) => {
    await node.certificatesChanged(update);
    return true;
  });
  channel.handle<Challenge>(ToWorker.challengePresent, async (challenge) => {
    await node.presentChallenge(challenge);
    return true;
  });
  channel.handle<Challenge>(ToWorker.challengeCleanUp, async (challenge) => {
    await node.cleanUpChallenge(challenge);
    return true;
  });
  channel.handle<string>(ToWorker.cachePurge, (key) => node.purge(key));
  channel.handle<HealthEvent>(ToWorker.health, (event) => node.applyHealth(event));
  channel.handle<CacheIndexUpdate>(ToWorker.cacheIndex, (update) => node.applyCacheIndex(update));
  channel.handle(ToWorker.metrics, () => node.metrics());
  channel.handle(ToWorker.stats, () => node.stats());
  channel.handle<string | null>(ToWorker.analyticsState, (domain) => node.analyticsState(domain));
  channel.handle<number>(ToWorker.rollups, (now) => node.drainRollups(now));
  channel.handle<Uint8Array>(ToWorker.visitorSalt, async (salt) => {
    await node.setVisitorSalt(salt);
    return true;
  });
  channel.handle<Uint8Array>(ToWorker.ticketKeys, async (keys) => {
    await node.setTicketKeys(keys);
    return true;
  });
}
