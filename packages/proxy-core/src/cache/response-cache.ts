import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { CacheConfig } from '@proxyd/model';
import { cachePurgeKey } from '@proxyd/model/rules';

/**
 * One stored response: the upstream's status, headers (hop-by-hop removed)
 * and whole body, in memory or (`body` null) in a file of the node's shared
 * cache, read with {@link SiteCache.body}.
 */
export interface CacheEntry {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer | null;
  /** When it was stored, ms since the epoch. */
  readonly storedAt: number;
  /** The upstream's own `Age` at store time, seconds. */
  readonly baseAge: number;
  /** Fresh until, ms since the epoch. */
  readonly expiresAt: number;
  /** Bytes charged to the LRU bound (body plus a header estimate). */
  readonly size: number;
}

/**
 * The freshness lifetime a response allows, in ms, or -1 when it must not be
 * stored. Stored: status 200, `Cache-Control` with `public`, `max-age` or
 * `s-maxage` (s-maxage wins, then max-age; `public` alone uses the site's
 * ttl); never `private`, `no-store`, `no-cache`, a `Set-Cookie` or a `Vary`
 * (one entry per key and coding, so a response varying on anything
 * but `Accept-Encoding` is not stored). The lifetime is
 * capped by the site's `ttl`.
 */
export function cacheLifetimeMs(status: number, headers: IncomingHttpHeaders, ttlMs: number): number {
  if (status !== 200 || headers['set-cookie'] !== undefined) return -1;
  if (headers.vary !== undefined && !variesOnlyByEncoding(headers.vary)) return -1;
  const cc = headers['cache-control'];
  if (cc === undefined || ttlMs <= 0) return -1;
  let maxAge = -1;
  let sMaxAge = -1;
  let isPublic = false;
  for (const raw of cc.split(',')) {
    const part = raw.trim().toLowerCase();
    if (part === 'private' || part === 'no-store' || part === 'no-cache' || part.startsWith('private=')) return -1;
    if (part.startsWith('no-cache=')) return -1;
    if (part === 'public') isPublic = true;
    else if (part.startsWith('s-maxage=')) sMaxAge = seconds(part.slice(9));
    else if (part.startsWith('max-age=')) maxAge = seconds(part.slice(8));
  }
  const lifetime = sMaxAge >= 0 ? sMaxAge * 1000 : maxAge >= 0 ? maxAge * 1000 : isPublic ? ttlMs : -1;
  if (lifetime <= 0) return -1;
  return Math.min(lifetime, ttlMs);
}

/** `Vary: Accept-Encoding` (alone): entries are kept per coding already ({@link cacheKeyFor}). */
function variesOnlyByEncoding(vary: string): boolean {
  for (const token of vary.split(',')) {
    const t = token.trim().toLowerCase();
    if (t !== '' && t !== 'accept-encoding') return false;
  }
  return true;
}

/**
 * The content codings an entry may be stored with besides identity (an
 * upstream that compresses itself): each is a separate entry, served only
 * to a client whose `Accept-Encoding` accepts it.
 */
export const STORED_CODINGS: readonly string[] = Object.freeze(['zstd', 'br', 'gzip', 'deflate']);

/**
 * The key of an entry whose body has `coding` (the upstream's
 * `Content-Encoding`, lowercase; identity or none: the request key itself):
 * `{host}{request-target}`, then a NUL and the coding. Identity bodies are
 * what `encode` compresses per client on the way out, so one entry serves
 * every client; an upstream-encoded body is never served to a client that
 * did not ask for its coding.
 */
export function cacheKeyFor(key: string, coding: string | undefined): string {
  if (coding === undefined) return key;
  const c = coding.trim().toLowerCase();
  return c === '' || c === 'identity' ? key : `${key}\u0000${c === 'x-gzip' ? 'gzip' : c}`;
}

