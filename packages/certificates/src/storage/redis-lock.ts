import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import { lockFileName } from './key-path.js';
import type { StorageLock } from './storage.js';

/** Timing of {@link RedisLocks}; every field in milliseconds. */
export interface RedisLockTiming {
  /** The clock, ms since the epoch (default `Date.now`): wait deadlines are measured with it. */
  now: () => number;
  /** The lock key's expiry (`PX`): a holder that dies leaves a lock this long at most (default 30,000). */
  ttlMs: number;
  /** How often a holder extends its lock to `ttlMs` again (default 5,000). */
  refreshMs: number;
  /** How often a waiter tries again, ms, plus up to half as much at random (default 1,000). */
  pollMs: number;
}

/** What a lock key holds: who took the lock; the token makes it theirs. */
interface LockOwner {
  pid: number;
  hostname: string;
  token: string;
  since: string;
}

/** Deletes the lock only when it still holds the caller's value (compare-and-delete). */
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;
/** Extends the lock only when it still holds the caller's value; 0 when it is not theirs any more. */
const REFRESH = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end`;

/** The client with the two scripts defined (ioredis sends EVALSHA, and EVAL once when the server lacks the script). */
type LockClient = Redis & {
  proxydLockRelease(key: string, value: string): Promise<number>;
  proxydLockRefresh(key: string, value: string, ttlMs: number): Promise<number>;
};

/**
 * Token locks in Redis, one key per name (`<prefix>:lock:<percent-encoded
 * name>`): taken with `SET key owner NX PX ttl`, where the owner record
 * (pid, hostname, a random token, since) is unique to this holding;
 * extended every `refreshMs` by a script that checks the value first;
 * released by a compare-and-delete script, so a holder whose lock expired
 * and was taken by another never removes the new holder's. A holder killed
 * with `kill -9` leaves a key that expires after `ttlMs`; then a waiter
 * takes it. Waiters poll every `pollMs` with up to 50 % random jitter (so
 * nodes that wait for one name do not ask in step); the lock is a mutual
 * exclusion, not a queue. Callers re-read storage after acquiring, as the
 * manager does.
 */
export class RedisLocks {
  readonly #client: LockClient;
  readonly #prefix: string;
  readonly #timing: RedisLockTiming;

  constructor(client: Redis, prefix: string, timing: RedisLockTiming) {
    const withScripts = client as LockClient;
    if (typeof withScripts.proxydLockRelease !== 'function') {
      client.defineCommand('proxydLockRelease', { numberOfKeys: 1, lua: RELEASE });
      client.defineCommand('proxydLockRefresh', { numberOfKeys: 1, lua: REFRESH });
    }
    this.#client = withScripts;
    this.#prefix = prefix;
    this.#timing = timing;
  }

  /** The Redis key of the lock `name` (validated like a file lock's name: non-empty, ≤ 200 bytes encoded). */
  keyOf(name: string): string {
    return `${this.#prefix}:lock:${lockFileName(name).slice(0, -'.lock'.length)}`;
  }

  /**
   * Takes the lock `name`; rejects with `CERT_LOCK_TIMEOUT` (naming the
   * holder) after `timeoutMs` (default 60,000), or `CERT_STORAGE_IO` when
   * Redis fails at the last attempt.
   */
  async lock(name: string, timeoutMs = 60_000): Promise<StorageLock> {
    const key = this.keyOf(name);
    const deadline = this.#timing.now() + timeoutMs;
    const owner: LockOwner = {
      pid: process.pid,
      hostname: hostname(),
      token: randomBytes(12).toString('hex'),
      since: new Date(this.#timing.now()).toISOString(),
    };
    const value = JSON.stringify(owner);
    for (;;) {
      let taken: string | null;
      let failure: unknown = null;
      try {
        taken = await this.#client.set(key, value, 'PX', this.#timing.ttlMs, 'NX');
      } catch (err) {
        taken = null;
        failure = err;
      }
      if (taken === 'OK') return this.#held(key, value);
      if (this.#timing.now() >= deadline) {
        if (failure !== null) throw ioError(`take lock ${JSON.stringify(name)}`, failure);
        throw timeout(name, timeoutMs, await this.#describeHolder(key));
      }
      const wait = this.#timing.pollMs * (1 + Math.random() / 2);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  #held(key: string, value: string): StorageLock {
    const refresh = setInterval(() => {
      this.#client.proxydLockRefresh(key, value, this.#timing.ttlMs).then(
        (ours) => {
          if (ours === 0) clearInterval(refresh); // expired and maybe taken by another: not ours to extend
        },
        () => {}, // Redis unreachable: tried again at the next tick, while the key has not expired
      );
    }, this.#timing.refreshMs);
    refresh.unref();
    let released: Promise<void> | null = null;
    return {
      release: () => {
        released ??= (async () => {
          clearInterval(refresh);
          try {
            await this.#client.proxydLockRelease(key, value);
          } catch (err) {
            // The key expires by itself after ttlMs: a failed release delays the next holder, it never blocks it.
            throw ioError(`release lock ${key} (it expires within ${this.#timing.ttlMs} ms)`, err);
          }
        })();
        return released;
      },
    };
  }

  async #describeHolder(key: string): Promise<string> {
    try {
      const text = await this.#client.get(key);
      if (text === null) return 'released just now';
      const owner = JSON.parse(text) as Partial<LockOwner>;
      return `held by pid ${owner.pid} on ${owner.hostname} since ${owner.since}`;
    } catch {
      return 'held by an unknown owner';
    }
  }
}

function timeout(name: string, timeoutMs: number, holder: string): CertificatesError {
  return new CertificatesError(
    CertificatesErrorCode.LOCK_TIMEOUT,
    `lock ${JSON.stringify(name)} not obtained within ${timeoutMs} ms: ${holder}`,
  );
}

/** A Redis command that failed, as `CERT_STORAGE_IO` with Redis's error as the cause. */
export function ioError(what: string, err: unknown): CertificatesError {
  return new CertificatesError(CertificatesErrorCode.STORAGE_IO, `redis: cannot ${what}: ${(err as Error).message}`, {
    cause: err,
  });
}
