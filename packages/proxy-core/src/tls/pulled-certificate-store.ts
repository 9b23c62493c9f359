import { createSecureContext, type SecureContext } from 'node:tls';
import type { CertificateStore } from './certificate-store.js';

/** One certificate as the control plane answers it (`@proxyd/cluster`'s `CertificatePem`): the name it serves, PEMs. */
export interface PulledCertificate {
  name: string;
  cert: string;
  key: string;
}

/**
 * What changed of the control plane's certificates (`@proxyd/cluster`'s
 * `CertificateUpdate`): names now served (installed or renewed: a copy held
 * is stale) and names no longer served.
 */
export interface PulledCertificateChanges {
  served: string[];
  unserved: string[];
}

/** Hits, misses and evictions of a worker's certificate cache since start, and its size now. */
export interface PulledCacheStats {
  hits: number;
  misses: number;
  evictions: number;
  size: number;
  capacity: number;
}

/** Options of {@link PulledCertificateStore}. */
export interface PulledCertificateStoreOptions {
  /** Asks the control plane for a name's certificate (`FleetPort.certificateFor`); null: not served. */
  fetch: (name: string) => Promise<PulledCertificate | null>;
  /** The names served when the node starts (exact and `*.parent`). */
  served: readonly string[];
  /** TLS contexts kept, least recently used out first (default {@link DEFAULT_WORKER_CERTIFICATE_CACHE_CAPACITY}). */
  capacity?: number;
  /**
   * Whether a name no certificate serves is asked too (on-demand TLS; the
   * control plane then also moves a managed name waiting for its first
   * certificate to the front). A name answered null is not asked again for
   * {@link NOT_SERVED_TTL_MS}.
   */
  askUnserved?: boolean;
  /** The clock, epoch ms (default `Date.now`). */
  now?: () => number;
  /** A certificate that does not load (reported, not served). */
  report?: (name: string, err: Error) => void;
}

/** A worker's certificate cache by default: TLS contexts of the names with recent handshakes. */
export const DEFAULT_WORKER_CERTIFICATE_CACHE_CAPACITY = 10_000;
/** A name the control plane answered null for is not asked again for this long, ms. */
export const NOT_SERVED_TTL_MS = 10_000;
/** At most this many names remembered as not served (then the memory starts over). */
const NOT_SERVED_MAX = 10_000;

/**
 * The certificates of a data-plane worker (Caddy's bounded cache, fed by
 * the control plane): it starts with no certificate, only the names served
 * (the compact index `has(host)` answers from, so the HTTP→HTTPS redirect
 * does not depend on what is cached), and at a handshake for a name it has
 * no context for asks the control plane's `certificateFor` — one request
 * per name at a time, concurrent handshakes share it. At most `capacity`
 * contexts are kept, least recently used out first. A name renewed or no
 * longer served ({@link apply}) is dropped, and its next handshake asks
 * again. Contexts are kept by the certificate's name (exact or `*.parent`).
 */
export class PulledCertificateStore implements CertificateStore {
  readonly #fetch: (name: string) => Promise<PulledCertificate | null>;
  readonly #capacity: number;
  readonly #askUnserved: boolean;
  readonly #now: () => number;
  readonly #report: (name: string, err: Error) => void;
  readonly #served = new Set<string>();
  #wildcards = 0;
  /** Certificate name → context; insertion order is recency. */
  readonly #contexts = new Map<string, SecureContext>();
  readonly #asking = new Map<string, Promise<SecureContext | null>>();
  /** Name → until when a null answer stands. */
  readonly #notServed = new Map<string, number>();
  /** Names changed by {@link apply} while their request was out: that answer may be the old certificate. */
  readonly #stale = new Set<string>();
  #hits = 0;
  #misses = 0;
  #evictions = 0;

