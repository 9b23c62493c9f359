import type { SecureContext } from 'node:tls';
import { type CertificateStore, MemoryCertificateStore } from '@proxyd/proxy-core';

/** One certificate as the primary sends it to workers. */
export interface CertificatePem {
  name: string;
  cert: string;
  key: string;
}

/** What changed since the last update: certificates installed or replaced, names no longer served. */
export interface CertificateUpdate {
  set: CertificatePem[];
  drop: string[];
}

/**
 * A worker's certificates: the ones the primary's manager serves, sent over
 * IPC ({@link apply}), by exact name or `*.parent` wildcard. A name it does
 * not have is asked of the primary when `onDemand` is set (the primary's
 * manager runs the `ask` check and the order; one ask per name at a time);
 * the answer is kept.
 */
export class WorkerCertificateStore implements CertificateStore {
  /** The contexts by name (exact and `*.parent`), and the PEM each was built from (an unchanged one is not rebuilt). */
  readonly #store = new MemoryCertificateStore();
  readonly #certs = new Map<string, string>();
  readonly #asking = new Map<string, Promise<SecureContext | null>>();
  readonly #onDemand: ((name: string) => Promise<CertificatePem | null>) | null;

  constructor(onDemand: ((name: string) => Promise<CertificatePem | null>) | null) {
    this.#onDemand = onDemand;
  }

  /** Installs what the primary sent; a certificate that does not load is skipped and reported. */
  apply(update: CertificateUpdate, report: (name: string, err: Error) => void = () => {}): void {
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

  #install(pem: CertificatePem, report: (name: string, err: Error) => void): SecureContext | null {
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

/**
 * The primary's side: what workers were sent, and the update that brings
 * them to `served` (the manager's certificates now).
 */
export class CertificateSync {
  readonly #sent = new Map<string, string>();

  /**
   * Everything for a worker that starts now. Not recorded: workers already
   * running may be behind, and the next {@link diff} brings them up (a
   * certificate the new worker already has is sent again and kept as it is).
   */
  all(served: readonly CertificatePem[]): CertificateUpdate {
    return { set: served.map(({ name, cert, key }) => ({ name, cert, key })), drop: [] };
  }

  /** One certificate installed or replaced ({@link diff} for that name alone); null when workers have it. */
  one(pem: CertificatePem): CertificateUpdate | null {
    if (this.#sent.get(pem.name) === pem.cert) return null;
    this.#sent.set(pem.name, pem.cert);
    return { set: [{ name: pem.name, cert: pem.cert, key: pem.key }], drop: [] };
  }

  /** The changes since the last call; null when there are none. */
  diff(served: readonly CertificatePem[]): CertificateUpdate | null {
    const set: CertificatePem[] = [];
    const names = new Set<string>();
    for (const { name, cert, key } of served) {
      names.add(name);
      if (this.#sent.get(name) !== cert) set.push({ name, cert, key });
    }
    const drop = [...this.#sent.keys()].filter((name) => !names.has(name));
    this.#record(served);
    return set.length === 0 && drop.length === 0 ? null : { set, drop };
  }

  #record(served: readonly CertificatePem[]): void {
    this.#sent.clear();
    for (const { name, cert } of served) this.#sent.set(name, cert);
  }
}
