import type { CertificateStorage, StorageLock } from '../storage/storage.js';

/**
 * An in-memory `CertificateStorage` for the ACME tests (the file storage is
 * built in parallel in ../storage). Records which keys were stored as secrets.
 */
export class MemoryStorage implements CertificateStorage {
  readonly values = new Map<string, Buffer>();
  readonly secrets = new Set<string>();
  readonly #locks = new Map<string, Promise<void>>();

  async load(key: string): Promise<Buffer | null> {
    return this.values.get(key) ?? null;
  }

  async store(key: string, value: Buffer | string, options?: { secret?: boolean }): Promise<void> {
    this.values.set(key, Buffer.from(value));
    if (options?.secret === true) this.secrets.add(key);
  }

  async delete(key: string): Promise<void> {
    this.values.delete(key);
  }

  async list(prefix: string): Promise<string[]> {
    return [...this.values.keys()].filter((key) => key.startsWith(`${prefix}/`)).sort();
  }

  async lock(name: string): Promise<StorageLock> {
    for (;;) {
      const held = this.#locks.get(name);
      if (held === undefined) break;
      await held;
    }
    let release = () => {};
    this.#locks.set(
      name,
      new Promise((resolve) => {
        release = resolve;
      }),
    );
    return {
      release: async () => {
        this.#locks.delete(name);
        release();
      },
    };
  }
}