  constructor(options: PulledCertificateStoreOptions) {
    this.#fetch = options.fetch;
    this.#capacity = options.capacity ?? DEFAULT_WORKER_CERTIFICATE_CACHE_CAPACITY;
    if (!Number.isInteger(this.#capacity) || this.#capacity < 1) {
      throw new RangeError(`a certificate cache needs a capacity ≥ 1, not ${this.#capacity}`);
    }
    this.#askUnserved = options.askUnserved ?? false;
    this.#now = options.now ?? Date.now;
    this.#report = options.report ?? (() => {});
    this.apply({ served: [...options.served], unserved: [] });
  }

  /** Takes what changed: a name served now or renewed drops its context held (the next handshake asks), one unserved goes. */
  apply(changes: PulledCertificateChanges): void {
    for (const name of [...changes.served, ...changes.unserved]) if (this.#asking.has(name)) this.#stale.add(name);
    for (const name of changes.unserved) {
      if (this.#served.delete(name) && name.startsWith('*.')) this.#wildcards -= 1;
      this.#contexts.delete(name);
    }
    for (const name of changes.served) {
      if (!this.#served.has(name)) {
        this.#served.add(name);
        if (name.startsWith('*.')) this.#wildcards += 1;
      }
      this.#contexts.delete(name);
      this.#notServed.delete(name);
    }
  }

  /** The certificate name serving lowercase `name` per the index (exact, else `*.parent`), or null. */
  #servedAs(name: string): string | null {
    if (this.#served.has(name)) return name;
    if (this.#wildcards === 0) return null;
    const dot = name.indexOf('.');
    const wildcard = dot > 0 ? `*${name.slice(dot)}` : null;
    return wildcard !== null && this.#served.has(wildcard) ? wildcard : null;
  }

  has(host: string): boolean {
    return this.#servedAs(host.toLowerCase()) !== null;
  }

  contextFor(serverName: string): SecureContext | null | Promise<SecureContext | null> {
    const name = serverName.toLowerCase();
    const servedAs = this.#servedAs(name);
    if (servedAs !== null) {
      const context = this.#contexts.get(servedAs);
      if (context !== undefined) {
        this.#hits += 1;
        this.#contexts.delete(servedAs);
        this.#contexts.set(servedAs, context);
        return context;
      }
    } else {
      if (!this.#askUnserved) return null;
      const until = this.#notServed.get(name);
      if (until !== undefined && until > this.#now()) return null;
    }
    const key = servedAs ?? name;
    const asking = this.#asking.get(key);
    if (asking !== undefined) return asking;
    this.#misses += 1;
    const promise = (async () => {
      try {
        const pem = await this.#fetch(name);
        if (pem === null) {
          this.#rememberNotServed(name);
          return null;
        }
        const context = createSecureContext({ cert: pem.cert, key: pem.key });
        // An answer from before a change may be the old certificate: served once, not kept.
        if (!this.#stale.delete(key)) this.#keep(pem.name, context);
        return context;
      } catch (err) {
        this.#report(name, err as Error);
        return null;
      } finally {
        this.#asking.delete(key);
        this.#stale.delete(key);
      }
    })();
    this.#asking.set(key, promise);
    return promise;
  }

  /** Hits, misses and evictions since start, and the contexts held now. */
  stats(): PulledCacheStats {
    return {
      hits: this.#hits,
      misses: this.#misses,
      evictions: this.#evictions,
      size: this.#contexts.size,
      capacity: this.#capacity,
    };
  }

  /** The certificate names whose contexts are held now, least recently used first (tests). */
  cached(): string[] {
    return [...this.#contexts.keys()];
  }

  #keep(name: string, context: SecureContext): void {
    if (!this.#served.has(name)) {
      // On demand: served from now on (the control plane announces it too).
      this.#served.add(name);
      if (name.startsWith('*.')) this.#wildcards += 1;
    }
    this.#contexts.delete(name);
    this.#contexts.set(name, context);
    while (this.#contexts.size > this.#capacity) {
      const oldest = this.#contexts.keys().next();
      if (oldest.done === true) break;
      this.#contexts.delete(oldest.value);
      this.#evictions += 1;
    }
  }

  #rememberNotServed(name: string): void {
    if (this.#notServed.size >= NOT_SERVED_MAX) this.#notServed.clear();
    this.#notServed.set(name, this.#now() + NOT_SERVED_TTL_MS);
  }
}
