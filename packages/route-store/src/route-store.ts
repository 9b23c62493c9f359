import type { RouteOrigin, RouteSpec } from '@proxyd/proxy-core/model';
import {
  type AdminRouteView,
  type ApiRouteRecord,
  apiRouteSpec,
  canonicalRecord,
  toAdminRoute,
  toApiRecord,
} from './api-route.js';
import { StoreError, StoreErrorCode } from './errors.js';
import { type DeclaredOrigin, fallbackRoute, mayTake, ORIGINS } from './precedence.js';
import { routeHash } from './route-hash.js';
import type { RouteSink } from './sink.js';
import { type RecoveredState, StateFile } from './state-file.js';

/** Receives every published route set: an immutable array and its version. */
/**
 * Gets every published table. A listener that returns a promise (a
 * multi-core daemon's, resolved once every worker swapped) holds the write
 * that published until it settles: writes resolve once the data plane
 * serves them. Its rejection is the listener's to report; the write stands.
 */
export type RouteListener = (routes: readonly RouteSpec[], version: number) => unknown;

/** A snapshot request (spec §2.3), domains of `routes` unique. */
export interface SnapshotInput {
  source: string;
  routes: ReadonlyArray<{ domain: string; upstream: string; tls: boolean }>;
}

/** A snapshot reconcile's outcome (spec §2.3 response). */
export interface SnapshotOutcome {
  source: string;
  /** Routes of the desired set now in the table (its length). */
  applied: number;
  /** Routes `source` owned that were absent from the desired set. */
  removed: number;
  /** Routes in the table after the operation. */
  total_routes: number;
  /** See {@link routeHash}. */
  route_hash: string;
}

/** Options of {@link RouteStore.open}. */
export interface RouteStoreOptions {
  /** The state file of API routes (`<state_dir>/routes.json`); null keeps them in memory only. */
  stateFile: string | null;
  /** The Proxyfile's routes at start (default none). */
  proxyfileRoutes?: readonly RouteSpec[];
}

interface Draft {
  table: Map<string, RouteSpec>;
  declared: ReadonlyMap<DeclaredOrigin, ReadonlyMap<string, RouteSpec>>;
  /** Whether an API route was added, replaced or removed (the state file must be rewritten). */
  apiChanged: boolean;
}

interface Op {
  apply(draft: Draft): unknown;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/**
 * The one owner of routes: one route per lowercase domain, each with an
 * origin (`proxyfile`, `labels`, `api`) and a `source` tag. Who holds a
 * domain follows the precedence table `ORIGINS` (see precedence.ts):
 *
 * - An API write (`upsert`, `applySnapshot`) replaces the domain's route
 *   whoever owned it.
 * - `replaceOrigin('proxyfile' | 'labels', …)` replaces that origin's
 *   declared set: it fills domains that are free, its own or held by a
 *   lower rank, unless a higher-ranked origin declares them; it never takes
 *   a domain an API write holds.
 * - Removing a route brings back the highest-ranked declaration ranked
 *   below it: deleting an API route over a domain the Proxyfile declares
 *   brings the Proxyfile's route back (the table then equals what a restart
 *   would rebuild).
 *
 * Writes are serialised and group-committed: the writes queued while one
 * file write is in flight are applied together and persisted with one
 * atomic write. A write's promise resolves only after the state file is
 * durable and the new table is published; on a persistence failure it
 * rejects and nothing of its batch is applied.
 */
export class RouteStore implements RouteSink {
  #table: Map<string, RouteSpec>;
  #declared: ReadonlyMap<DeclaredOrigin, ReadonlyMap<string, RouteSpec>>;
  #routes: readonly RouteSpec[] = Object.freeze([]);
  #version = 0;
  #listeners = new Set<RouteListener>();
  #pending: Op[] = [];
  #flushing: Promise<void> | null = null;
  #closed = false;
  readonly #file: StateFile | null;

