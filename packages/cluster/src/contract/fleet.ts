import type { RouteSnapshot } from '@proxyd/model';
import { CacheIndex, type CacheIndexUpdate, type SharedCacheEntry } from './cache-index.js';
import { CertificateSync } from './certificate-sync.js';
import type {
  CertificatePem,
  CertificateUpdate,
  Challenge,
  DataPlaneNode,
  FleetPort,
  HealthEvent,
  NodeStats,
  Telemetry,
} from './node.js';
import { type Limiter, RateLimitAuthority } from './rate-limits.js';
import { RoutePublisher, type RouteUpdate } from './route-tables.js';

/** After an update a node did not take, the names are sent again this much later, ms. */
const CERTIFICATES_RETRY_MS = 1000;

/** Where the fleet reads the certificates it supplies: the certificate manager. */
export interface CertificateSource {
  /** The names served now (exact and `*.parent`): what a `pulled` node starts with. No certificate is read. */
  names(): string[];
  /** A name a node has no certificate for: loaded, checked or obtained; null when it will not be served. */
  certificateFor(name: string): Promise<CertificatePem | null>;
}

/** The node-wide count of connections per client address (proxy-core's `ConnectionCounts`). */
export interface ConnectionCountsLike {
  acquire(node: number, key: string): boolean;
  release(node: number, key: string): void;
  forget(node: number): void;
}

/** What a {@link Fleet} needs. */
export interface FleetOptions {
  /** The route snapshot published now (what a starting node is given). */
  routes(): RouteSnapshot;
  /** Certificates (absent with `auto_https off`). */
  certificates?: CertificateSource;
  /** Node-wide `rate_limit` windows (absent: each node counts its own). */
  rateLimiter?: (limit: number) => Limiter;
  /** Node-wide `max_connections_per_ip` counts (absent: each node counts its own). */
  connections?: ConnectionCountsLike;
  /**
   * One response cache for every node (workers): the fleet keeps its index
   * ({@link CacheIndex}) and removes the body files of the entries that
   * leave it. Absent: each node keeps its own cache.
   */
  cache?: { removeFile(file: string): void };
  /** A broadcast that did not reach every node (logged by the daemon; the fleet goes on). */
  onError?: (what: string, error: Error) => void;
  /**
   * How long {@link Fleet.publishRoutes} waits for every node to confirm a
   * route change before it resolves anyway (default
   * {@link ROUTE_ACK_WAIT_MS}): a slow node keeps the change and applies it
   * in order; the write it came from is durable and answered.
   */
  routeAckWaitMs?: number;
}

/** The default {@link FleetOptions.routeAckWaitMs}: a route write waits this long for a slow node. */
export const ROUTE_ACK_WAIT_MS = 2000;

/** The nodes of a fleet as one transport runs them, and how that transport stops them. */
export interface NodeSet<T extends Telemetry = Telemetry> {
  readonly nodes: readonly DataPlaneNode<T>[];
  /** Drains every node: what is in flight finishes within `graceMs`. */
  stop(graceMs: number): Promise<void>;
}

/** What a node that starts now is given: the table as one compact snapshot, certificates, challenges. */
export interface NodeJoin {
  routes: RouteUpdate & { kind: 'full' };
  /** The names served (for a `pulled` node; no certificate); null without certificates. */
  certificates: CertificateUpdate | null;
  challenges: Challenge[];
  /** The shared response cache's entries now (null: each node keeps its own cache). */
  cache: SharedCacheEntry[] | null;
}

/**
 * The data plane as the control plane sees it: 1..N nodes behind one
 * object, whatever transport carries each. A change goes to every node and
 * resolves once each acknowledged it; a question (metrics, analytics,
 * rollups, stats) is asked of every node and answered by those that answer.
 * The fleet also holds what must be exact across nodes: `rate_limit`
 * windows and connections per client address ({@link FleetPort}, which
 * nodes call), and the challenges presented (a node that starts during an
 * order gets them).
 */
export class Fleet<T extends Telemetry = Telemetry> implements FleetPort {
  readonly #options: FleetOptions;
  readonly #publisher = new RoutePublisher();
  readonly #sync = new CertificateSync();
  /** The update being gathered for the nodes (sent at the next turn), or null. */
  #sending: Promise<void> | null = null;
  readonly #presented = new Map<string, Challenge>();
  readonly #rateLimits: RateLimitAuthority | null;
  readonly #cache: CacheIndex | null;
  /** Cache index changes gathered for the nodes (sent at the next turn), or null. */
  #cacheUpdate: CacheIndexUpdate | null = null;
  readonly #sendCacheUpdate = (): void => this.#flushCacheUpdate();
  #set: NodeSet<T> | null = null;

  constructor(options: FleetOptions) {
    this.#options = options;
    this.#rateLimits = options.rateLimiter === undefined ? null : new RateLimitAuthority(options.rateLimiter);
    this.#cache = options.cache === undefined ? null : new CacheIndex(options.cache);
  }

