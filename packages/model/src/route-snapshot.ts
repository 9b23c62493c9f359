/**
 * The route snapshot: what the route store publishes and every consumer of
 * routes (the data plane's RouteTable, the certificates, the workers'
 * route-table shipping) takes. One type for the control plane → data plane
 * hand-over, so the delta travels beside the routes, not hidden on them.
 */
import type { FrozenList } from './cow-list.js';
import type { RouteSpec } from './routes.js';

/**
 * What a snapshot's routes changed from the routes of the snapshot
 * published before it (`base`): removing `removed`, then setting
 * `upserted`, by lowercase domain, turns `base` into the new routes. Lets a
 * consumer update in O(changed routes) instead of comparing every route.
 */
export interface RouteChanges {
  /**
   * The table these changes apply to: the {@link stateOf} the snapshot
   * before, held weakly (a chain of tables would never be freed).
   */
  readonly base: WeakRef<object>;
  /** Routes added or replaced, one per domain. */
  readonly upserted: readonly RouteSpec[];
  /** Lowercase domains left without a route (none of them is in `upserted`). */
  readonly removed: readonly string[];
}

/**
 * One published state of the route table: its routes (one per lowercase
 * domain), its version (rising by one per publication) and, after the
 * first, what changed since the one before.
 */
export interface RouteSnapshot {
  /**
   * Every route. A snapshot from {@link frozenSnapshot} builds this array on
   * its first read (O(n), once): a consumer that follows `changes` reads
   * `changes.upserted` instead, so a write costs it O(changes).
   */
  readonly routes: readonly RouteSpec[];
  readonly version: number;
  /** What changed since the previous snapshot; null for the first, or when the publisher cannot tell. */
  readonly changes: RouteChanges | null;
  /**
   * This table's identity when it is not `routes` (a snapshot whose routes
   * are built on first read): what the next snapshot's `changes.base`
   * holds. A copy of the snapshot with other `changes` keeps it.
   */
  readonly state?: object;
  /** The number of routes, when known without reading `routes`. */
  readonly size?: number;
}

/** The identity of the table `snapshot` holds: what a consumer keeps to recognise the base of the next changes. */
export function stateOf(snapshot: RouteSnapshot): object {
  return snapshot.state ?? snapshot.routes;
}

/** The number of routes of `snapshot`, without building its routes when it knows the number. */
export function sizeOf(snapshot: RouteSnapshot): number {
  return snapshot.size ?? snapshot.routes.length;
}

/**
 * The changes of `next` when they apply to `current` (the {@link stateOf}
 * the table the consumer holds now is their base), else null: the consumer
 * then compares every route.
 */
export function changesFrom(current: object | null, next: RouteSnapshot): RouteChanges | null {
  const changes = next.changes;
  return changes !== null && changes.base.deref() === current ? changes : null;
}

/**
 * A frozen snapshot of the routes of `list` (one state of a `CowList`):
 * `routes` is built on its first read and kept; `state` is `list`, `size`
 * its length. What a publisher of a large table hands out per write.
 */
export function frozenSnapshot(
  list: FrozenList<RouteSpec>,
  version: number,
  changes: RouteChanges | null,
): RouteSnapshot {
  let routes: readonly RouteSpec[] | null = null;
  return Object.freeze({
    get routes(): readonly RouteSpec[] {
      routes ??= Object.freeze(list.toArray());
      return routes;
    },
    version,
    changes,
    state: list,
    size: list.length,
  });
}
