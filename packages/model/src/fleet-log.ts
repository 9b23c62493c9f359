/**
 * An API route as the fleet's shared storage holds it (the route store's
 * `ApiRouteRecord`): domain lowercase, upstream canonical `host:port`,
 * `source` null when none.
 */
export interface FleetRouteRecord {
  domain: string;
  upstream: string;
  tls: boolean;
  source: string | null;
}

/**
 * One change of the fleet's API routes, at one fleet version: the routes
 * set (whole records, absolute values) and the domains whose API route
 * left. Applying an entry twice changes nothing.
 */
export interface FleetEntry {
  /** The fleet version this change made (1, 2, 3, … within one {@link FleetPosition.epoch}). */
  version: number;
  puts: readonly FleetRouteRecord[];
  deletes: readonly string[];
}

/** Where a node stands in the fleet's history. */
export interface FleetPosition {
  /** Names one history of the shared storage: a storage that lost its data and was seeded again has a new one. */
  epoch: string;
  version: number;
}

/** A write the fleet applies atomically: all of it or nothing. */
export type FleetWrite =
  | { kind: 'upsert'; record: FleetRouteRecord }
  | { kind: 'delete'; domain: string }
  | { kind: 'snapshot'; source: string; records: readonly FleetRouteRecord[] };

/** What a {@link FleetWrite} did. */
export type FleetWriteResult =
  /** Applied: the entry it appended (for a snapshot, `deletes` are the routes of the source it dropped). */
  | { kind: 'applied'; epoch: string; entry: FleetEntry }
  /** A delete of a domain no API route of the fleet holds: nothing changed; the fleet is at `version`. */
  | { kind: 'absent'; epoch: string; version: number }
  /** Refused: the fleet would hold `size` API routes, more than `maxRoutes`; nothing changed. */
  | { kind: 'limit'; size: number };

/** What a node does with what the fleet tells it (the route store's `FleetRoutes` implements it). */
export interface FleetFollower {
  /** Where this node stands (null: it has followed nothing yet, e.g. after a start). */
  position(): FleetPosition | null;
  /** The API routes this node holds now (what it seeds an empty storage with). */
  records(): readonly FleetRouteRecord[];
  /** Entries after {@link position}, in version order. */
  entries(epoch: string, entries: readonly FleetEntry[]): void;
  /** The whole API route set of the fleet at `position` (a first sync, a gap, another epoch). */
  reset(position: FleetPosition, records: readonly FleetRouteRecord[]): void;
  /** A line from the storage that is not a valid route (left out; reported once per reason). */
  invalid(problem: string): void;
}

/**
 * The fleet's API routes in shared storage (the Redis implementation is
 * `RedisRouteLog` in `@proxyd/certificates`): writes applied atomically
 * with a rising version, and a log of changes a node follows and catches
 * up on by version. It never applies anything to a node's table itself.
 */
export interface FleetRouteLog {
  /**
   * Applies `write` atomically (checked against the fleet's API routes at
   * that moment; the route limit counts them). Rejects at once, applying
   * nothing, when the storage does not answer; a rejection after the
   * storage ran the write (the connection lost before its reply) leaves the
   * write applied whole, never in part.
   */
  write(write: FleetWrite, maxRoutes: number): Promise<FleetWriteResult>;
  /**
   * Follows the log in the background: on each (re)connection `follower`
   * catches up by version (entries since its position; the whole set when
   * the log no longer reaches back, or the storage's epoch differs, or it
   * went back), an empty storage is seeded with `follower.records()`, and
   * then every new entry is handed over as it is appended.
   */
  follow(follower: FleetFollower): void;
  /** Catches up again now (the follower lost its place: a hole, a change it could not apply): the whole set. */
  resync(): void;
  /** Whether the storage answers now. */
  reachable(): boolean;
  /** Stops following. */
  close(): void;
}
