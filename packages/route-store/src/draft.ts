import type { RouteOrigin, RouteSpec } from '@proxyd/model';
import type { Declarations } from './precedence.js';

/**
 * The store's table of routes by lowercase domain, with the indexes that
 * keep every write proportional to what it touches: the domains of each
 * origin (a declared origin's replacement, the per-origin counts) and of
 * each `source` (a snapshot). Changed only through a {@link Draft}.
 */
export class RouteIndex {
  readonly table = new Map<string, RouteSpec>();
  readonly #byOrigin = new Map<RouteOrigin, Set<string>>();
  readonly #bySource = new Map<string, Set<string>>();

  /** Lowercase domains of `origin`'s routes (live: copy before changing the table while iterating). */
  domainsOf(origin: RouteOrigin): ReadonlySet<string> {
    return this.#byOrigin.get(origin) ?? EMPTY;
  }

  /** Lowercase domains of the routes whose `source` is `source` (live, as {@link domainsOf}). */
  domainsOfSource(source: string): ReadonlySet<string> {
    return this.#bySource.get(source) ?? EMPTY;
  }

  /** Sets or (spec undefined) deletes the route of `domain`, indexes included. */
  put(domain: string, spec: RouteSpec | undefined): void {
    const old = this.table.get(domain);
    if (old !== undefined) {
      this.#byOrigin.get(old.origin)?.delete(domain);
      if (old.source !== null) this.#bySource.get(old.source)?.delete(domain);
    }
    if (spec === undefined) {
      this.table.delete(domain);
      return;
    }
    this.table.set(domain, spec);
    setOf(this.#byOrigin, spec.origin).add(domain);
    if (spec.source !== null) setOf(this.#bySource, spec.source).add(domain);
  }
}

const EMPTY: ReadonlySet<string> = new Set();

function setOf<K>(map: Map<K, Set<string>>, key: K): Set<string> {
  let set = map.get(key);
  if (set === undefined) {
    set = new Set();
    map.set(key, set);
  }
  return set;
}

/**
 * One batch of writes, applied to the store's table in place and undone
 * if the batch cannot be persisted. It remembers each touched domain's
 * route from before the batch, which is also what the batch changed.
 */
export class Draft {
  readonly #index: RouteIndex;
  /** Domain → its route before the batch (undefined: none), for every domain the batch touched. */
  readonly #before = new Map<string, RouteSpec | undefined>();
  readonly #declaredBefore: Declarations;
  declared: Declarations;
  /** Whether an API route was added, replaced or removed (the state file's journal gets a line). */
  apiChanged = false;

  constructor(index: RouteIndex, declared: Declarations) {
    this.#index = index;
    this.declared = declared;
    this.#declaredBefore = declared;
  }

  /** Routes in the table. */
  get size(): number {
    return this.#index.table.size;
  }

  get(domain: string): RouteSpec | undefined {
    return this.#index.table.get(domain);
  }

  set(domain: string, spec: RouteSpec): void {
    this.#remember(domain);
    this.#index.put(domain, spec);
  }

  delete(domain: string): void {
    this.#remember(domain);
    this.#index.put(domain, undefined);
  }

  /** A copy of the lowercase domains of `origin`'s routes. */
  domainsOf(origin: RouteOrigin): string[] {
    return [...this.#index.domainsOf(origin)];
  }

  /** A copy of the lowercase domains of the routes whose `source` is `source`. */
  domainsOfSource(source: string): string[] {
    return [...this.#index.domainsOfSource(source)];
  }

  /** What the batch changed: routes added or replaced (domain, route) and domains left without a route. */
  changes(): { upserted: Array<[string, RouteSpec]>; removed: string[] } {
    const upserted: Array<[string, RouteSpec]> = [];
    const removed: string[] = [];
    for (const [domain, before] of this.#before) {
      const now = this.#index.table.get(domain);
      if (now === before) continue;
      if (now === undefined) removed.push(domain);
      else upserted.push([domain, now]);
    }
    return { upserted, removed };
  }

  /** The domains the batch touched (changed or set back as they were). */
  touched(): IterableIterator<string> {
    return this.#before.keys();
  }

  /** Puts the table back as it was before the batch. */
  undo(): void {
    for (const [domain, before] of this.#before) this.#index.put(domain, before);
    this.declared = this.#declaredBefore;
  }

  #remember(domain: string): void {
    if (!this.#before.has(domain)) this.#before.set(domain, this.#index.table.get(domain));
  }
}
