import type { RouteChanges, RouteSnapshot, RouteSpec, Site } from '@proxyd/model';
import { CowList, changesFrom, frozenSnapshot, stateOf } from '@proxyd/model/rules';
import { type CompactRoutes, compactSite } from './compact-routes.js';

/**
 * Site identity across the IPC boundary. The data plane reuses a compiled
 * site (its pools and health state, its cache, its rate-limit counters) for
 * the Site *object* it was compiled for, and the route store keeps the
 * object of a site that did not change (an admin write leaves the other
 * routes' sites as they were; a Proxyfile reload makes new ones). A table
 * sent to a worker arrives as new objects, so the primary numbers its Site
 * objects ({@link SiteIds}) and the node keeps one object per number
 * ({@link NodeRoutes}): a worker recompiles exactly what one process
 * would.
 */
export class SiteIds {
  readonly #ids = new WeakMap<Site, number>();
  #next = 1;

  /** The number of each route's Site object, in order. */
  of(routes: readonly RouteSpec[]): number[] {
    return routes.map((route) => {
      let id = this.#ids.get(route.site);
      if (id === undefined) {
        id = this.#next++;
        this.#ids.set(route.site, id);
      }
      return id;
    });
  }
}

/**
 * A route update as the fleet sends it to a node: a compact snapshot of the
 * whole table (a starting node, a reload, a node that missed a version) or
 * the changes from the version before. Plain data: Site objects travel once
 * per message, numbered so that the node keeps one object per number. A
 * transport that copies may carry API routes column-wise (`compact`, see
 * `RouteCompactor`); they are routes of the table (or upserted) as well.
 */
export type RouteUpdate =
  | { kind: 'full'; routes: RouteSpec[]; siteIds: number[]; version: number; compact?: CompactRoutes }
  | {
      kind: 'changes';
      upserted: RouteSpec[];
      siteIds: number[];
      removed: string[];
      version: number;
      compact?: CompactRoutes;
    };

/**
 * The fleet's side of route publication: the whole table the first time,
 * then only what changed (the routes added or replaced and the domains
 * removed, the `changes` of the route store's snapshot), so
 * a write costs a node what it costs one process, not a copy of every
 * route (57 MB at 100,000 routes). The snapshot of one version is built
 * once, whatever the number of nodes that need it.
 */
export class RoutePublisher {
  readonly #ids = new SiteIds();
  /** The {@link stateOf} the last table sent. */
  #lastSent: object | null = null;
  #lastVersion = 0;
  #full: { state: object; message: RouteUpdate & { kind: 'full' } } | null = null;

