import {
  CowList,
  frozenSnapshot,
  type RouteChanges,
  type RouteOrigin,
  type RouteSnapshot,
  type RouteSpec,
  stateOf,
} from '@proxyd/model';
import {
  type AdminRouteView,
  type ApiRouteRecord,
  apiRouteSpec,
  canonicalRecord,
  toAdminRoute,
  toApiRecord,
} from './api-route.js';
import { Draft, RouteIndex } from './draft.js';
import { StoreError, StoreErrorCode } from './errors.js';
import { type Declarations, type DeclaredOrigin, fallbackRoute, mayTake, ORIGINS } from './precedence.js';
import { routeHash } from './route-hash.js';
import type { RouteSink } from './sink.js';
import { SortedDomains } from './sorted-domains.js';
import { type RecoveredState, recordLine, StateFile } from './state-file.js';
import { StateLines } from './state-lines.js';

/**
 * The most routes the table holds (every origin counted), unless
 * {@link RouteStoreOptions.maxRoutes} says otherwise. Measured in
 * `bench/routes`: at 100,000 routes one daemon process starts in ~3 s with
 * ~0.7 GB RSS and an admin write holds the event loop ~2 ms (median).
 */
export const MAX_ROUTES = 100_000;

/**
 * Gets every published table. A listener that returns a promise (a
 * multi-core daemon's, resolved once every worker swapped or after the
 * fleet's bound on a slow worker) holds the write that published until it
 * settles: writes resolve once the data plane serves them. Its rejection is
 * the listener's to report; the write stands.
 */
export type RouteListener = (snapshot: RouteSnapshot) => unknown;

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
  /** The most routes the table may hold (default {@link MAX_ROUTES}); a write that adds more is refused. */
  maxRoutes?: number;
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
 * journal write is in flight are applied together and persisted with one
 * journal line. A write's promise resolves only after that line is durable
 * and the new table is published; on a persistence failure it rejects and
 * nothing of its batch is applied.
 *
 * Every write costs in proportion to what it changes, not to the table
 * (indexes by origin and by `source`, the published array patched in
 * place, one journal line per batch, the domains kept in order for
 * `list()`); the journal is folded into the state file in the background
 * once it outgrows it. A write that would take the table past `maxRoutes`
 * is refused (`STORE_ROUTE_LIMIT`).
 */
export class RouteStore implements RouteSink {
  readonly #index = new RouteIndex();
  #declared: Declarations;
  /**
   * The published routes, patched per batch (each snapshot holds a frozen
   * state of it: a write copies the chunks it touches, not the table),
   * their domains and positions.
   */
  readonly #dense = new CowList<RouteSpec>();
  readonly #denseDomains: string[] = [];
  readonly #slots = new Map<string, number>();
  /** Every published domain in order, and the admin list of one version (built at most once per version). */
  readonly #sorted = new SortedDomains();
  #listed: { version: number; views: AdminRouteView[] } | null = null;
  #counts: Record<RouteOrigin, number> = { proxyfile: 0, labels: 0, api: 0 };
  #version = 0;
  /** The last published snapshot. */
  #snapshot: RouteSnapshot = Object.freeze({ routes: Object.freeze([]), version: 0, changes: null });
  #listeners = new Set<RouteListener>();
  #pending: Op[] = [];
  #flushing: Promise<void> | null = null;
  #closed = false;
  /** A compaction of the state file's journal running in the background, if any. */
  #compacting: Promise<void> | null = null;
  readonly #file: StateFile | null;
  /** The state file's lines in its order (kept only with a state file). */
  readonly #lines: StateLines;
  readonly #maxRoutes: number;

