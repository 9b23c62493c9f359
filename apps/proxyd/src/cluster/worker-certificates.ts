import { createSecureContext, type SecureContext } from 'node:tls';
import type { CertificateStore } from '@proxyd/proxy-core';

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
  readonly #contexts = new Map<string, { context: SecureContext; cert: string }>();
  readonly #asking = new Map<string, Promise<SecureContext | null>>();
  readonly #onDemand: ((name: string) => Promise<CertificatePem | null>) | null;

  constructor(onDemand: ((name: string) => Promise<CertificatePem | null>) | null) {
    this.#onDemand = onDemand;
  }

  /** Installs what the primary sent; a certificate that does not load is skipped and reported. */
  apply(update: CertificateUpdate, report: (name: string, err: Error) => void = () => {}): void {
    for (const name of update.drop) this.#contexts.delete(name);
    for (const pem of update.set) this.#install(pem, report);
  }

  /** The names served (tests). */
  names(): string[] {
    return [...this.#contexts.keys()].sort();
  }

  contextFor(serverName: string): SecureContext | null | Promise<SecureContext | null> {
    const name = serverName.toLowerCase();
    const served = this.#served(name);
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
    return this.#served(host.toLowerCase()) !== null;
  }

  #served(name: string): SecureContext | null {
    const exact = this.#contexts.get(name);
    if (exact !== undefined) return exact.context;
    const dot = name.indexOf('.');
    return dot > 0 ? (this.#contexts.get(`*${name.slice(dot)}`)?.context ?? null) : null;
  }

  #install(pem: CertificatePem, report: (name: string, err: Error) => void): SecureContext | null {
    const known = this.#contexts.get(pem.name);
    if (known !== undefined && known.cert === pem.cert) return known.context;
    try {
      const context = createSecureContext({ cert: pem.cert, key: pem.key });
      this.#contexts.set(pem.name, { context, cert: pem.cert });
      return context;
    } catch (err) {
      report(pem.name, err as Error);
      return null;
    }
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
