import type {
  FleetEntry,
  FleetFollower,
  FleetPosition,
  FleetRouteLog,
  FleetWrite,
  FleetWriteResult,
} from '@proxyd/model';
import { type AdminRouteView, type ApiRouteRecord, apiRouteSpec, canonicalRecord, toAdminRoute } from './api-route.js';
import { StoreError, StoreErrorCode } from './errors.js';
import { routeHash } from './route-hash.js';
import type { RouteStore, SnapshotInput, SnapshotOutcome } from './route-store.js';

/** Options of {@link FleetRoutes}. */
export interface FleetRoutesOptions {
  /**
   * How long a write on this node waits for its own change to reach this
   * node's table once the fleet applied it, ms (default 10,000): only
   * longer than a moment when this node's follower is reconnecting. The
   * write answers then anyway (it is applied in the fleet; this node
   * applies it in order as soon as it catches up) and `lagging` is told.
   */
  reachWaitMs?: number;
  /** A write answered before this node's table had it (see `reachWaitMs`). */
  lagging?: (version: number, waitedMs: number) => void;
  /** A route line from the shared storage that is not a valid route (left out). */
  invalid?: (problem: string) => void;
  /** A change of the fleet this node could not apply to its table (its state file): it syncs again. */
  failed?: (err: unknown) => void;
}

interface Waiter {
  epoch: string;
  version: number;
  resolve(): void;
}

/**
 * The route writes of a node of a fleet (global option `storage redis`):
 * API routes live in the fleet's shared storage ({@link FleetRouteLog}),
 * each node's {@link RouteStore} holds a copy (its state file: a restart
 * without the storage serves the last known fleet routes) beside its own
 * Proxyfile and label routes.
 *
 * - A write (`upsert`, `remove`, `applySnapshot`) is applied in the
 *   storage first, atomically and checked against the fleet's API routes
 *   there (a snapshot drops the routes of its `source` the fleet holds);
 *   then this node applies the entry it made and the write answers once
 *   this node's data plane routes it (the store's own ack). The storage
 *   not answering is `STORE_FLEET_UNAVAILABLE`: nothing applied anywhere.
 * - Every node applies the fleet's entries in version order through the
 *   store's API writes, so the precedence table holds on each node: an API
 *   route takes its domain over the node's Proxyfile or label route, and
 *   when it leaves, that node's own declaration comes back.
 * - A DELETE of a domain no API route of the fleet holds removes this
 *   node's own Proxyfile or label route, on this node only (as a
 *   standalone proxyd would), once this node has caught up with the fleet.
 * - Reads (`list`) answer from the node's copy: they never wait for the storage.
 */
export class FleetRoutes implements FleetFollower {
  readonly #store: RouteStore;
  readonly #log: FleetRouteLog;
  readonly #options: FleetRoutesOptions;
  #epoch: string | null = null;
  /** The last fleet version handed to the store (applied or queued there). */
  #version = 0;
  /** The store's last fleet write: the store applies in order, so once it settles every earlier one has. */
  #tail: Promise<unknown> = Promise.resolve();
  #waiters: Waiter[] = [];
  #closed = false;

  constructor(store: RouteStore, log: FleetRouteLog, options: FleetRoutesOptions = {}) {
    this.#store = store;
    this.#log = log;
    this.#options = options;
  }

  /** Starts following the fleet (catching up first); writes may be made at once. */
  start(): this {
    this.#log.follow(this);
    return this;
  }

  /** Every route of this node (the fleet's API routes as this node has them, and its own), sorted by domain. */
  list(): readonly AdminRouteView[] {
    return this.#store.list();
  }

  /** Adds or replaces the API route of `write.domain` in the fleet; resolves once this node routes it. */
  async upsert(write: ApiRouteRecord): Promise<AdminRouteView> {
    const record = canonicalRecord(write);
    const result = await this.#write({ kind: 'upsert', record });
    await this.#reach(result);
    return toAdminRoute(apiRouteSpec(record));
  }

