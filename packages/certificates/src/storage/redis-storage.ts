import type { Redis } from 'ioredis';
import { keySegments, prefixSegments } from './key-path.js';
import { ioError, RedisLocks } from './redis-lock.js';
import { open, seal } from './sealed-value.js';
import type { CertificateStorage, LockOptions, StorageLock, StoreOptions } from './storage.js';

/** The key prefix when the Proxyfile names none. */
export const DEFAULT_KEY_PREFIX = 'proxyd';

/** Options of {@link RedisStorage}. */
export interface RedisStorageOptions {
  /** Every Redis key starts with `<keyPrefix>:` (default {@link DEFAULT_KEY_PREFIX}), so several fleets share one Redis. */
  keyPrefix?: string;
  /** AES-256-GCM key (32 bytes): every value is stored sealed (default null: values stored as they are). */
  encryptionKey?: Buffer | null;
  /** The clock, ms since the epoch (default `Date.now`): lock wait deadlines. */
  now?: () => number;
  /** A lock's expiry, ms (default 30,000): how long a dead holder's lock lasts. */
  lockTtlMs?: number;
  /** How often a held lock is extended, ms (default 5,000). */
  lockRefreshMs?: number;
  /** How often a waiter tries again, ms, plus up to 50 % jitter (default 1,000). */
  lockPollMs?: number;
}

/** Whether the storage answers: what `GET /health` and the metrics show. */
export interface StorageState {
  /** `redis` (the file storage has no state to show). */
  backend: 'redis';
  /** True while the connection to the primary is ready. */
  reachable: boolean;
  /** The last connection error while unreachable (null when reachable or none seen). */
  error: string | null;
}

/**
 * {@link CertificateStorage} in Redis, shared by every node of a fleet.
 *
 * - A value is the string key `<prefix>:value:<key>` (`key` validated like a
 *   file storage key). `store` is one `MULTI` (`SET` and `ZADD` to the
 *   index), so a reader sees the old or the new value and the index never
 *   lists a key without a value; `delete` is one `MULTI` of `DEL` and `ZREM`.
 * - `list(prefix)` reads the index, one sorted set `<prefix>:keys` whose
 *   members all score 0: `ZRANGEBYLEX` gives the keys under a prefix in
 *   byte order in O(log N + M), without `SCAN`ning the whole keyspace (a
 *   shared Redis may hold millions of other keys) and without one set per
 *   folder to keep consistent.
 * - With an encryption key every value is sealed (AES-256-GCM, random
 *   nonce, the storage key as associated data; `sealed-value.ts`), secret or
 *   not: one rule, so reading needs no list of which keys are secret. A value
 *   written before encryption was turned on still reads; a sealed value that
 *   does not authenticate is `CERT_STORAGE_DECRYPT_FAILED`.
 * - Locks: `RedisLocks` (`SET NX PX`, refreshed, compare-and-delete).
 * - A failed command (Redis unreachable, a failover in progress) rejects
 *   with `CERT_STORAGE_IO` naming the command and Redis's error: the client
 *   gives up after two reconnection attempts instead of queueing forever.
 */
export class RedisStorage implements CertificateStorage {
  readonly #client: Redis;
  readonly #prefix: string;
  readonly #key: Buffer | null;
  readonly #locks: RedisLocks;
  #error: string | null = null;

