import type { RouteOrigin, RouteSpec } from '@proxyd/model';

/** An origin that declares its complete route set at once (a Proxyfile load, a labels resync). */
export type DeclaredOrigin = Exclude<RouteOrigin, 'api'>;

/** What each origin currently declares, by lowercase domain. */
export type Declarations = ReadonlyMap<DeclaredOrigin, ReadonlyMap<string, RouteSpec>>;

/** One origin's row of {@link ORIGINS}. */
export interface OriginRule {
  /** Higher wins a domain. */
  rank: number;
  /** Whether a `PUT /routes/snapshot` drops this origin's routes whose `source` is the snapshot's. */
  snapshotRemoves: boolean;
}

/**
 * The one precedence table of route origins. Every rule of who holds a
 * domain is read from it through {@link mayTake} and {@link fallbackRoute}:
 *
 * | origin      | rank | writes through             | snapshot removes its routes |
 * | ----------- | ---- | -------------------------- | --------------------------- |
 * | `api`       | 3    | `upsert`, `applySnapshot`  | yes                         |
 * | `proxyfile` | 2    | `replaceOrigin` (reload)   | no                          |
 * | `labels`    | 1    | `replaceOrigin` (resync)   | no                          |
 *
 * - An admin write takes the domain whoever holds it.
 * - A declared origin takes a domain that is free, its own or held by a
 *   lower rank, and only when no higher-ranked origin declares it: a
 *   Proxyfile reload never takes a domain an admin write holds, and labels
 *   fill only domains the Proxyfile does not declare.
 * - When a route leaves a domain (DELETE, a snapshot that drops it, its
 *   origin no longer declaring it), the highest-ranked declaration ranked
 *   below the route that left comes back: deleting an API route brings back
 *   the Proxyfile's route, else the labels' one.
 */
export const ORIGINS: Readonly<Record<RouteOrigin, Readonly<OriginRule>>> = Object.freeze({
  api: Object.freeze({ rank: 3, snapshotRemoves: true }),
  proxyfile: Object.freeze({ rank: 2, snapshotRemoves: false }),
  // Label routes come from the container runtime, not from API writers: a snapshot never drops them,
  // even one whose `source` is "docker" (only a container event does).
  labels: Object.freeze({ rank: 1, snapshotRemoves: false }),
});

/** The declared origins, highest rank first. */
export const DECLARED_ORIGINS: readonly DeclaredOrigin[] = Object.freeze(
  (['proxyfile', 'labels'] as const).toSorted((a, b) => ORIGINS[b].rank - ORIGINS[a].rank),
);

/**
 * Whether a route of `origin` may take `domain`, now held by `held`
 * (undefined when free), given what every origin declares.
 */
export function mayTake(
  origin: RouteOrigin,
  domain: string,
  held: RouteSpec | undefined,
  declared: Declarations,
): boolean {
  const rank = ORIGINS[origin].rank;
  if (held && ORIGINS[held.origin].rank > rank) return false;
  return !DECLARED_ORIGINS.some((other) => ORIGINS[other].rank > rank && declared.get(other)?.has(domain));
}

/**
 * The route that takes `domain` when a route of origin `left` leaves it:
 * the highest-ranked declaration of the domain when it ranks below `left`,
 * else none (a route whose own origin still declares the domain is not
 * brought back by removing it).
 */
export function fallbackRoute(domain: string, left: RouteOrigin, declared: Declarations): RouteSpec | undefined {
  for (const origin of DECLARED_ORIGINS) {
    const route = declared.get(origin)?.get(domain);
    if (route) return ORIGINS[origin].rank < ORIGINS[left].rank ? route : undefined;
  }
  return undefined;
}