  private constructor(
    file: StateFile | null,
    proxyfile: readonly RouteSpec[],
    records: readonly ApiRouteRecord[],
    maxRoutes: number,
  ) {
    this.#file = file;
    this.#maxRoutes = maxRoutes;
    const declared = byDomain(proxyfile);
    this.#declared = new Map([['proxyfile', declared]]);
    for (const [domain, route] of declared) this.#index.put(domain, route);
    for (const record of records) {
      const spec = apiRouteSpec(record);
      if (file !== null) LINES.set(spec, Buffer.from(recordLine(record)));
      this.#index.put(record.domain, spec);
    }
    const api = file === null ? [] : [...this.#index.domainsOf('api')];
    this.#lines = new StateLines(api.map((domain) => [domain, lineOf(this.#index.table.get(domain) as RouteSpec)]));
    this.#publish([...this.#index.table], []);
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
    const store = new RouteStore(file, options.proxyfileRoutes ?? [], loaded.records, options.maxRoutes ?? MAX_ROUTES);
    return { store, recovered: loaded.recovered };
  }

  /** The version of the published table (1 after open, +1 per applied batch). */
  get version(): number {
    return this.#version;
  }

  /**
   * The published routes (frozen; replaced, never mutated; in no particular
   * order): built on the first read of each version, O(n). {@link size}
   * counts them without.
   */
  get routes(): readonly RouteSpec[] {
    return this.#snapshot.routes;
  }

  /** The published route of `domain` (any case), or undefined. */
  get(domain: string): RouteSpec | undefined {
    const at = this.#slots.get(domain.toLowerCase());
    return at === undefined ? undefined : this.#dense.get(at);
  }

  /** How many routes are published. */
  get size(): number {
    return this.#dense.length;
  }

  /** The last published snapshot: the routes, their version and what changed since the one before. */
  get snapshot(): RouteSnapshot {
    return this.#snapshot;
  }

  /** The state file path, or null when API routes are not persisted. */
  get stateFile(): string | null {
    return this.#file?.path ?? null;
  }

  /** Calls `listener` now with the current snapshot, then with every one published. Returns an unsubscribe. */
  subscribe(listener: RouteListener): () => void {
    this.#listeners.add(listener);
    const result = listener(this.#snapshot);
    if (result instanceof Promise) result.catch(() => {});
    return () => this.#listeners.delete(listener);
  }

  /**
   * Every route of the published table in the admin representation,
   * sorted by domain: the same array until the next write (built once per
   * version from the domains kept in order, never sorted; each route's view
   * built once). A batch being written is not in it: its routes show once
   * published, and never if its journal line fails.
   */
  list(): readonly AdminRouteView[] {
    if (this.#listed?.version !== this.#version) {
      const views = this.#sorted.ordered.map((domain) => viewOf(this.get(domain) as RouteSpec));
      this.#listed = { version: this.#version, views };
    }
    return this.#listed.views;
  }

  /** Number of routes per origin in the published table (O(1)). */
  countByOrigin(): Record<RouteOrigin, number> {
    return { ...this.#counts };
  }

  /** The most routes the table may hold (see {@link MAX_ROUTES}). */
  get maxRoutes(): number {
    return this.#maxRoutes;
  }

  /** Adds or replaces the route of `write.domain` (case-insensitive); resolves once durable. */
  upsert(write: ApiRouteRecord): Promise<AdminRouteView> {
    const record = canonicalRecord(write);
    const spec = apiRouteSpec(record);
    if (this.#file !== null) LINES.set(spec, Buffer.from(recordLine(record)));
    return this.#enqueue((draft) => {
      if (draft.get(record.domain) === undefined) this.#checkRoom(draft.size + 1);
      // `api` outranks every origin (ORIGINS): an admin write takes the domain whoever holds it.
      draft.set(record.domain, spec);
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
    const wanted = new Map<string, RouteSpec>();
    for (const record of records) {
      const spec = apiRouteSpec(record);
      if (this.#file !== null) LINES.set(spec, Buffer.from(recordLine(record)));
      wanted.set(record.domain, spec);
    }
    const hash = routeHash(source, records);
    return this.#enqueue((draft) => {
      // Only routes of this source can leave, so only they are looked at.
      const leaving = draft.domainsOfSource(source).filter((domain) => {
        const route = draft.get(domain) as RouteSpec;
        return ORIGINS[route.origin].snapshotRemoves && !wanted.has(domain);
      });
      let added = 0;
      for (const domain of wanted.keys()) if (draft.get(domain) === undefined) added++;
      // A domain that leaves may come back as a lower-ranked declaration (fallbackRoute): counted as staying.
      const freed = leaving.filter((domain) => fallbackRoute(domain, 'api', draft.declared) === undefined).length;
      if (added > freed) this.#checkRoom(draft.size - freed + added);
      for (const domain of leaving) removeDomain(draft, domain);
      for (const [domain, spec] of wanted) draft.set(domain, spec);
      draft.apiChanged ||= wanted.size > 0 || leaving.length > 0;
      return { source, applied: wanted.size, removed: leaving.length, total_routes: draft.size, route_hash: hash };
    });
  }

  /**
   * Applies a change of the fleet's API routes (`storage redis`: an entry
   * of the fleet's log, this node's own writes included): `puts` set as API
   * routes, taking their domains whoever holds them; each of `deletes` held
   * by an API route leaves (the domain's own declaration, a Proxyfile or
   * label route of this node, comes back). Never refused for the route
   * limit (the fleet's write was checked against it). Resolves with the
   * table's size once durable and published.
   */
  applyFleet(puts: readonly ApiRouteRecord[], deletes: readonly string[]): Promise<number> {
    const specs = puts.map((record) => this.#fleetSpec(record));
    return this.#enqueue((draft) => {
      for (const domain of deletes) if (draft.get(domain)?.origin === 'api') removeDomain(draft, domain);
      for (const spec of specs) {
        draft.set(spec.domain, spec);
        draft.apiChanged = true;
      }
      return draft.size;
    });
  }

  /**
   * Makes this node's API routes exactly `records` (the fleet's whole set:
   * a first sync, or a catch-up the log no longer reaches back for): only
   * the routes that differ are written. Resolves with the table's size.
   */
  replaceApi(records: readonly ApiRouteRecord[]): Promise<number> {
    const wanted = new Map(records.map((record) => [record.domain, record]));
    return this.#enqueue((draft) => {
      for (const domain of draft.domainsOf('api')) if (!wanted.has(domain)) removeDomain(draft, domain);
      for (const record of wanted.values()) {
        const held = draft.get(record.domain);
        const line = held?.origin === 'api' ? lineOf(held).toString() : null;
        if (line === recordLine(record)) continue;
        draft.set(record.domain, this.#fleetSpec(record));
        draft.apiChanged = true;
      }
      return draft.size;
    });
  }

  /** The API routes of the published table (what a node seeds an empty fleet storage with). */
  apiRecords(): ApiRouteRecord[] {
    const records: ApiRouteRecord[] = [];
    for (const domain of this.#index.domainsOf('api')) {
      const record = toApiRecord(this.#index.table.get(domain) as RouteSpec);
      if (record !== null) records.push(record);
    }
    return records;
  }

  /**
   * Removes the route of `domain` only when this node's Proxyfile or
   * labels hold it (with `storage redis`, a DELETE the fleet holds no API
   * route for): resolves false when there is none, or an API route holds it.
   */
  removeDeclared(domain: string): Promise<boolean> {
    const key = domain.toLowerCase();
    return this.#enqueue((draft) => draft.get(key)?.origin !== 'api' && removeDomain(draft, key));
  }

  #fleetSpec(record: ApiRouteRecord): RouteSpec {
    const spec = apiRouteSpec(record);
    if (this.#file !== null) LINES.set(spec, Buffer.from(recordLine(record)));
    return spec;
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
      for (const domain of draft.domainsOf(origin)) if (!next.has(domain)) removeDomain(draft, domain);
      for (const [domain, route] of next) {
        if (mayTake(origin, domain, draft.get(domain), draft.declared)) draft.set(domain, route);
      }
    });
  }

