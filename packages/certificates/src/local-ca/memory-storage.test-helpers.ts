import type { CertificateStorage, StorageLock, StoreOptions } from '../storage/storage.js';

/**
 * A `CertificateStorage` in memory, for the local CA's tests: the file
 * storage is written in parallel in ../storage and the local CA only needs
 * the interface. Records which keys were stored as secrets and how many
 * writes happened; `lock` is a real in-process mutex per name.
 */
export class MemoryStorage implements CertificateStorage {
  readonly values = new Map<string, Buffer>();
  readonly secrets = new Set<string>();
  writes = 0;
  private readonly locks = new Map<string, Promise<void>>();

  async load(key: string): Promise<Buffer | null> {
    return this.values.get(key) ?? null;
  }

  async store(key: string, value: Buffer | string, options?: StoreOptions): Promise<void> {
    this.writes += 1;
    this.values.set(key, Buffer.from(value));
    if (options?.secret === true) this.secrets.add(key);
    else this.secrets.delete(key);
  }

  async delete(key: string): Promise<void> {
    this.values.delete(key);
    this.secrets.delete(key);
  }

  async list(prefix: string): Promise<string[]> {
    return [...this.values.keys()].filter((key) => key.startsWith(`${prefix}/`)).sort();
  }

  async lock(name: string): Promise<StorageLock> {
    for (let held = this.locks.get(name); held !== undefined; held = this.locks.get(name)) await held;
    let release = (): void => {};
    this.locks.set(
      name,
      new Promise<void>((resolve) => {
        release = resolve;
      }),
    );
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        this.locks.delete(name);
        release();
      },
    };
  }
}