  /** @param client an ioredis client (plain, TLS or Sentinel); the storage owns it and {@link close} quits it */
  constructor(client: Redis, options: RedisStorageOptions = {}) {
    this.#client = client;
    this.#prefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
    this.#key = options.encryptionKey ?? null;
    this.#locks = new RedisLocks(client, this.#prefix, {
      now: options.now ?? Date.now,
      ttlMs: options.lockTtlMs ?? 30_000,
      refreshMs: options.lockRefreshMs ?? 5_000,
      pollMs: options.lockPollMs ?? 1_000,
    });
    client.on('error', (err: Error) => {
      this.#error = err.message;
    });
    client.on('ready', () => {
      this.#error = null;
    });
  }

  /**
   * The client, the key prefix and the encryption key (null: none), for
   * what else a fleet shares in the same Redis (`redis-fleet.ts`).
   */
  connection(): { client: Redis; keyPrefix: string; encryptionKey: Buffer | null } {
    return { client: this.#client, keyPrefix: this.#prefix, encryptionKey: this.#key };
  }

  /** Whether Redis answers now (the connection is ready), and the last error when not. */
  state(): StorageState {
    const reachable = this.#client.status === 'ready';
    return { backend: 'redis', reachable, error: reachable ? null : this.#error };
  }

  /** Calls `listener` with the new state each time the connection becomes ready or is lost; returns the unsubscribe. */
  onStateChange(listener: (state: StorageState) => void): () => void {
    let last: boolean | null = null;
    const check = () => {
      const state = this.state();
      if (state.reachable === last) return;
      last = state.reachable;
      listener(state);
    };
    const events = ['ready', 'close', 'end', 'error'] as const;
    for (const event of events) this.#client.on(event, check);
    return () => {
      for (const event of events) this.#client.off(event, check);
    };
  }

  async load(key: string): Promise<Buffer | null> {
    keySegments(key);
    let stored: Buffer | null;
    try {
      stored = await this.#client.getBuffer(this.#valueKey(key));
    } catch (err) {
      throw ioError(`read ${key}`, err);
    }
    return stored === null ? null : open(this.#key, key, stored);
  }

  async store(key: string, value: Buffer | string, _options?: StoreOptions): Promise<void> {
    keySegments(key);
    const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
    const stored = this.#key === null ? bytes : seal(this.#key, key, bytes);
    await this.#exec(
      `write ${key}`,
      this.#client.multi().set(this.#valueKey(key), stored).zadd(this.#indexKey(), 0, key),
    );
  }

  async delete(key: string): Promise<void> {
    keySegments(key);
    await this.#exec(`delete ${key}`, this.#client.multi().del(this.#valueKey(key)).zrem(this.#indexKey(), key));
  }

  /**
   * Every key under `prefix` (`''`: all; a trailing `/` allowed), sorted
   * by bytes (the same order as UTF-16 code units for the ASCII keys the
   * manager writes); a prefix naming a key lists that key alone (and what
   * lies under it, as a folder of the same name would).
   */
  async list(prefix: string): Promise<string[]> {
    const segments = prefixSegments(prefix);
    const index = this.#indexKey();
    try {
      if (segments.length === 0) return await this.#client.zrangebylex(index, '-', '+');
      const base = segments.join('/');
      // '0' follows '/': the range [base/, base0) is every key under the folder `base`.
      const [exact, under] = await Promise.all([
        this.#client.zscore(index, base),
        this.#client.zrangebylex(index, `[${base}/`, `(${base}0`),
      ]);
      return exact === null ? under : [base, ...under];
    } catch (err) {
      throw ioError(`list ${prefix === '' ? 'every key' : prefix}`, err);
    }
  }

  lock(name: string, options?: LockOptions): Promise<StorageLock> {
    return this.#locks.lock(name, options?.timeoutMs);
  }

  /** Closes the connection: `QUIT` while Redis answers, else at once (a stop never waits for an absent Redis). */
  async close(): Promise<void> {
    if (this.#client.status !== 'ready') {
      this.#client.disconnect();
      return;
    }
    try {
      await this.#client.quit();
    } catch {
      this.#client.disconnect();
    }
  }

  #valueKey(key: string): string {
    return `${this.#prefix}:value:${key}`;
  }

  #indexKey(): string {
    return `${this.#prefix}:keys`;
  }

  async #exec(what: string, transaction: ReturnType<Redis['multi']>): Promise<void> {
    let results: [Error | null, unknown][] | null;
    try {
      results = await transaction.exec();
    } catch (err) {
      throw ioError(what, err);
    }
    const failed = results?.find(([err]) => err !== null)?.[0];
    if (results === null || failed) {
      throw ioError(what, failed ?? new Error('the transaction was aborted'));
    }
  }
}