  /** Waits for queued writes (and a compaction in flight), then refuses new ones. */
  async close(): Promise<void> {
    this.#closed = true;
    while (this.#flushing) await this.#flushing;
    await this.#compacting;
    await this.#file?.close();
  }

  #enqueue<T>(apply: (draft: Draft) => T): Promise<T> {
    if (this.#closed) return Promise.reject(new StoreError(StoreErrorCode.CLOSED, 'route store is closed'));
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ apply, resolve: resolve as (value: unknown) => void, reject });
      this.#flushing ??= this.#flush();
    });
  }

  /** Throws `STORE_ROUTE_LIMIT` when the table would hold `size` routes, more than allowed. */
  #checkRoom(size: number): void {
    if (size <= this.#maxRoutes) return;
    throw new StoreError(
      StoreErrorCode.ROUTE_LIMIT,
      `route limit reached: the table holds at most ${this.#maxRoutes} routes (this write would make it ${size}); delete routes first`,
    );
  }

  async #flush(): Promise<void> {
    // Yield to the check phase: the caller stores this promise before it settles, and the writes of every
    // request read in the same event-loop turn join the batch (one file write, one table publish).
    await new Promise<void>((resolve) => setImmediate(resolve));
    try {
      while (this.#pending.length > 0) {
        const batch = this.#pending.splice(0);
        const draft = new Draft(this.#index, this.#declared);
        // An op that throws (the route limit) checked before changing anything: only it fails.
        const results = batch.map((op) => {
          try {
            return { ok: true as const, value: op.apply(draft) };
          } catch (err) {
            return { ok: false as const, err };
          }
        });
        if (results.every((result) => !result.ok)) {
          for (const [i, op] of batch.entries()) op.reject((results[i] as { err: unknown }).err);
          continue;
        }
        if (this.#file && draft.apiChanged) {
          const { puts, deleted } = this.#syncLines(draft.touched());
          try {
            await this.#file.append(puts, deleted);
          } catch (err) {
            draft.undo();
            this.#syncLines(draft.touched());
            for (const op of batch) op.reject(err);
            continue;
          }
          this.#compactWhenDue(this.#file);
        }
        this.#declared = draft.declared;
        const { upserted, removed } = draft.changes();
        await this.#publish(upserted, removed);
        for (const [i, op] of batch.entries()) {
          const result = results[i];
          if (result?.ok) op.resolve(result.value);
          else op.reject(result?.err);
        }
      }
    } finally {
      this.#flushing = null;
    }
  }

  /**
   * Brings the state file's lines of these domains in line with the table;
   * returns what the journal gets: the lines of the API routes among them,
   * the other domains as deleted.
   */
  #syncLines(domains: Iterable<string>): { puts: Buffer[]; deleted: string[] } {
    const puts: Buffer[] = [];
    const deleted: string[] = [];
    for (const domain of domains) {
      const spec = this.#index.table.get(domain);
      if (spec?.origin === 'api') {
        const line = lineOf(spec);
        this.#lines.set(domain, line);
        puts.push(line);
      } else {
        this.#lines.delete(domain);
        deleted.push(domain);
      }
    }
    return { puts, deleted };
  }

  /**
   * Folds the journal into the state file in the background once it has
   * outgrown the file: the lines now are the table as of the journal's
   * length now (called right after an append, before the next).
   */
  #compactWhenDue(file: StateFile): void {
    if (this.#compacting !== null || !file.wantsCompaction) return;
    this.#compacting = file
      .compact(this.#lines.all())
      // A failed compaction loses nothing (the journal keeps every write); the next write tries again.
      .catch(() => {})
      .finally(() => {
        this.#compacting = null;
      });
  }

  /**
   * Publishes the table after a batch that set `upserted` and removed
   * `removed`: the published list is patched, O(changes), and published in
   * a snapshot with its {@link RouteChanges} (O(n / 1,024) to freeze; its
   * routes array is built only if someone reads it). Resolves once every
   * listener's promise settled (see {@link RouteListener}).
   */
  #publish(
    upserted: ReadonlyArray<readonly [string, RouteSpec]>,
    removed: readonly string[],
  ): Promise<unknown> | undefined {
    const dense = this.#dense;
    const domains = this.#denseDomains;
    const slots = this.#slots;
    for (const domain of removed) {
      const at = slots.get(domain);
      if (at === undefined) continue;
      slots.delete(domain);
      this.#sorted.delete(domain);
      const last = dense.pop() as RouteSpec;
      const lastDomain = domains.pop() as string;
      if (at < dense.length) {
        dense.set(at, last);
        domains[at] = lastDomain;
        slots.set(lastDomain, at);
      }
    }
    for (const [domain, spec] of upserted) {
      const at = slots.get(domain);
      if (at !== undefined) {
        dense.set(at, spec);
      } else {
        slots.set(domain, dense.length);
        dense.push(spec);
        domains.push(domain);
        this.#sorted.add(domain);
      }
    }
    const changes: RouteChanges | null =
      this.#version > 0
        ? { base: new WeakRef(stateOf(this.#snapshot)), upserted: upserted.map(([, spec]) => spec), removed }
        : null;
    this.#counts = {
      proxyfile: this.#index.domainsOf('proxyfile').size,
      labels: this.#index.domainsOf('labels').size,
      api: this.#index.domainsOf('api').size,
    };
    this.#version++;
    this.#snapshot = frozenSnapshot(dense.freeze(), this.#version, changes);
    const waits: Promise<unknown>[] = [];
    for (const listener of this.#listeners) {
      const result = listener(this.#snapshot);
      if (result instanceof Promise) waits.push(result);
    }
    return waits.length === 0 ? undefined : Promise.allSettled(waits);
  }
}

/** Each route's admin view, built once per RouteSpec object (frozen: shared by every list). */
const VIEWS = new WeakMap<RouteSpec, AdminRouteView>();

function viewOf(spec: RouteSpec): AdminRouteView {
  let view = VIEWS.get(spec);
  if (view === undefined) {
    view = Object.freeze(toAdminRoute(spec));
    VIEWS.set(spec, view);
  }
  return view;
}

/** Each API route's state-file line, computed once per RouteSpec object. */
const LINES = new WeakMap<RouteSpec, Buffer>();

function lineOf(spec: RouteSpec): Buffer {
  let line = LINES.get(spec);
  if (line === undefined) {
    const record = toApiRecord(spec);
    if (record === null) throw new Error(`${spec.domain}: not an API route`);
    line = Buffer.from(recordLine(record));
    LINES.set(spec, line);
  }
  return line;
}

function removeDomain(draft: Draft, domain: string): boolean {
  const held = draft.get(domain);
  if (!held) return false;
  draft.delete(domain);
  if (held.origin === 'api') draft.apiChanged = true;
  const fallback = fallbackRoute(domain, held.origin, draft.declared);
  if (fallback) draft.set(domain, fallback);
  return true;
}

function byDomain(routes: readonly RouteSpec[]): Map<string, RouteSpec> {
  return new Map(routes.map((r) => [r.domain.toLowerCase(), r]));
}