  /** The shared response cache's index (null: each node keeps its own cache). */
  get cacheIndex(): CacheIndex | null {
    return this.#cache;
  }

  /** Where the fleet's calls go from now on (once the transport started its nodes). */
  attach(set: NodeSet<T>): void {
    this.#set = set;
  }

  /** The nodes now. */
  get nodes(): readonly DataPlaneNode<T>[] {
    return this.#set?.nodes ?? [];
  }

  /** What a node starting now needs (its transport's init). */
  join(): NodeJoin {
    const source = this.#options.certificates;
    return {
      routes: this.#publisher.full(this.#options.routes()),
      certificates: source === undefined ? null : CertificateSync.join(source.names()),
      challenges: [...this.#presented.values()],
      cache: this.#cache?.entries() ?? null,
    };
  }

  /**
   * Publishes a route snapshot: the changes to every node (a compact
   * snapshot when the changes do not apply to what was sent last), and the
   * newest snapshot to a node that answers it missed a version. Resolves
   * once every node acknowledged, or after `routeAckWaitMs` with the nodes
   * that did not reported (`onError`): a slow node is not sent anything
   * more for it (its transport delivers the changes in order, and it
   * applies them when it gets there). Never rejects: the route store has
   * committed, and its write answers.
   */
  async publishRoutes(snapshot: RouteSnapshot): Promise<void> {
    const update = this.#publisher.next(snapshot);
    // The nodes joined with this table or a newer one (at start, the store's first publication).
    if (update === null) return;
    const pending = new Set<number>();
    const all = Promise.all(
      this.nodes.map(async (node) => {
        pending.add(node.index);
        try {
          const ack = await node.applyRoutes(update);
          // The newest table (built once per version): the changes published meanwhile are then behind it.
          if (ack.needsSnapshot === true) await node.applyRoutes(this.#publisher.full(this.#options.routes()));
        } catch (err) {
          this.#report(`route table ${snapshot.version} not published to node ${node.index}`, err);
        } finally {
          pending.delete(node.index);
        }
      }),
    );
    let timer: NodeJS.Timeout | undefined;
    const waitMs = this.#options.routeAckWaitMs ?? ROUTE_ACK_WAIT_MS;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), waitMs);
    });
    const outcome = await Promise.race([all, late]);
    clearTimeout(timer);
    if (outcome === 'late' && pending.size > 0) {
      this.#report(
        `route table ${snapshot.version}: node ${[...pending].join(', ')} did not confirm within ${waitMs} ms`,
        new Error('the change is durable and queued for it; it serves it once it catches up'),
      );
    }
  }

  /**
   * Certificates changed in the manager: `name` was installed or renewed,
   * or (`removed`) is no longer served; no name: some may be gone or come (a
   * `shared` node looks again). A `pulled` node gets the names, gathered
   * over one turn into one update (a burst of installs is one message per
   * node); resolves once every node took it.
   */
  async certificatesChanged(name?: string, removed = false): Promise<void> {
    if (name !== undefined) {
      if (removed) this.#sync.unserved(name);
      else this.#sync.served(name);
    }
    this.#sending ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.#sendCertificates());
    await this.#sending;
  }

  async #sendCertificates(): Promise<void> {
    this.#sending = null;
    const update = this.#sync.take();
    let failed = false;
    await Promise.all(
      this.nodes.map(async (node) => {
        if (node.certificateMode === 'shared') return await node.certificatesChanged(null);
        if (update === null) return;
        await node.certificatesChanged(update).catch((err: unknown) => {
          failed = true;
          this.#report('certificates not sent', err);
        });
      }),
    );
    if (!failed || update === null) return;
    // A node that did not take it (busy past the timeout) would keep a stale index: the names go again
    // a second later (to every node: taking a name twice only drops a copy).
    this.#sync.requeue(update);
    setTimeout(() => void this.certificatesChanged(), CERTIFICATES_RETRY_MS).unref();
  }

  /** Starts answering `challenge` on every node; resolves once each does (the CA may then check). */
  async presentChallenge(challenge: Challenge): Promise<void> {
    this.#presented.set(challengeKey(challenge), challenge);
    await Promise.all(this.nodes.map((node) => node.presentChallenge(challenge)));
  }

  /** Stops answering `challenge` on every node (errors ignored: the order is over). */
  async cleanUpChallenge(challenge: Challenge): Promise<void> {
    this.#presented.delete(challengeKey(challenge));
    await Promise.all(this.nodes.map((node) => node.cleanUpChallenge(challenge).catch(() => {})));
  }

  /**
   * Purges a cache key on every node; whether any had it. With a shared
   * cache the index drops the key first (and its files), the changes not
   * sent yet go before the purge, and the purge resolves once every node's
   * copy dropped it: no node answers it from the cache after.
   */
  async purge(key: string): Promise<boolean> {
    const removed = this.#cache?.purge(key).removed ?? false;
    this.#flushCacheUpdate();
    const answers = await Promise.all(this.nodes.map((node) => node.purge(key)));
    return removed || answers.some((had) => had);
  }

  /** Every node's metrics snapshot (those that keep metrics and answer). */
  async metrics(): Promise<NonNullable<T['metrics']>[]> {
    const answers = await settled(this.nodes.map((node) => node.metrics()));
    return answers.filter((m): m is NonNullable<T['metrics']> => m !== null && m !== undefined);
  }

  /** Every node's analytics state (of `domain`, or all), to merge. */
  async analyticsStates(domain: string | null): Promise<T['analytics'][]> {
    return await settled(this.nodes.map((node) => node.analyticsState(domain)));
  }

  /** Every node's complete minutes before `now`, forgotten by the nodes. */
  async drainRollups(now: number): Promise<T['rollup'][]> {
    return (await settled(this.nodes.map((node) => node.drainRollups(now)))).flat();
  }

  /** Gives every node the day's visitor salt. */
  async setVisitorSalt(salt: Uint8Array): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.setVisitorSalt(salt)));
  }

  /** Gives every node the TLS session-ticket keys (48 bytes). */
  async setTicketKeys(keys: Uint8Array): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.setTicketKeys(keys)));
  }

  /** Requests in flight and connections open, summed over the nodes that answer. */
  async stats(): Promise<NodeStats> {
    const all = await settled(this.nodes.map((node) => node.stats()));
    return all.reduce(
      (sum, s) => ({
        requestsInFlight: sum.requestsInFlight + s.requestsInFlight,
        openConnections: sum.openConnections + s.openConnections,
      }),
      { requestsInFlight: 0, openConnections: 0 },
    );
  }

  /** Drains every node: each finishes what it serves within `graceMs`. */
  async stop(graceMs: number): Promise<void> {
    await this.#set?.stop(graceMs);
  }

  certificateFor(name: string): Promise<CertificatePem | null> {
    return this.#options.certificates?.certificateFor(name) ?? Promise.resolve(null);
  }

  reportHealth(from: number, event: HealthEvent): void {
    for (const node of this.nodes) if (node.index !== from) node.applyHealth(event);
  }

  admitRateLimited(batch: readonly unknown[]): Uint8Array {
    // Without a node-wide window every node counts its own and asks nothing.
    return this.#rateLimits?.admit(batch) ?? new Uint8Array(batch.length / 3).fill(1);
  }

  acquireConnections(from: number, keys: readonly string[]): Uint8Array {
    const counts = this.#options.connections;
    const answers = new Uint8Array(keys.length);
    for (let i = 0; i < keys.length; i++) answers[i] = counts?.acquire(from, keys[i] as string) === false ? 0 : 1;
    return answers;
  }

  releaseConnections(from: number, keys: readonly string[]): void {
    const counts = this.#options.connections;
    if (counts !== undefined) for (const key of keys) counts.release(from, key);
  }

  nodeGone(index: number): void {
    // Its connections are gone with it.
    this.#options.connections?.forget(index);
  }

  cacheStored(_from: number, entry: SharedCacheEntry): void {
    if (this.#cache !== null) this.#queueCacheUpdate(this.#cache.store(entry));
  }

  cacheTouched(_from: number, keys: readonly string[]): void {
    this.#cache?.touch(keys);
  }

  cacheReleased(_from: number, sites: readonly number[]): void {
    if (this.#cache !== null) this.#queueCacheUpdate(this.#cache.release(sites));
  }

  /** Gathers `update` into the changes sent to every node at the next turn (one message per node for a burst). */
  #queueCacheUpdate(update: CacheIndexUpdate): void {
    if (update.set.length === 0 && update.deleted.length === 0) return;
    const pending = this.#cacheUpdate;
    if (pending === null) {
      this.#cacheUpdate = update;
      setImmediate(this.#sendCacheUpdate);
      return;
    }
    for (const entry of update.set) pending.set.push(entry);
    for (const gone of update.deleted) pending.deleted.push(gone);
  }

  #flushCacheUpdate(): void {
    const update = this.#cacheUpdate;
    if (update === null) return;
    this.#cacheUpdate = null;
    for (const node of this.nodes) node.applyCacheIndex(update);
  }

  #report(what: string, err: unknown): void {
    this.#options.onError?.(what, err instanceof Error ? err : new Error(String(err)));
  }
}

function challengeKey(challenge: Challenge): string {
  return `${challenge.type} ${challenge.identifier.toLowerCase()} ${challenge.token}`;
}

/** The values of the promises that fulfil (a node that does not answer is left out). */
async function settled<V>(promises: readonly Promise<V>[]): Promise<V[]> {
  const values: V[] = [];
  for (const answer of await Promise.allSettled(promises)) if (answer.status === 'fulfilled') values.push(answer.value);
  return values;
}