  private constructor(file: StateFile | null, proxyfile: readonly RouteSpec[], records: readonly ApiRouteRecord[]) {
    this.#file = file;
    const declared = byDomain(proxyfile);
    this.#declared = new Map([['proxyfile', declared]]);
    this.#table = new Map(declared);
    for (const record of records) this.#table.set(record.domain, apiRouteSpec(record));
    this.#publish();
  }

  /**
   * Opens the store: loads the API routes from the state file (see
   * {@link StateFile.load} for a corrupt file) over the Proxyfile's routes
   * and publishes version 1. `recovered` is non-null when a corrupt state
   * file was set aside.
   */
  static async open(options: RouteStoreOptions): Promise<{ store: RouteStore; recovered: RecoveredState | null }> {
    const file = options.stateFile === null ? null : new StateFile(options.stateFile);
    const loaded = file ? await file.load() : { records: [], recovered: null };
    const store = new RouteStore(file, options.proxyfileRoutes ?? [], loaded.records);
    return { store, recovered: loaded.recovered };
  }

  /** The version of the published table (1 after open, +1 per applied batch). */
  get version(): number {
    return this.#version;
  }

  /** The published routes (frozen; replaced, never mutated; in no particular order). */
  get routes(): readonly RouteSpec[] {
    return this.#routes;
  }

  /** The state file path, or null when API routes are not persisted. */
  get stateFile(): string | null {
    return this.#file?.path ?? null;
  }

  /** Calls `listener` now with the current table, then on every publish. Returns an unsubscribe. */
  subscribe(listener: RouteListener): () => void {
    this.#listeners.add(listener);
    const result = listener(this.#routes, this.#version);
    if (result instanceof Promise) result.catch(() => {});
    return () => this.#listeners.delete(listener);
  }

  /** Every route in the admin representation, sorted by domain. */
  list(): AdminRouteView[] {
    return this.#routes.map(toAdminRoute).sort(compareDomain);
  }

  /** Number of routes per origin in the published table. */
  countByOrigin(): Record<RouteOrigin, number> {
    const counts: Record<RouteOrigin, number> = { proxyfile: 0, labels: 0, api: 0 };
    for (const route of this.#routes) counts[route.origin]++;
    return counts;
  }

  /** Adds or replaces the route of `write.domain` (case-insensitive); resolves once durable. */
  upsert(write: ApiRouteRecord): Promise<AdminRouteView> {
    const record = canonicalRecord(write);
    const spec = apiRouteSpec(record);
    return this.#enqueue((draft) => {
      // `api` outranks every origin (ORIGINS): an admin write takes the domain whoever holds it.
      draft.table.set(record.domain, spec);
      draft.apiChanged = true;
      return toAdminRoute(spec);
    });
  }

  /** Removes the route of `domain` (case-insensitive); resolves false when there is none. */
  remove(domain: string): Promise<boolean> {
    const key = domain.toLowerCase();
    return this.#enqueue((draft) => removeDomain(draft, key));
  }

