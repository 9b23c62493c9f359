import type { LoadedCertificate } from './stored-certificate.js';

/** The control plane's certificate cache by default: as many loaded certificates as Caddy keeps (certmagic's `Capacity`). */
export const DEFAULT_CERTIFICATE_CACHE_CAPACITY = 10_000;

/** Hits, misses and evictions of a certificate cache since start, and its size now. */
export interface CertificateCacheStats {
  hits: number;
  misses: number;
  evictions: number;
  size: number;
  capacity: number;
}

/**
 * The loaded certificates (PEMs and TLS context) of the names served,
 * least recently used first out: at most `capacity`, whatever the number of
 * names managed. A name evicted is read from storage again at its next
 * handshake. Keyed by the managed name (exact or `*.parent`).
 */
export class CertificateCache {
  readonly #capacity: number;
  /** Insertion order is recency: a hit moves the name to the end. */
  readonly #loaded = new Map<string, LoadedCertificate>();
  #hits = 0;
  #misses = 0;
  #evictions = 0;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`a certificate cache needs a capacity ≥ 1, not ${capacity}`);
    }
    this.#capacity = capacity;
  }

  /** The loaded certificate of `name` (counted as a hit, and made the most recent), or undefined (a miss). */
  get(name: string): LoadedCertificate | undefined {
    const loaded = this.#loaded.get(name);
    if (loaded === undefined) {
      this.#misses += 1;
      return undefined;
    }
    this.#hits += 1;
    this.#loaded.delete(name);
    this.#loaded.set(name, loaded);
    return loaded;
  }

  /** The loaded certificate of `name` without counting or reordering, or undefined. */
  peek(name: string): LoadedCertificate | undefined {
    return this.#loaded.get(name);
  }

  /** Keeps `loaded` for `name` as the most recent; the least recent goes when the cache is full. */
  set(name: string, loaded: LoadedCertificate): void {
    this.#loaded.delete(name);
    this.#loaded.set(name, loaded);
    while (this.#loaded.size > this.#capacity) {
      const oldest = this.#loaded.keys().next();
      if (oldest.done === true) break;
      this.#loaded.delete(oldest.value);
      this.#evictions += 1;
    }
  }

  delete(name: string): void {
    this.#loaded.delete(name);
  }

  stats(): CertificateCacheStats {
    return {
      hits: this.#hits,
      misses: this.#misses,
      evictions: this.#evictions,
      size: this.#loaded.size,
      capacity: this.#capacity,
    };
  }
}