  /**
   * Removes the fleet's API route of `domain`; when the fleet holds none,
   * this node's own Proxyfile or label route of it (this node only).
   * Resolves false when neither exists.
   */
  async remove(domain: string): Promise<boolean> {
    const key = domain.toLowerCase();
    const result = await this.#write({ kind: 'delete', domain: key });
    if (result.kind === 'absent') {
      if (result.epoch !== this.#epoch) this.#log.resync();
      await this.#caughtUp(result.epoch, result.version);
      return await this.#store.removeDeclared(key);
    }
    await this.#reach(result);
    return true;
  }

  /** Replaces the fleet's API routes of `snapshot.source` (spec §2.3); resolves once this node routes them. */
  async applySnapshot(snapshot: SnapshotInput): Promise<SnapshotOutcome> {
    const { source } = snapshot;
    const records = snapshot.routes.map((r) => canonicalRecord({ ...r, source }));
    const result = await this.#write({ kind: 'snapshot', source, records });
    const size = await this.#reach(result);
    const removed = result.kind === 'applied' ? result.entry.deletes.length : 0;
    return {
      source,
      applied: records.length,
      removed,
      total_routes: size,
      route_hash: routeHash(source, records),
    };
  }

  /** Stops following; writes waiting for this node's table answer. */
  close(): void {
    this.#closed = true;
    this.#log.close();
    for (const waiter of this.#waiters.splice(0)) waiter.resolve();
  }

  // FleetFollower: what the log hands over.

  position(): FleetPosition | null {
    return this.#epoch === null ? null : { epoch: this.#epoch, version: this.#version };
  }

  records(): readonly ApiRouteRecord[] {
    return this.#store.apiRecords();
  }

  entries(epoch: string, entries: readonly FleetEntry[]): void {
    if (epoch !== this.#epoch) return;
    for (const entry of entries) {
      if (entry.version <= this.#version) continue;
      if (entry.version !== this.#version + 1) {
        // A hole (the log's reader resyncs on its own; this makes sure): the whole set, once.
        this.#epoch = null;
        this.#log.resync();
        return;
      }
      this.#apply(entry);
    }
    this.#wake();
  }

  reset(position: FleetPosition, records: readonly ApiRouteRecord[]): void {
    this.#track(this.#store.replaceApi(records));
    this.#epoch = position.epoch;
    this.#version = position.version;
    this.#wake();
  }

  invalid(problem: string): void {
    this.#options.invalid?.(problem);
  }

  async #write(write: FleetWrite): Promise<FleetWriteResult & { kind: 'applied' | 'absent' }> {
    if (this.#closed) throw new StoreError(StoreErrorCode.CLOSED, 'route store is closed');
    let result: FleetWriteResult;
    try {
      result = await this.#log.write(write, this.#store.maxRoutes);
    } catch (err) {
      throw new StoreError(StoreErrorCode.FLEET_UNAVAILABLE, (err as Error).message, { cause: err });
    }
    if (result.kind === 'limit') {
      throw new StoreError(
        StoreErrorCode.ROUTE_LIMIT,
        `route limit reached: the fleet holds at most ${this.#store.maxRoutes} API routes (this write would make it ${result.size}); delete routes first`,
      );
    }
    return result;
  }

  /** Applies this node's own write now when it is next in line; resolves with the table size once it is routed. */
  async #reach(result: FleetWriteResult & { kind: 'applied' | 'absent' }): Promise<number> {
    if (result.kind === 'applied' && result.epoch === this.#epoch && result.entry.version === this.#version + 1) {
      const applied = this.#apply(result.entry);
      this.#wake();
      return await applied.catch(() => this.#store.size);
    }
    const version = result.kind === 'applied' ? result.entry.version : result.version;
    // Another history than this node follows (the storage lost its data and was seeded again): catch up now.
    if (result.epoch !== this.#epoch) this.#log.resync();
    await this.#caughtUp(result.epoch, version);
    return this.#store.size;
  }

  /** Resolves once this node's table has every fleet change up to `version` (bounded by `reachWaitMs`). */
  async #caughtUp(epoch: string, version: number): Promise<void> {
    if (!this.#covers(epoch, version)) {
      const waitMs = this.#options.reachWaitMs ?? 10_000;
      const started = Date.now();
      let timer: NodeJS.Timeout | undefined;
      const reached = await new Promise<boolean>((resolve) => {
        this.#waiters.push({ epoch, version, resolve: () => resolve(true) });
        timer = setTimeout(() => resolve(false), waitMs);
      });
      clearTimeout(timer);
      if (!reached) {
        this.#options.lagging?.(version, Date.now() - started);
        return;
      }
    }
    await this.#tail;
  }

  #covers(epoch: string, version: number): boolean {
    return epoch === this.#epoch && version <= this.#version;
  }

  #apply(entry: FleetEntry): Promise<number> {
    this.#version = entry.version;
    return this.#track(this.#store.applyFleet(entry.puts, entry.deletes));
  }

  #track(applied: Promise<number>): Promise<number> {
    const settled = applied.catch((err: unknown) => {
      if (this.#closed) return;
      // This node's copy no longer follows the fleet's history: the whole set again.
      this.#options.failed?.(err);
      this.#epoch = null;
      this.#log.resync();
    });
    this.#tail = settled;
    return applied;
  }

  #wake(): void {
    if (this.#waiters.length === 0) return;
    const still: Waiter[] = [];
    for (const waiter of this.#waiters) {
      if (this.#covers(waiter.epoch, waiter.version)) waiter.resolve();
      else still.push(waiter);
    }
    this.#waiters = still;
  }
}