  /**
   * The message that brings a worker that has the last table sent to the
   * snapshot's; null when that table is the snapshot's or newer (the nodes
   * joined with it: the store's first publication after they started).
   */
  next(snapshot: RouteSnapshot): RouteUpdate | null {
    const { version } = snapshot;
    if (this.#lastSent !== null && version <= this.#lastVersion) return null;
    const base = this.#lastSent;
    this.#lastSent = stateOf(snapshot);
    this.#lastVersion = version;
    const changes = base === null ? null : changesFrom(base, snapshot);
    if (changes !== null) {
      return {
        kind: 'changes',
        upserted: [...changes.upserted],
        siteIds: this.#ids.of(changes.upserted),
        removed: [...changes.removed],
        version,
      };
    }
    return this.full(snapshot);
  }

  /**
   * The whole table (a starting node, a node that missed a version); the
   * same object for the same snapshot. The next changes are computed from
   * it when it is the newest sent: the first write after the nodes start
   * goes as a delta (a node behind it answers that it needs a snapshot).
   */
  full(snapshot: RouteSnapshot): RouteUpdate & { kind: 'full' } {
    const { version } = snapshot;
    const state = stateOf(snapshot);
    if (version >= this.#lastVersion) {
      this.#lastSent = state;
      this.#lastVersion = version;
    }
    const cached = this.#full;
    if (cached !== null && cached.state === state && cached.message.version === version) return cached.message;
    const routes = snapshot.routes;
    const message = { kind: 'full' as const, routes: [...routes], siteIds: this.#ids.of(routes), version };
    this.#full = { state, message };
    return message;
  }
}

/**
 * A node's side of {@link RoutePublisher}: applies a whole table or the
 * changes to the one it has, keeps one Site object per publisher number, and
 * gives the snapshot it builds those changes, so the data plane updates in
 * proportion to them.
 */
export class NodeRoutes {
  /** The {@link stateOf} the last snapshot given. */
  #state: object | null = null;
  /** The routes held, patched per change (each snapshot holds a frozen state of it), and each domain's position. */
  readonly #dense = new CowList<RouteSpec>();
  readonly #slots = new Map<string, number>();
  #version = 0;
  /** Site number → the object and how many routes use it. */
  readonly #sites = new Map<number, { site: Site; routes: number }>();
  /** Domain (lowercase) → its route's site number. */
  readonly #domainSite = new Map<string, number>();
  /** Site object → its publisher number (what the node's shared cache partitions by). */
  readonly #numbers = new WeakMap<Site, number>();

  /**
   * The publisher's number of a Site object this node was given (the same
   * on every node of the fleet); undefined for an object it was not given.
   */
  siteNumber(site: Site): number | undefined {
    return this.#numbers.get(site);
  }

  /** The version of the table held (0: none yet). */
  get version(): number {
    return this.#version;
  }

  /** Whether `message` is changes that do not follow the version held: the node needs the whole table. */
  missed(message: RouteUpdate): boolean {
    return message.kind === 'changes' && message.version > this.#version + 1;
  }

  /**
   * The table after `message`, or null when the message is not newer than
   * what this node has. Changes cost what they change (the routes held are
   * patched in place by position; the snapshot handed on holds a frozen
   * state of them, the chunks a change touched copied); a whole table costs
   * its size.
   */
  apply(message: RouteUpdate): RouteSnapshot | null {
    if (message.version <= this.#version) return null;
    if (message.kind === 'full') {
      this.#version = message.version;
      const previous = new Map(this.#sites);
      this.#sites.clear();
      this.#domainSite.clear();
      this.#slots.clear();
      this.#dense.clear();
      for (const [i, route] of message.routes.entries()) {
        const id = message.siteIds[i] as number;
        this.#slots.set(route.domain.toLowerCase(), i);
        this.#dense.push(this.#take(route, id, previous.get(id)?.site));
      }
      this.#expand(
        message.compact,
        (route) => {
          this.#slots.set(route.domain, this.#dense.length);
          this.#dense.push(route);
        },
        previous,
      );
      const snapshot = frozenSnapshot(this.#dense.freeze(), message.version, null);
      this.#state = stateOf(snapshot);
      return snapshot;
    }
    if (message.version !== this.#version + 1) {
      // A change was missed (its broadcast failed here): the fleet sends the whole table next.
      throw new Error(`route table ${message.version} does not follow ${this.#version}: the whole table is needed`);
    }
    for (const domain of message.removed) {
      this.#release(domain);
      this.#remove(domain);
    }
    const upserted = message.upserted.map((route, i) => {
      const domain = route.domain.toLowerCase();
      this.#release(domain);
      const taken = this.#take(route, message.siteIds[i] as number, undefined);
      const at = this.#slots.get(domain);
      if (at === undefined) {
        this.#slots.set(domain, this.#dense.length);
        this.#dense.push(taken);
      } else {
        this.#dense.set(at, taken);
      }
      return taken;
    });
    this.#expand(message.compact, (route) => {
      this.#release(route.domain);
      const at = this.#slots.get(route.domain);
      if (at === undefined) {
        this.#slots.set(route.domain, this.#dense.length);
        this.#dense.push(route);
      } else {
        this.#dense.set(at, route);
      }
      upserted.push(route);
    });
    const base = this.#state;
    const changes: RouteChanges | null =
      base === null ? null : { base: new WeakRef(base), upserted, removed: message.removed };
    this.#version = message.version;
    const snapshot = frozenSnapshot(this.#dense.freeze(), message.version, changes);
    this.#state = stateOf(snapshot);
    return snapshot;
  }

  /** Takes `domain`'s route out of the dense array: the last one moves into its place. */
  #remove(domain: string): void {
    const at = this.#slots.get(domain);
    if (at === undefined) return;
    this.#slots.delete(domain);
    const last = this.#dense.pop() as RouteSpec;
    if (at < this.#dense.length) {
      this.#dense.set(at, last);
      this.#slots.set(last.domain.toLowerCase(), at);
    }
  }

  /**
   * The routes of `compact`, each handed to `put` once its domain's old
   * route is released (`put` releases it for changes): one Site per route,
   * a shallow copy of the body this node keeps for the body's number.
   */
  #expand(
    compact: CompactRoutes | undefined,
    put: (route: RouteSpec) => void,
    previous?: ReadonlyMap<number, { site: Site }>,
  ): void {
    if (compact === undefined) return;
    const bodies = compact.bodies.map((body, i) => {
      const id = compact.bodyIds[i] as number;
      return { id, site: this.#sites.get(id)?.site ?? previous?.get(id)?.site ?? body };
    });
    for (const [i, domain] of compact.domains.entries()) {
      const body = bodies[compact.body[i] as number] as { id: number; site: Site };
      const route: RouteSpec = {
        domain,
        origin: 'api',
        source: compact.sources[i] ?? null,
        site: compactSite(body.site, domain),
      };
      put(route);
      const known = this.#sites.get(body.id);
      this.#sites.set(body.id, { site: body.site, routes: (known?.routes ?? 0) + 1 });
      this.#domainSite.set(domain, body.id);
    }
  }

  #take(route: RouteSpec, id: number, previous: Site | undefined): RouteSpec {
    const known = this.#sites.get(id);
    const site = known?.site ?? previous ?? route.site;
    this.#sites.set(id, { site, routes: (known?.routes ?? 0) + 1 });
    this.#numbers.set(site, id);
    this.#domainSite.set(route.domain.toLowerCase(), id);
    return site === route.site ? route : { ...route, site };
  }

  #release(domain: string): void {
    const id = this.#domainSite.get(domain);
    if (id === undefined) return;
    this.#domainSite.delete(domain);
    const entry = this.#sites.get(id);
    if (entry === undefined) return;
    if (entry.routes <= 1) this.#sites.delete(id);
    else entry.routes--;
  }
}
