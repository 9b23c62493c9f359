/** One client's counters: the current 1-second window and the one before. */
interface Counter {
  /** Index of the current window (floor(ms / 1000)). */
  window: number;
  /** Requests admitted in the previous window. */
  previous: number;
  /** Requests admitted in the current window. */
  current: number;
}

/** Options of {@link RateLimiter}. */
export interface RateLimiterOptions {
  /** Requests per second admitted per key. */
  limit: number;
  /** The clock, ms since the epoch (default `Date.now`). */
  now?: () => number;
  /** Hard cap on tracked keys per domain (default 100,000). */
  maxKeys?: number;
}

const WINDOW_MS = 1000;
/** Idle keys removed from the front of a map per request (amortised sweeping, no timer). */
const SWEEP_PER_CALL = 2;

/**
 * `rate_limit <n>/s`: per domain, per client IP, a sliding-window estimator
 * over 1-second windows (the previous window's count weighted by how much of
 * it still overlaps the last second, plus the current window's count). A
 * request is admitted when `previous × (1 − elapsed/1000) + current + 1 ≤ n`;
 * refused requests are not counted.
 *
 * Memory: each domain's map is kept in order of last activity (a key moves
 * to the end when it enters a new window, at most once a second), so idle
 * keys — whose estimate is 0, at least two windows old — are swept from the
 * front, a few per call, with no timer. At `maxKeys` the least recently
 * active key is dropped to admit a new one (that client starts afresh).
 */
export class RateLimiter {
  readonly limit: number;
  readonly #now: () => number;
  readonly #maxKeys: number;
  readonly #domains = new Map<string, Map<string, Counter>>();

  constructor(options: RateLimiterOptions) {
    this.limit = options.limit;
    this.#now = options.now ?? Date.now;
    this.#maxKeys = options.maxKeys ?? 100_000;
  }

  /** Counts a request of `ip` on `domain`; false when it is over the limit. */
  admit(domain: string, ip: string): boolean {
    let keys = this.#domains.get(domain);
    if (keys === undefined) {
      keys = new Map();
      this.#domains.set(domain, keys);
    }
    const now = this.#now();
    const window = Math.floor(now / WINDOW_MS);
    this.#sweep(keys, window, SWEEP_PER_CALL);
    let counter = keys.get(ip);
    if (counter === undefined) {
      if (keys.size >= this.#maxKeys) {
        this.#sweep(keys, window, keys.size);
        if (keys.size >= this.#maxKeys) {
          const oldest = keys.keys().next();
          if (oldest.done !== true) keys.delete(oldest.value);
        }
      }
      counter = { window, previous: 0, current: 0 };
      keys.set(ip, counter);
    } else if (counter.window !== window) {
      counter.previous = counter.window === window - 1 ? counter.current : 0;
      counter.current = 0;
      counter.window = window;
      keys.delete(ip);
      keys.set(ip, counter);
    }
    const weight = (WINDOW_MS - (now - window * WINDOW_MS)) / WINDOW_MS;
    if (counter.previous * weight + counter.current + 1 > this.limit) return false;
    counter.current++;
    return true;
  }

  /** Keys tracked for `domain` (for tests and metrics). */
  size(domain: string): number {
    return this.#domains.get(domain)?.size ?? 0;
  }

  /** Removes up to `max` idle keys (last active two or more windows ago) from the front. */
  #sweep(keys: Map<string, Counter>, window: number, max: number): void {
    let removed = 0;
    for (const [ip, counter] of keys) {
      if (removed >= max || counter.window >= window - 1) return;
      keys.delete(ip);
      removed++;
    }
  }
}
