import type { SecureContext } from 'node:tls';
import { CertificatesErrorCode } from '../errors.js';
import { byName, type CertificateLogger, createEntry, type Entry, messageOf } from './entry.js';
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
import type { LoadedCertificate } from './stored-certificate.js';

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
 * The certificates served now (certmagic's `handshake.go` lookups): one
 * TLS context per name, found by SNI as the exact name or its `*.parent`
 * wildcard; installing one replaces the served context in place and tells
 * the `onChange` listeners.
 */
export class ServedCertificates {
  readonly #entries: ReadonlyMap<string, Entry>;
  readonly #log: CertificateLogger;
  readonly #contexts = new Map<string, SecureContext>();
  readonly #listeners = new Set<(change: CertificateChange) => void>();

  constructor(entries: ReadonlyMap<string, Entry>, log: CertificateLogger) {
    this.#entries = entries;
    this.#log = log;
  }

  /** The context served for lowercase `name`: its own, else its `*.parent` wildcard's, else null. */
  lookup(name: string): SecureContext | null {
    const exact = this.#contexts.get(name);
    if (exact !== undefined) return exact;
    const dot = name.indexOf('.');
    return dot > 0 ? (this.#contexts.get(`*${name.slice(dot)}`) ?? null) : null;
  }

  /** Serves `certificate` for the name (replacing the one served) and tells the listeners. */
  install(entry: Entry, certificate: LoadedCertificate): void {
    const replaced = entry.current !== null;
    entry.current = certificate;
    entry.ari = null;
    this.#contexts.set(entry.name, certificate.context);
    const change = { name: entry.name, issuer: certificate.issuer, notAfter: certificate.notAfter, replaced };
    for (const listener of this.#listeners) {
      try {
        listener(change);
      } catch (err) {
        this.#log.error({ name: entry.name, error: messageOf(err) }, 'certificate change listener threw');
      }
    }
  }

  /** Stops serving `name`. */
  remove(name: string): void {
    this.#contexts.delete(name);
  }

  /** Calls `listener` whenever a certificate is installed or replaced; returns the unsubscribe function. */
  onChange(listener: (change: CertificateChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The certificates served now, one per name, as PEM, sorted by name. */
  list(): ServedCertificate[] {
    const out: ServedCertificate[] = [];
    for (const entry of this.#entries.values()) {
      const pem = this.#pem(entry);
      if (pem !== null) out.push(pem);
    }
    return out.sort(byName);
  }

  /** The certificate served for lowercase `name` (its exact name, else the `*.parent` wildcard) as PEM, or null. */
  pemFor(name: string): ServedCertificate | null {
    const exact = this.#entries.get(name);
    const pem = exact === undefined ? null : this.#pem(exact);
    if (pem !== null) return pem;
    const dot = name.indexOf('.');
    const wildcard = dot > 0 ? this.#entries.get(`*${name.slice(dot)}`) : undefined;
    return wildcard === undefined ? null : this.#pem(wildcard);
  }

  #pem(entry: Entry): ServedCertificate | null {
    const current = entry.current;
    if (current === null || this.#contexts.get(entry.name) !== current.context) return null;
    return { name: entry.name, cert: current.certPem, key: current.keyPem, notAfter: current.notAfter };
  }
}

/** What on-demand handshakes need of maintenance: load a new name's stored certificate, then check it (start an attempt). */
export interface NameMaintenance {
  load(entry: Entry): Promise<void>;
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
      await this.#maintenance.load(entry);
      this.#maintenance.check(entry);
    }
    await entry.attempt;
    return this.#served.lookup(name);
  }
}
