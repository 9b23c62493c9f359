import { closeSync, openSync, readFile, readSync, rename, renameSync, unlink, writeFile, writeFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import type { CacheConfig } from '@proxyd/model';
import {
  type CacheEntry,
  CacheFills,
  type CachingSite,
  cacheKeyFor,
  type NodeCache,
  type SiteCache,
  STORED_CODINGS,
  type StoredResponse,
} from './response-cache.js';

/**
 * One entry of the node's shared cache as it crosses between processes
 * (the cluster contract's `SharedCacheEntry`): its body is in `file`.
 */
export interface SharedEntryData {
  /** The site's number, the same in every process of the node. */
  readonly site: number;
  /** The site's `max_size`, bytes. */
  readonly maxBytes: number;
  readonly key: string;
  /** The request key (`{host}{request-target}`) a PURGE names. */
  readonly base: string;
  readonly file: string;
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly storedAt: number;
  readonly baseAge: number;
  readonly expiresAt: number;
  readonly size: number;
  readonly bodyBytes: number;
}

/** An entry of this process's copy of the index: its body in a file, and in memory while it is hot. */
interface SharedEntry extends CacheEntry, SharedEntryData {
  readonly body: null;
  readonly headers: IncomingHttpHeaders;
  /** The body, while among this process's recently served small bodies ({@link HOT_BYTES}). */
  hot: Buffer | null;
}

/** What changed in the index (the contract's `CacheIndexUpdate`). */
export interface SharedCacheUpdate {
  set: readonly SharedEntryData[];
  deleted: readonly { key: string; file: string }[];
}

/** Where this process tells the index what it did (the contract's `FleetPort.cacheStored` and the rest). */
export interface SharedCacheLink {
  stored(entry: SharedEntryData): void;
  touched(keys: readonly string[]): void;
  released(sites: readonly number[]): void;
}

/** What a {@link SharedCache} needs. */
export interface SharedCacheOptions {
  /** The directory of the node's body files (a tmpfs where there is one). */
  dir: string;
  /** This process's prefix for the files it writes (unique on the node, e.g. its pid). */
  prefix: string;
  link: SharedCacheLink;
  /** A site's number, the same in every process (the route publisher's); undefined: it keeps its own cache. */
  siteNumber(site: CachingSite): number | undefined;
  /** The index's entries when this process starts. */
  entries?: readonly SharedEntryData[];
  /** How often the keys served from the cache are reported for their recency, ms (default 1000). */
  touchIntervalMs?: number;
  /** Bytes of small bodies this process keeps in memory (default {@link HOT_BYTES}). */
  hotBytes?: number;
}

/**
 * Bodies up to this many bytes are written and read synchronously: an
 * `open`/`read`/`close` of a small file in the page cache (a tmpfs: never
 * a disk) costs a few µs, a fraction of the three thread-pool round trips
 * of an asynchronous read (`bench/cache`).
 */
export const SYNC_BODY_BYTES = 64 * 1024;

/**
 * Bodies up to this many bytes, once served by a process, stay in its
 * memory (least recently served out first, {@link HOT_BYTES} in all): a
 * hit on a hot body makes no system call. A bigger body costs more to copy
 * than to open, and is read from its file every time.
 */
export const HOT_BODY_BYTES = 16 * 1024;

/** Bytes of hot bodies a process keeps, whatever the number of sites: 8 MiB. */
export const HOT_BYTES = 8 * 1024 * 1024;

/**
 * A process's side of the node's shared response cache (issue 32): the
 * index is the control plane's (`CacheIndex` in the cluster package), this
 * process keeps a copy of it, kept current by {@link apply}, and the bodies
 * are files in one directory, written once by the process that filled them
 * (to a temporary name, then renamed: a reader never sees a partial body)
 * and read by every process on a hit. A hit costs a lookup in the copy and
 * a read of the file from the page cache, never a message; the keys served
 * are reported once a second for the index's LRU. A stored response is in
 * this process's copy at once and in the others' once the index sent it;
 * the index decides between two processes that fill one key (the last
 * one stored wins, the other's file is removed).
 */
export class SharedCache implements NodeCache {
  readonly #dir: string;
  readonly #prefix: string;
  readonly #link: SharedCacheLink;
  readonly #siteNumber: (site: CachingSite) => number | undefined;
  readonly #entries = new Map<string, SharedEntry>();
  /** Numbers of the caching sites of the table served now. */
  #live = new Set<number>();
  #touched = new Set<string>();
  #touchTimer: NodeJS.Timeout | null = null;
  readonly #touchIntervalMs: number;
  readonly #flushTouched = (): void => this.#reportTouched();
  #files = 0;
  /** The entries whose body is in memory, least recently served first. */
  readonly #hot = new Set<SharedEntry>();
  #hotBytes = 0;
  readonly #hotBudget: number;

  constructor(options: SharedCacheOptions) {
    this.#dir = options.dir;
    this.#prefix = options.prefix;
    this.#link = options.link;
    this.#siteNumber = options.siteNumber;
    this.#touchIntervalMs = options.touchIntervalMs ?? 1000;
    this.#hotBudget = options.hotBytes ?? HOT_BYTES;
    for (const entry of options.entries ?? []) this.#put(entry);
  }

  /** Entries in this process's copy (tests). */
  get size(): number {
    return this.#entries.size;
  }

  /** Bytes of bodies held in memory (tests). */
  get hotBytes(): number {
    return this.#hotBytes;
  }

  forSite(site: CachingSite, config: CacheConfig): SiteCache | null {
    const number = this.#siteNumber(site);
    return number === undefined ? null : new SharedSiteCache(this, number, config);
  }

  /** Follows what changed in the index: a deletion drops the copy only when it is of the same file. */
  apply(update: SharedCacheUpdate): void {
    for (const entry of update.set) this.#put(entry);
    for (const { key, file } of update.deleted) if (this.#entries.get(key)?.file === file) this.#delete(key);
  }

  retain(sites: ReadonlySet<CachingSite>): void {
    const live = new Set<number>();
    for (const site of sites) {
      if (site.cache === null) continue;
      const number = this.#siteNumber(site);
      if (number !== undefined) live.add(number);
    }
    const gone: number[] = [];
    for (const number of this.#live) if (!live.has(number)) gone.push(number);
    this.#live = live;
    if (gone.length === 0) return;
    const dropped = new Set(gone);
    for (const [key, entry] of this.#entries) if (dropped.has(entry.site)) this.#delete(key);
    this.#link.released(gone);
  }

  purge(base: string): boolean {
    let removed = this.#delete(base);
    for (const coding of STORED_CODINGS) if (this.#delete(cacheKeyFor(base, coding))) removed = true;
    return removed;
  }

  /** The fresh entry of `key` for site `site`, marked as served. */
  get(key: string, site: number, now: number): SharedEntry | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined || entry.site !== site || entry.expiresAt <= now) return undefined;
    this.#touched.add(key);
    if (this.#touchTimer === null) {
      this.#touchTimer = setTimeout(this.#flushTouched, this.#touchIntervalMs);
      this.#touchTimer.unref();
    }
    return entry;
  }

  /** An entry's body, read at once up to {@link SYNC_BODY_BYTES} (undefined above: {@link readBody}); null when its file is gone. */
  body(entry: SharedEntry): Buffer | null | undefined {
    const hot = entry.hot;
    if (hot !== null) {
      this.#hot.delete(entry);
      this.#hot.add(entry);
      return hot;
    }
    const bytes = entry.bodyBytes;
    if (bytes > SYNC_BODY_BYTES) return undefined;
    // A body kept hot owns its memory (not a slice of Node's shared pool slab, which it would keep whole).
    const keep = bytes <= HOT_BODY_BYTES;
    const body = keep ? Buffer.allocUnsafeSlow(bytes) : Buffer.allocUnsafe(bytes);
    try {
      const fd = openSync(entry.file, 'r');
      try {
        let at = 0;
        while (at < bytes) {
          const read = readSync(fd, body, at, bytes - at, at);
          if (read === 0) break;
          at += read;
        }
        if (at < bytes) throw new Error('short body file');
      } finally {
        closeSync(fd);
      }
    } catch {
      // Evicted or replaced since the copy was sent (the index removes the file first): a miss.
      this.#lost(entry);
      return null;
    }
    if (keep) this.#heat(entry, body);
    return body;
  }

  /** Reads an entry's body asynchronously; null when its file is gone. */
  readBody(entry: SharedEntry, done: (body: Buffer | null) => void): void {
    readFile(entry.file, (err, body) => {
      if (err === null) return done(body);
      this.#lost(entry);
      done(null);
    });
  }

  /**
   * Writes `response`'s body to a new file (to a temporary name, then
   * renamed) and stores it: in this copy at once, then in the index. False
   * when it is over the site's bound or could not be written at once.
   */
  store(key: string, response: StoredResponse, site: number, maxBytes: number): boolean {
    if (response.size > maxBytes) return false;
    const file = `${this.#dir}/${this.#prefix}-${(++this.#files).toString(36)}`;
    const temporary = `${file}.tmp`;
    const entry: SharedEntryData = {
      site,
      maxBytes,
      key,
      base: baseOf(key),
      file,
      status: response.status,
      headers: response.headers,
      storedAt: response.storedAt,
      baseAge: response.baseAge,
      expiresAt: response.expiresAt,
      size: response.size,
      bodyBytes: response.body.length,
    };
    if (response.body.length <= SYNC_BODY_BYTES) {
      try {
        writeFileSync(temporary, response.body);
        renameSync(temporary, file);
      } catch {
        unlink(temporary, ignore);
        return false;
      }
      this.#stored(entry, response.body);
      return true;
    }
    writeFile(temporary, response.body, (err) => {
      if (err !== null) return unlink(temporary, ignore);
      rename(temporary, file, (failed) => {
        if (failed !== null) unlink(temporary, ignore);
        else this.#stored(entry, response.body);
      });
    });
    return true;
  }

  /** Stops reporting (the process is stopping). */
  close(): void {
    if (this.#touchTimer !== null) clearTimeout(this.#touchTimer);
    this.#touchTimer = null;
  }

  #stored(entry: SharedEntryData, response: Buffer): void {
    // A site dropped while its body was written: the file goes (the index would refuse it too).
    if (!this.#live.has(entry.site)) {
      unlink(entry.file, ignore);
      return;
    }
    const put = this.#put(entry);
    // The filling process has the body in memory already: hot at once.
    if (entry.bodyBytes <= HOT_BODY_BYTES) this.#heat(put, response);
    this.#link.stored(entry);
  }

  #put(data: SharedEntryData): SharedEntry {
    const entry: SharedEntry = {
      site: data.site,
      maxBytes: data.maxBytes,
      key: data.key,
      base: data.base,
      file: data.file,
      status: data.status,
      headers: data.headers,
      body: null,
      storedAt: data.storedAt,
      baseAge: data.baseAge,
      expiresAt: data.expiresAt,
      size: data.size,
      bodyBytes: data.bodyBytes,
      hot: null,
    };
    this.#delete(entry.key);
    this.#entries.set(entry.key, entry);
    return entry;
  }

  /** Drops the entry of `key` from this copy (and its body from memory); true when there was one. */
  #delete(key: string): boolean {
    const entry = this.#entries.get(key);
    if (entry === undefined) return false;
    this.#entries.delete(key);
    this.#cool(entry);
    return true;
  }

  /** Keeps `body` in memory with `entry`, the least recently served hot bodies leaving past the budget. */
  #heat(entry: SharedEntry, body: Buffer): void {
    if (body.length > this.#hotBudget) return;
    entry.hot = body;
    this.#hot.add(entry);
    this.#hotBytes += body.length;
    for (const old of this.#hot) {
      if (this.#hotBytes <= this.#hotBudget) break;
      this.#cool(old);
    }
  }

  #cool(entry: SharedEntry): void {
    if (entry.hot === null) return;
    this.#hotBytes -= entry.hot.length;
    entry.hot = null;
    this.#hot.delete(entry);
  }

  #lost(entry: SharedEntry): void {
    if (this.#entries.get(entry.key) === entry) this.#delete(entry.key);
  }

  #reportTouched(): void {
    this.#touchTimer = null;
    if (this.#touched.size === 0) return;
    const keys = [...this.#touched];
    this.#touched = new Set();
    this.#link.touched(keys);
  }
}

/** One site's cache in the node's shared cache (fills are this process's, entries the node's). */
export class SharedSiteCache extends CacheFills implements SiteCache {
  readonly #shared: SharedCache;
  readonly #site: number;

  constructor(shared: SharedCache, site: number, config: CacheConfig) {
    super(config);
    this.#shared = shared;
    this.#site = site;
  }

  get(key: string, now = Date.now()): CacheEntry | undefined {
    return this.#shared.get(key, this.#site, now);
  }

  body(entry: CacheEntry): Buffer | null | undefined {
    return entry.body ?? this.#shared.body(entry as SharedEntry);
  }

  readBody(entry: CacheEntry, done: (body: Buffer | null) => void): void {
    if (entry.body !== null) done(entry.body);
    else this.#shared.readBody(entry as SharedEntry, done);
  }

  set(key: string, entry: StoredResponse): boolean {
    return this.#shared.store(key, entry, this.#site, this.maxBytes);
  }
}

/** The request key of an entry key (an encoded body's key has a NUL and its coding after it). */
function baseOf(key: string): string {
  const nul = key.indexOf('\u0000');
  return nul < 0 ? key : key.slice(0, nul);
}

function ignore(): void {}
