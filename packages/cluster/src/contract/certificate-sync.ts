import type { CertificateUpdate } from './node.js';

/**
 * The fleet's side of certificates for nodes that pull them: the names
 * served or no longer served since the last update, gathered into one
 * {@link CertificateUpdate} (a burst of installs — 10,000 names loaded at
 * start — is one message per node, not one per name). Names only: a node
 * asks for a certificate at its first handshake.
 */
export class CertificateSync {
  #served = new Set<string>();
  #unserved = new Set<string>();

  /** `name` got a certificate, or a new one (a node's copy is stale). */
  served(name: string): void {
    this.#unserved.delete(name);
    this.#served.add(name);
  }

  /** `name` is no longer served. */
  unserved(name: string): void {
    this.#served.delete(name);
    this.#unserved.add(name);
  }

  /** An update a node did not take, to send again: a name changed since (pending now) keeps its newer change. */
  requeue(update: CertificateUpdate): void {
    for (const name of update.served) if (!this.#unserved.has(name)) this.#served.add(name);
    for (const name of update.unserved) if (!this.#served.has(name)) this.#unserved.add(name);
  }

  /** What changed since the last call, or null when nothing did. */
  take(): CertificateUpdate | null {
    if (this.#served.size === 0 && this.#unserved.size === 0) return null;
    const update = { served: [...this.#served], unserved: [...this.#unserved] };
    this.#served = new Set();
    this.#unserved = new Set();
    return update;
  }

  /** What a node that starts now is given: every name served, no certificate. */
  static join(names: readonly string[]): CertificateUpdate {
    return { served: [...names], unserved: [] };
  }
}