  /** Replaces the complete route set of `snapshot.source`; other sources' routes are untouched. */
  applySnapshot(snapshot: SnapshotInput): Promise<SnapshotOutcome> {
    const { source } = snapshot;
    const records = snapshot.routes.map((r) => canonicalRecord({ ...r, source }));
    const wanted = new Map(records.map((r) => [r.domain, apiRouteSpec(r)]));
    const hash = routeHash(source, records);
    return this.#enqueue((draft) => {
      let removed = 0;
      for (const [domain, route] of [...draft.table]) {
        if (route.source === source && ORIGINS[route.origin].snapshotRemoves && !wanted.has(domain)) {
          removeDomain(draft, domain);
          removed++;
        }
      }
      for (const [domain, spec] of wanted) draft.table.set(domain, spec);
      draft.apiChanged ||= wanted.size > 0 || removed > 0;
      return { source, applied: wanted.size, removed, total_routes: draft.table.size, route_hash: hash };
    });
  }

  /**
   * Replaces the routes `origin` declares (a Proxyfile reload, a labels
   * resync): its routes that are gone leave the table (a lower-ranked
   * declaration of the domain comes back); its routes take every domain
   * {@link mayTake} allows. Not persisted (the origin re-declares them at
   * start).
   */
  replaceOrigin(origin: DeclaredOrigin, routes: readonly RouteSpec[]): Promise<void> {
    const next = byDomain(routes.map((r) => ({ ...r, domain: r.domain.toLowerCase(), origin })));
    return this.#enqueue((draft) => {
      draft.declared = new Map(draft.declared).set(origin, next);
      for (const [domain, route] of [...draft.table]) {
        if (route.origin === origin && !next.has(domain)) removeDomain(draft, domain);
      }
      for (const [domain, route] of next) {
        if (mayTake(origin, domain, draft.table.get(domain), draft.declared)) draft.table.set(domain, route);
      }
    });
  }

  /** Waits for queued writes, then refuses new ones. */
  async close(): Promise<void> {
    this.#closed = true;
    while (this.#flushing) await this.#flushing;
  }

  #enqueue<T>(apply: (draft: Draft) => T): Promise<T> {
    if (this.#closed) return Promise.reject(new StoreError(StoreErrorCode.CLOSED, 'route store is closed'));
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ apply, resolve: resolve as (value: unknown) => void, reject });
      this.#flushing ??= this.#flush();
    });
  }

  async #flush(): Promise<void> {
    // Yield to the check phase: the caller stores this promise before it settles, and the writes of every
    // request read in the same event-loop turn join the batch (one file write, one table publish).
    await new Promise<void>((resolve) => setImmediate(resolve));
    try {
      while (this.#pending.length > 0) {
        const batch = this.#pending.splice(0);
        const draft: Draft = { table: new Map(this.#table), declared: this.#declared, apiChanged: false };
        const results = batch.map((op) => op.apply(draft));
        if (this.#file && draft.apiChanged) {
          try {
            await this.#file.write(apiRecords(draft.table));
          } catch (err) {
            for (const op of batch) op.reject(err);
            continue;
          }
        }
        this.#table = draft.table;
        this.#declared = draft.declared;
        await this.#publish();
        for (const [i, op] of batch.entries()) op.resolve(results[i]);
      }
    } finally {
      this.#flushing = null;
    }
  }

  /** Publishes the table; resolves once every listener's promise settled (see {@link RouteListener}). */
  #publish(): Promise<unknown> | undefined {
    this.#routes = Object.freeze([...this.#table.values()]);
    this.#version++;
    const waits: Promise<unknown>[] = [];
    for (const listener of this.#listeners) {
      const result = listener(this.#routes, this.#version);
      if (result instanceof Promise) waits.push(result);
    }
    return waits.length === 0 ? undefined : Promise.allSettled(waits);
  }
}

function removeDomain(draft: Draft, domain: string): boolean {
  const held = draft.table.get(domain);
  if (!held) return false;
  draft.table.delete(domain);
  if (held.origin === 'api') draft.apiChanged = true;
  const fallback = fallbackRoute(domain, held.origin, draft.declared);
  if (fallback) draft.table.set(domain, fallback);
  return true;
}

function byDomain(routes: readonly RouteSpec[]): Map<string, RouteSpec> {
  return new Map(routes.map((r) => [r.domain.toLowerCase(), r]));
}

function apiRecords(table: Map<string, RouteSpec>): ApiRouteRecord[] {
  const records: ApiRouteRecord[] = [];
  for (const route of table.values()) {
    const record = toApiRecord(route);
    if (record) records.push(record);
  }
  return records.sort(compareDomain);
}

function compareDomain(a: { domain: string }, b: { domain: string }): number {
  return a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0;
}
