import type { SecureContext } from 'node:tls';
import { CertificatesErrorCode } from '../errors.js';
import type { CertificateCache, CertificateCacheStats } from './certificate-cache.js';
import { type CertificateLogger, createEntry, type Entry, messageOf, safeAriCertId } from './entry.js';
import type { Jobs } from './jobs.js';
import {
  askEndpoint,
  isOnDemandCandidate,
  ON_DEMAND_ASK_TIMEOUT_MS,
  ON_DEMAND_REFUSAL_TTL_MS,
  type OnDemandIssuer,
  type OnDemandOptions,
  RefusalMemory,
} from './on-demand.js';
import type { CertificateInfo, LoadedCertificate } from './stored-certificate.js';

/** What `CertificateManager.onChange` listeners get: a certificate was installed or replaced. */
export interface CertificateChange {
  name: string;
  /** Who issued it (the CA's directory URL, or `local`). */
  issuer: string;
  /** Its notAfter, epoch ms. */
  notAfter: number;
  /** It replaced a certificate already served for this name. */
  replaced: boolean;
}

/** A certificate the manager serves, as `CertificateManager.served` lists it. */
export interface ServedCertificate {
  name: string;
  /** The chain, PEM, leaf first. */
  cert: string;
  /** The leaf's key, PEM. */
  key: string;
  /** notAfter, epoch ms. */
  notAfter: number;
}

/**
 * The certificates served now (certmagic's `handshake.go` lookups and its
 * bounded cache): a name is served when its entry has a certificate (the
 * compact index, `entry.current`); its PEMs and TLS context are in a
 * bounded LRU ({@link CertificateCache}) and read from storage again on a
 * miss, one read per name at a time. Found by SNI as the exact name or its
 * `*.parent` wildcard; installing one replaces the served context in place
 * and tells the `onChange` listeners.
 */
export class ServedCertificates {
  readonly #entries: ReadonlyMap<string, Entry>;
  readonly #log: CertificateLogger;
  readonly #cache: CertificateCache;
  readonly #read: (entry: Entry) => Promise<LoadedCertificate | null>;
  readonly #reading = new Map<string, Promise<LoadedCertificate | null>>();
  readonly #listeners = new Set<(change: CertificateChange) => void>();
  readonly #removeListeners = new Set<(name: string) => void>();

  /** `read`: the entry's certificate from storage (an evicted one, at a handshake). */
  constructor(
    entries: ReadonlyMap<string, Entry>,
    log: CertificateLogger,
    cache: CertificateCache,
    read: (entry: Entry) => Promise<LoadedCertificate | null>,
  ) {
    this.#entries = entries;
    this.#log = log;
    this.#cache = cache;
    this.#read = read;
  }

  /** The entry whose certificate serves lowercase `name`: its own, else its `*.parent` wildcard's, else undefined. */
  servingEntry(name: string): Entry | undefined {
    const exact = this.#entries.get(name);
    if (exact?.current != null) return exact;
    const dot = name.indexOf('.');
    const wildcard = dot > 0 ? this.#entries.get(`*${name.slice(dot)}`) : undefined;
    return wildcard?.current != null ? wildcard : undefined;
  }

  /** Whether a certificate serves lowercase `name` (from the index: cached or not). */
  has(name: string): boolean {
    return this.servingEntry(name) !== undefined;
  }

  /** The context for lowercase `name`: at once when cached, a promise when it is read from storage, null when none serves it. */
  lookup(name: string): SecureContext | null | Promise<SecureContext | null> {
    const entry = this.servingEntry(name);
    if (entry === undefined) return null;
    const cached = this.#cache.get(entry.name);
    if (cached !== undefined) return cached.context;
    return this.loaded(entry).then((loaded) => loaded?.context ?? null);
  }

  /** The loaded certificate of a served entry: from the cache, else read from storage (shared by concurrent callers). */
  async loaded(entry: Entry): Promise<LoadedCertificate | null> {
    const cached = this.#cache.peek(entry.name);
    if (cached !== undefined) return cached;
    const reading = this.#reading.get(entry.name);
    if (reading !== undefined) return await reading;
    const current = entry.current;
    const promise = (async () => {
      try {
        const loaded = await this.#read(entry);
        if (loaded === null || entry.removed) return null;
        // A renewal came meanwhile: its certificate is the one to serve.
        if (entry.current !== current) return this.#cache.peek(entry.name) ?? loaded;
        // Another process sharing the storage renewed it: served from now on, as an attempt would.
        if (current !== null && loaded.notAfter > current.notAfter) this.install(entry, loaded);
        else this.#cache.set(entry.name, loaded);
        return loaded;
      } finally {
        this.#reading.delete(entry.name);
      }
    })();
    this.#reading.set(entry.name, promise);
    return await promise;
  }

  /** Serves `certificate` for the name (replacing the one served) and tells the listeners. */
  install(entry: Entry, certificate: LoadedCertificate): void {
    const replaced = entry.current !== null;
    entry.current = infoOf(certificate);
    entry.ari = null;
    this.#cache.set(entry.name, certificate);
    const change = { name: entry.name, issuer: certificate.issuer, notAfter: certificate.notAfter, replaced };
    for (const listener of this.#listeners) {
      try {
        listener(change);
      } catch (err) {
        this.#log.error({ name: entry.name, error: messageOf(err) }, 'certificate change listener threw');
      }
    }
  }

