/**
 * Where certificates, keys, ACME accounts and their metadata live: the
 * interface the file storage implements (and a Redis storage will, for
 * several nodes sharing certificates). Keys are `/`-separated relative
 * paths such as `certificates/<issuer>/<name>/<name>.crt`; a storage maps
 * them to its own layout.
 *
 * Obtaining and renewing a certificate take {@link CertificateStorage.lock}
 * on the name and re-read storage inside it, so two proxyd processes sharing
 * one storage place one order.
 */
export interface CertificateStorage {
  /** The value stored under `key`, or null when there is none. */
  load(key: string): Promise<Buffer | null>;
  /** Stores `value` under `key`, atomically (a reader sees the old or the new value, never a part). */
  store(key: string, value: Buffer | string, options?: StoreOptions): Promise<void>;
  /** Removes `key`; removing a missing key is not an error. */
  delete(key: string): Promise<void>;
  /** Every key under `prefix` (a `/`-separated path), recursively, sorted. */
  list(prefix: string): Promise<string[]>;
  /**
   * Takes the lock `name`, waiting while another holder (in this process or
   * another sharing the storage) has it. A holder that died leaves a stale
   * lock that expires. Rejects after `timeoutMs` (default 60 s).
   */
  lock(name: string, options?: LockOptions): Promise<StorageLock>;
}

/** Options of {@link CertificateStorage.store}. */
export interface StoreOptions {
  /** The value is secret (a private key, an account key): readable by the owner only. */
  secret?: boolean;
  /**
   * false: the value is durable when the promise resolves, but its name in
   * the directory only once a later store in the same directory without
   * this option resolves (a file storage fsyncs the directory then, once for
   * all of them). For the files of one certificate, stored together; a
   * crash in between loses the new names, never a part of a value. Default
   * true. A storage without directories ignores it.
   */
  syncDirectory?: boolean;
}

/** Options of {@link CertificateStorage.lock}. */
export interface LockOptions {
  /** How long to wait for the lock, ms (default 60,000). */
  timeoutMs?: number;
}

/** A held lock. */
export interface StorageLock {
  /** Releases the lock; releasing twice is not an error. */
  release(): Promise<void>;
}
