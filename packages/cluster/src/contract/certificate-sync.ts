import type { CertificatePem, CertificateUpdate } from './node.js';

/**
 * The fleet's side of pushed certificates: what `pushed` nodes were sent,
 * and the update that brings them to `served` (the manager's certificates
 * now).
 */
export class CertificateSync {
  readonly #sent = new Map<string, string>();

  /**
   * Everything for a node that starts now. Not recorded: nodes already
   * running may be behind, and the next {@link diff} brings them up (a
   * certificate the new node already has is sent again and kept as it is).
   */
  all(served: readonly CertificatePem[]): CertificateUpdate {
    return { set: served.map(({ name, cert, key }) => ({ name, cert, key })), drop: [] };
  }

  /** One certificate installed or replaced ({@link diff} for that name alone); null when nodes have it. */
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