  /** Stops serving the entry's name; the removal listeners hear of it when a certificate was served. */
  remove(entry: Entry): void {
    this.#cache.delete(entry.name);
    if (entry.current === null) return;
    for (const listener of this.#removeListeners) {
      try {
        listener(entry.name);
      } catch (err) {
        this.#log.error({ name: entry.name, error: messageOf(err) }, 'certificate removal listener threw');
      }
    }
  }

  /** Calls `listener` with a name no longer served (no longer managed); returns the unsubscribe function. */
  onRemove(listener: (name: string) => void): () => void {
    this.#removeListeners.add(listener);
    return () => this.#removeListeners.delete(listener);
  }

  /** Calls `listener` whenever a certificate is installed or replaced; returns the unsubscribe function. */
  onChange(listener: (change: CertificateChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The names served now (exact and `*.parent`), sorted: the index, no certificate read. */
  names(): string[] {
    const out: string[] = [];
    for (const entry of this.#entries.values()) if (entry.current !== null) out.push(entry.name);
    return out.sort();
  }

  /** The certificate served for lowercase `name` (its exact name, else the `*.parent` wildcard) as PEM, or null. */
  async pemFor(name: string): Promise<ServedCertificate | null> {
    const entry = this.servingEntry(name);
    if (entry === undefined) return null;
    const loaded = await this.loaded(entry);
    if (loaded === null) return null;
    return { name: entry.name, cert: loaded.certPem, key: loaded.keyPem, notAfter: loaded.notAfter };
  }

  /** Hits, misses and evictions of the cache. */
  cacheStats(): CertificateCacheStats {
    return this.#cache.stats();
  }
}

/** The index's record of a loaded certificate. */
export function infoOf(certificate: LoadedCertificate): CertificateInfo {
  return {
    issuerId: certificate.issuerId,
    issuer: certificate.issuer,
    notBefore: certificate.notBefore,
    notAfter: certificate.notAfter,
    certId: safeAriCertId(certificate.certPem),
  };
}

/** What on-demand handshakes need of maintenance: load a new name's stored certificate, then check it (start an attempt). */
export interface NameMaintenance {
  load(entry: Entry, urgent?: boolean): Promise<void>;
  check(entry: Entry): void;
}

/** Options of {@link OnDemandHandshakes}. */
export interface OnDemandHandshakesOptions {
  options: OnDemandOptions;
  /** The managed names; a name obtained on demand is added here. */
  entries: Map<string, Entry>;
  served: ServedCertificates;
  maintenance: NameMaintenance;
  jobs: Jobs;
  now: () => number;
  log: CertificateLogger;
}

/**
 * On-demand TLS at the handshake (certmagic's on-demand path in
 * `handshake.go`): a name no certificate covers and no one manages, that a
 * route allows and the ask endpoint agrees to, is obtained in the
 * foreground. Concurrent handshakes share one ask and one order; refusals
 * are remembered.
 */
export class OnDemandHandshakes {
  readonly #options: OnDemandOptions;
  readonly #entries: Map<string, Entry>;
  readonly #served: ServedCertificates;
  readonly #maintenance: NameMaintenance;
  readonly #jobs: Jobs;
  readonly #now: () => number;
  readonly #log: CertificateLogger;
  readonly #refusals: RefusalMemory;
  readonly #pending = new Map<string, Promise<SecureContext | null>>();

  constructor(options: OnDemandHandshakesOptions) {
    this.#options = options.options;
    this.#entries = options.entries;
    this.#served = options.served;
    this.#maintenance = options.maintenance;
    this.#jobs = options.jobs;
    this.#now = options.now;
    this.#log = options.log;
    this.#refusals = new RefusalMemory(options.options.refusalTtlMs ?? ON_DEMAND_REFUSAL_TTL_MS);
  }

  /** For lowercase `name` that nothing serves: the promise of its context, or null when it is not asked for. */
  contextFor(name: string): SecureContext | null | Promise<SecureContext | null> {
    const pending = this.#pending.get(name);
    if (pending !== undefined) return pending;
    if (this.#entries.has(name) || !isOnDemandCandidate(name)) return null;
    let issuer: OnDemandIssuer | null;
    try {
      issuer = this.#options.allowed(name);
    } catch (err) {
      this.#log.error({ name, error: messageOf(err) }, `on-demand check for ${name} threw: ${messageOf(err)}`);
      return null;
    }
    if (issuer === null || this.#refusals.refused(name, this.#now())) return null;
    const promise = (async () => {
      try {
        return await this.#obtain(name, issuer);
      } finally {
        this.#pending.delete(name);
      }
    })();
    this.#pending.set(name, promise);
    this.#jobs.track(promise);
    return promise;
  }

  /** Ask, then manage the name and obtain it in the foreground. */
  async #obtain(name: string, issuer: OnDemandIssuer): Promise<SecureContext | null> {
    const options = this.#options;
    const answer = await askEndpoint(options.ask, name, options.fetchTimeoutMs ?? ON_DEMAND_ASK_TIMEOUT_MS);
    if (this.#jobs.closed) return null;
    if (!answer.allowed) {
      if (this.#refusals.remember(name, this.#now())) {
        this.#log.warn(
          { name, code: CertificatesErrorCode.ON_DEMAND_REFUSED, reason: answer.reason },
          `on-demand certificate for ${name} refused: ${answer.reason}`,
        );
      }
      return null;
    }
    let entry = this.#entries.get(name);
    if (entry === undefined) {
      entry = createEntry(name, issuer, true);
      this.#entries.set(name, entry);
    }
    if (entry.current === null && entry.attempt === null) {
      await this.#maintenance.load(entry, true);
      this.#maintenance.check(entry);
    }
    await entry.attempt;
    return await this.#served.lookup(name);
  }
}
