import type { SecureContext } from 'node:tls';
import { type CertificateStore, MemoryCertificateStore } from './certificate-store.js';

/** One certificate as the control plane supplies it (`@proxyd/cluster`'s `PushedCertificate`). */
export interface PushedCertificate {
  name: string;
  cert: string;
  key: string;
}

/** Certificates installed or replaced, and names no longer served (`@proxyd/cluster`'s `PushedCertificates`). */
export interface PushedCertificates {
  set: PushedCertificate[];
  drop: string[];
}

/**
 * The certificates of a `pushed` data-plane node (a worker): the ones the
 * control plane's manager serves, pushed through the fleet ({@link apply}),
 * by exact name or `*.parent` wildcard. A name it does not have is asked of
 * the fleet's `certificateFor` when `onDemand` is set (the primary's manager
 * runs the `ask` check and the order; one ask per name at a time); the
 * answer is kept.
 */
export class PushedCertificateStore implements CertificateStore {
  /** The contexts by name (exact and `*.parent`), and the PEM each was built from (an unchanged one is not rebuilt). */
  readonly #store = new MemoryCertificateStore();
  readonly #certs = new Map<string, string>();
  readonly #asking = new Map<string, Promise<SecureContext | null>>();
  readonly #onDemand: ((name: string) => Promise<PushedCertificate | null>) | null;

  constructor(onDemand: ((name: string) => Promise<PushedCertificate | null>) | null) {
    this.#onDemand = onDemand;
  }

  /** Installs what the fleet pushed; a certificate that does not load is skipped and reported. */
  apply(update: PushedCertificates, report: (name: string, err: Error) => void = () => {}): void {
    for (const name of update.drop) {
      this.#store.delete(name);
      this.#certs.delete(name);
    }
    for (const pem of update.set) this.#install(pem, report);
  }

  /** The names served (tests). */
  names(): string[] {
    return this.#store.hosts().sort();
  }

  contextFor(serverName: string): SecureContext | null | Promise<SecureContext | null> {
    const name = serverName.toLowerCase();
    const served = this.#store.contextFor(name);
    if (served !== null || this.#onDemand === null) return served;
    const asking = this.#asking.get(name);
    if (asking !== undefined) return asking;
    const ask = this.#onDemand;
    const promise = (async () => {
      try {
        const pem = await ask(name);
        return pem === null ? null : this.#install(pem, () => {});
      } catch {
        return null;
      } finally {
        this.#asking.delete(name);
      }
    })();
    this.#asking.set(name, promise);
    return promise;
  }

  has(host: string): boolean {
    return this.#store.has(host);
  }

  #install(pem: PushedCertificate, report: (name: string, err: Error) => void): SecureContext | null {
    if (this.#certs.get(pem.name) !== pem.cert) {
      try {
        this.#store.set(pem.name, pem);
      } catch (err) {
        // The store's error says which name; the cause says what is wrong with it.
        report(pem.name, ((err as Error).cause as Error | undefined) ?? (err as Error));
        return null;
      }
      this.#certs.set(pem.name, pem.cert);
    }
    return this.#store.contextFor(pem.name);
  }
}
