import { cachePurgeKey } from '@proxyd/model/rules';

/**
 * One response of the node's shared cache as the index holds it: where its
 * body is (a file the filling node wrote once) and everything a hit needs
 * besides the body. Plain data; proxy-core's `SharedEntry` satisfies it.
 */
export interface SharedCacheEntry {
  /** The site's number (the route publisher's `SiteIds`): its entries share its `max_size`. */
  site: number;
  /** The site's `max_size`, bytes: the bound of its entries on the node. */
  maxBytes: number;
  /** The entry's key: `{host}{request-target}`, then NUL and the coding for an upstream-encoded body. */
  key: string;
  /** The request key (`{host}{request-target}`): what a PURGE names, for every coding. */
  base: string;
  /** The body's file (absolute path), complete before the entry is sent. */
  file: string;
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** When it was stored, ms since the epoch. */
  storedAt: number;
  /** The upstream's own `Age` at store time, seconds. */
  baseAge: number;
  /** Fresh until, ms since the epoch. */
  expiresAt: number;
  /** Bytes charged to the site's bound (body, key, headers and their objects). */
  size: number;
  /** The body's length (the file's), bytes. */
  bodyBytes: number;
}

/**
 * What changed in the index, for the nodes' copies: entries stored (a
 * newer entry replaces the one of its key) and entries gone (by key and
 * file: a node drops its copy only when it is that file's).
 */
export interface CacheIndexUpdate {
  set: SharedCacheEntry[];
  deleted: { key: string; file: string }[];
}

interface Partition {
  bytes: number;
  /** Least recently used first. */
  readonly lru: Map<string, SharedCacheEntry>;
}

/**
 * The node's response-cache index, owned by the control plane when several
 * processes serve (issue 32): one entry per key for the whole node, each
 * site's entries bounded by its `max_size` with least-recently-used
 * eviction (recency from the hits nodes report, {@link touch}). Nodes write
 * bodies to files and report them ({@link store}); the index decides (the
 * last stored entry of a key wins), evicts, and answers what changed for
 * every node's copy. A body file leaves with its entry ({@link
 * CacheIndexOptions.removeFile}): replaced, evicted, purged, or its site
 * no longer served.
 */
export class CacheIndex {
  readonly #removeFile: (file: string) => void;
  readonly #entries = new Map<string, SharedCacheEntry>();
  readonly #partitions = new Map<number, Partition>();
  /** Request key → the keys stored for it (one per coding). */
  readonly #bases = new Map<string, Set<string>>();
  /** Sites no longer served: an entry a slow node stores for one is refused. */
  readonly #released = new Set<number>();

  constructor(options: { removeFile(file: string): void }) {
    this.#removeFile = options.removeFile;
  }

  /** Entries held. */
  get size(): number {
    return this.#entries.size;
  }

  /** Bytes charged to site `site` (tests, metrics). */
  bytesOf(site: number): number {
    return this.#partitions.get(site)?.bytes ?? 0;
  }

  /** Every entry (what a node that starts now copies). */
  entries(): SharedCacheEntry[] {
    return [...this.#entries.values()];
  }

  /**
   * A node stored `entry` (its body file complete): it replaces the
   * entry of its key, and the site's least recently used entries leave
   * until the site is within its bound. Refused (its file removed, the
   * storing node told to drop it) for a site no longer served or an entry
   * over the bound.
   */
  store(entry: SharedCacheEntry): CacheIndexUpdate {
    if (this.#released.has(entry.site) || entry.size > entry.maxBytes) {
      this.#removeFile(entry.file);
      return { set: [], deleted: [{ key: entry.key, file: entry.file }] };
    }
    const update: CacheIndexUpdate = { set: [entry], deleted: [] };
    const old = this.#entries.get(entry.key);
    // The new entry replaces it in every copy: no deletion to send.
    if (old !== undefined) this.#remove(old, null);
    let partition = this.#partitions.get(entry.site);
    if (partition === undefined) {
      partition = { bytes: 0, lru: new Map() };
      this.#partitions.set(entry.site, partition);
    }
    this.#entries.set(entry.key, entry);
    partition.lru.set(entry.key, entry);
    partition.bytes += entry.size;
    let keys = this.#bases.get(entry.base);
    if (keys === undefined) {
      keys = new Set();
      this.#bases.set(entry.base, keys);
    }
    keys.add(entry.key);
    // The new entry is the most recent and within the bound alone: the loop stops before it.
    for (const victim of partition.lru.values()) {
      if (partition.bytes <= entry.maxBytes) break;
      this.#remove(victim, update);
    }
    return update;
  }

  /** Nodes served these keys from the cache: each becomes its site's most recently used. */
  touch(keys: readonly string[]): void {
    for (const key of keys) {
      const entry = this.#entries.get(key);
      if (entry === undefined) continue;
      const lru = this.#partitions.get(entry.site)?.lru;
      if (lru === undefined) continue;
      lru.delete(key);
      lru.set(key, entry);
    }
  }

  /**
   * Removes the entries of `{host}/{path}` (every coding; stale ones
   * count), as `PURGE /cache/{host}/{path}` names it ({@link
   * cachePurgeKey}). `removed`: whether there was one.
   */
  purge(key: string): { removed: boolean; update: CacheIndexUpdate } {
    const update: CacheIndexUpdate = { set: [], deleted: [] };
    const keys = this.#bases.get(cachePurgeKey(key));
    if (keys === undefined) return { removed: false, update };
    for (const k of [...keys]) {
      const entry = this.#entries.get(k);
      if (entry !== undefined) this.#remove(entry, update);
    }
    return { removed: update.deleted.length > 0, update };
  }

  /** Sites no longer served (a node dropped them): their entries leave, and later stores for them are refused. */
  release(sites: readonly number[]): CacheIndexUpdate {
    const update: CacheIndexUpdate = { set: [], deleted: [] };
    for (const site of sites) {
      this.#released.add(site);
      const partition = this.#partitions.get(site);
      if (partition === undefined) continue;
      for (const entry of [...partition.lru.values()]) this.#remove(entry, update);
      this.#partitions.delete(site);
    }
    return update;
  }

  #remove(entry: SharedCacheEntry, update: CacheIndexUpdate | null): void {
    this.#entries.delete(entry.key);
    const partition = this.#partitions.get(entry.site);
    if (partition?.lru.delete(entry.key)) partition.bytes -= entry.size;
    const keys = this.#bases.get(entry.base);
    if (keys !== undefined) {
      keys.delete(entry.key);
      if (keys.size === 0) this.#bases.delete(entry.base);
    }
    this.#removeFile(entry.file);
    update?.deleted.push({ key: entry.key, file: entry.file });
  }
}