function seconds(v: string): number {
  const n = Number.parseInt(v.replace(/"/g, ''), 10);
  return Number.isFinite(n) && n >= 0 ? n : -1;
}

/**
 * Whether a request may be answered from (and fill) the cache: GET or HEAD
 * without `Authorization` and without `Range` (a range request goes to the
 * upstream, which answers the range; its 206 is never stored). HEAD reads
 * GET entries but never fills the cache.
 */
export function isCacheableRequest(req: IncomingMessage): boolean {
  const m = req.method;
  const headers = req.headers;
  return (m === 'GET' || m === 'HEAD') && headers.authorization === undefined && headers.range === undefined;
}

/**
 * What a request's own cache directives allow (RFC 9111 §5.2.1), as bit
 * flags: `Refresh` (`no-cache`, `max-age=0`, `Pragma: no-cache`) skips the
 * lookup and goes to the upstream, whose fresh answer is stored; `NoStore`
 * (`no-store`) may be answered from the cache but stores nothing.
 */
export const RequestCacheMode = { Normal: 0, Refresh: 1, NoStore: 2 } as const;

/** The request's cache directives (`Cache-Control`, else `Pragma: no-cache`). */
export function requestCacheMode(req: IncomingMessage): number {
  const headers = req.headers;
  const cc = headers['cache-control'];
  if (cc === undefined) {
    const pragma = headers.pragma;
    return pragma?.toLowerCase().includes('no-cache') ? RequestCacheMode.Refresh : RequestCacheMode.Normal;
  }
  let mode: number = RequestCacheMode.Normal;
  for (const raw of cc.split(',')) {
    const part = raw.trim().toLowerCase();
    if (part === 'no-cache' || part === 'max-age=0') mode |= RequestCacheMode.Refresh;
    else if (part === 'no-store') mode |= RequestCacheMode.NoStore;
  }
  return mode;
}

/** A response the `cache` step stores: its body in memory. */
export interface StoredResponse extends CacheEntry {
  readonly body: Buffer;
}

/**
 * The cache of one site as the `cache` step uses it: in this process
 * ({@link ResponseCache}), or shared by the workers of a node
 * (`SharedSiteCache`, `shared-cache.ts`).
 */
export interface SiteCache {
  /** The site's bound, bytes (`max_size`). */
  readonly maxBytes: number;
  /** The largest entry stored: an eighth of `max_size` (bigger bodies stream through uncached). */
  readonly maxEntryBytes: number;
  readonly ttlMs: number;
  /** Starts filling `key`; false when another response is already filling it. */
  beginFill(key: string): boolean;
  /** Charges `bytes` more to the fills in progress; false (nothing charged) when over `maxBytes`. */
  reserveFill(bytes: number): boolean;
  /** Ends the fill of `key` and releases the `bytes` it had reserved. */
  endFill(key: string, bytes: number): void;
  /** A fresh entry (and marks it recently used), or undefined. */
  get(key: string, now?: number): CacheEntry | undefined;
  /**
   * The body of an entry {@link get} returned: the buffer at once, null
   * when it is gone (answer as a miss), or undefined when it must be read
   * asynchronously ({@link readBody}).
   */
  body(entry: CacheEntry): Buffer | null | undefined;
  /** Reads an entry's body for which {@link body} answered undefined: `done` gets it, or null when it is gone. */
  readBody(entry: CacheEntry, done: (body: Buffer | null) => void): void;
  /** Stores a response (evicting least recently used ones); false when it is not stored. */
  set(key: string, entry: StoredResponse): boolean;
}

/**
 * The fills of one site's cache in this process: one fill per key, and
 * the bodies buffered by fills in progress at most `maxBytes` together.
 */
export class CacheFills {
  readonly maxBytes: number;
  readonly maxEntryBytes: number;
  readonly ttlMs: number;
  /** Keys being filled now: one fill per key, so a burst of misses buffers one body. */
  readonly #filling = new Set<string>();
  /** Body bytes buffered by fills in progress, at most `maxBytes` together. */
  #fillingBytes = 0;

  constructor(config: CacheConfig) {
    this.maxBytes = config.max_size_bytes;
    this.maxEntryBytes = Math.floor(config.max_size_bytes / 8);
    this.ttlMs = config.ttl_ms;
  }

  /** Starts filling `key`; false when another response is already filling it. */
  beginFill(key: string): boolean {
    if (this.#filling.has(key)) return false;
    this.#filling.add(key);
    return true;
  }

  /** Charges `bytes` more to the fills in progress; false (nothing charged) when over `maxBytes`. */
  reserveFill(bytes: number): boolean {
    if (this.#fillingBytes + bytes > this.maxBytes) return false;
    this.#fillingBytes += bytes;
    return true;
  }

  /** Ends the fill of `key` and releases the `bytes` it had reserved. */
  endFill(key: string, bytes: number): void {
    this.#filling.delete(key);
    this.#fillingBytes -= bytes;
  }

  /** Body bytes held by fills in progress (tests). */
  get fillingBytes(): number {
    return this.#fillingBytes;
  }
}

/**
 * The response cache of one site in this process: in memory, bounded by
 * `max_size_bytes` with least-recently-used eviction. The key is
 * `{host}{request-target}`, i.e. `{host}/{path}` with the path as the
 * client sent it (not percent-decoded) and its query string, which is what
 * `PURGE /cache/{host}/{path}` names.
 */
export class ResponseCache extends CacheFills implements SiteCache {
  readonly #entries = new Map<string, StoredResponse>();
  #bytes = 0;

  /** Bytes currently charged. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Number of stored entries. */
  get size(): number {
    return this.#entries.size;
  }

  /** A fresh entry (and marks it recently used), or undefined; a stale one is dropped. */
  get(key: string, now = Date.now()): StoredResponse | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
    if (entry.expiresAt <= now) {
      this.#bytes -= entry.size;
      return undefined;
    }
    this.#entries.set(key, entry);
    return entry;
  }

  /** Its body is in memory. */
  body(entry: CacheEntry): Buffer | null {
    return entry.body;
  }

  readBody(entry: CacheEntry, done: (body: Buffer | null) => void): void {
    done(entry.body);
  }

  /** Stores an entry, evicting the least recently used ones; an entry above the bound is not stored. */
  set(key: string, entry: StoredResponse): boolean {
    if (entry.size > this.maxBytes) return false;
    this.delete(key);
    this.#entries.set(key, entry);
    this.#bytes += entry.size;
    for (const [k, e] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break;
      this.#entries.delete(k);
      this.#bytes -= e.size;
    }
    return true;
  }

  /** Removes one entry; true when it was there (stale entries count). */
  delete(key: string): boolean {
    const entry = this.#entries.get(key);
    if (entry === undefined) return false;
    this.#entries.delete(key);
    this.#bytes -= entry.size;
    return true;
  }

  /** Drops everything. */
  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
  }
}

/**
 * Memory of one entry besides its body bytes and the characters of its key
 * and headers, bytes: the entry object, the body's Buffer and ArrayBuffer
 * objects (~200 B, whatever the body's size), the header object, the key
 * string and its Map slot (with the Map's spare capacity). Measured on
 * Node 24 x64 (`cache-memory.stress.test.ts`).
 */
export const ENTRY_OVERHEAD_BYTES = 480;
/** Memory of one stored header besides its characters: the value string's header and the property slot. */
export const HEADER_OVERHEAD_BYTES = 24;

/**
 * Bytes an entry is charged against `max_size`: what it really holds in
 * memory, so the bound holds for the process (heap and external), not just
 * for the bodies. The body, the key and every header name and value (one
 * byte a character: header values come from Node's parser as Latin-1,
 * which V8 stores one byte a character), plus {@link ENTRY_OVERHEAD_BYTES}
 * and {@link HEADER_OVERHEAD_BYTES} a header. A small entry costs about
 * 1 KiB whatever its body.
 */
export function entrySize(headers: IncomingHttpHeaders, body: Buffer, key: string): number {
  let size = body.length + key.length + ENTRY_OVERHEAD_BYTES;
  for (const name in headers) {
    const v = headers[name];
    size += HEADER_OVERHEAD_BYTES + name.length;
    if (typeof v === 'string') size += v.length;
    else if (Array.isArray(v)) for (const item of v) size += HEADER_OVERHEAD_BYTES + item.length;
  }
  return size;
}

/** What the registry reads of a Site: its `cache` block (null when the site does not cache). */
export interface CachingSite {
  readonly cache: CacheConfig | null;
}

/**
 * A cache shared by the processes of a node (`SharedCache`,
 * `shared-cache.ts`), as the registry uses it: a site's cache, the sites
 * still served, a purge.
 */
export interface NodeCache {
  /** The site's cache (null: the site is not one the node's caches share; it keeps its own). */
  forSite(site: CachingSite, config: CacheConfig): SiteCache | null;
  /** The sites of the published table: the caches of the others go. */
  retain(sites: ReadonlySet<CachingSite>): void;
  /** Removes the entries of a request key ({@link cachePurgeKey} form), every coding; true when there was one. */
  purge(base: string): boolean;
}

/**
 * All sites' caches, as the admin API's `CachePort` sees them:
 * `{ enabled, purge(key) }`. A purge removes the key from every site's cache.
 * `enabled` follows the published route table (set by {@link retain}), not
 * the caches created so far: a site with `cache` makes PURGE answer 404 for
 * an absent key even before its first cacheable request. Each site's cache
 * is this process's ({@link ResponseCache}), or, given a {@link NodeCache},
 * the node's (one for every worker).
 */
export class CacheRegistry {
  #caches = new Map<CachingSite, SiteCache>();
  #enabled = false;
  readonly #node: NodeCache | null;

  constructor(node: NodeCache | null = null) {
    this.#node = node;
  }

  /** True when at least one site of the last retained (published) table has `cache`. */
  get enabled(): boolean {
    return this.#enabled;
  }

  /** The cache of a site (created on first use, kept while the Site object is live). */
  forSite(site: CachingSite, config: CacheConfig): SiteCache {
    let cache = this.#caches.get(site);
    if (cache === undefined) {
      cache = this.#node?.forSite(site, config) ?? new ResponseCache(config);
      this.#caches.set(site, cache);
    }
    return cache;
  }

  /**
   * Records the sites of the published table (called on every route-table
   * swap): `enabled` becomes whether any of them has `cache`, and the caches
   * of sites no longer published are dropped.
   */
  retain(sites: ReadonlySet<CachingSite>): void {
    let enabled = false;
    for (const site of sites) if (site.cache !== null) enabled = true;
    this.#enabled = enabled;
    for (const site of this.#caches.keys()) if (!sites.has(site)) this.#caches.delete(site);
    this.#node?.retain(sites);
  }

  /**
   * Invalidates `{host}/{path}` (every coding stored for it). The host is compared lowercase; a missing
   * leading `/` on the path is added. True when an entry was removed.
   */
  purge(key: string): boolean {
    const normal = cachePurgeKey(key);
    let removed = this.#node?.purge(normal) ?? false;
    for (const cache of this.#caches.values()) {
      if (!(cache instanceof ResponseCache)) continue;
      if (cache.delete(normal)) removed = true;
      for (const coding of STORED_CODINGS) if (cache.delete(cacheKeyFor(normal, coding))) removed = true;
    }
    return removed;
  }
}
