/**
 * The route snapshot: what the route store publishes and every consumer of
 * routes (the data plane's RouteTable, the certificates, the workers'
 * route-table shipping) takes. One type for the control plane → data plane
 * hand-over, so the delta travels beside the routes, not hidden on them.
 */
import type { RouteSpec } from './routes.js';

/**
 * What a snapshot's routes changed from the routes of the snapshot
 * published before it (`base`): removing `removed`, then setting
 * `upserted`, by lowercase domain, turns `base` into the new routes. Lets a
 * consumer update in O(changed routes) instead of comparing every route.
 */
export interface RouteChanges {
  /** The routes these changes apply to, held weakly (a chain of arrays would never be freed). */
  readonly base: WeakRef<readonly RouteSpec[]>;
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
  readonly routes: readonly RouteSpec[];
  readonly version: number;
  /** What changed since the previous snapshot; null for the first, or when the publisher cannot tell. */
  readonly changes: RouteChanges | null;
}

/**
 * The changes of `next` when they apply to `current` (the routes the
 * consumer holds now are their base), else null: the consumer then
 * compares every route.
 */
export function changesFrom(current: readonly RouteSpec[], next: RouteSnapshot): RouteChanges | null {
  const changes = next.changes;
  return changes !== null && changes.base.deref() === current ? changes : null;
}
