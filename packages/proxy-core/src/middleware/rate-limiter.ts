/** One client's counts: requests admitted in the previous and in the current 1-second window. */
interface Counter {
  previous: number;
  current: number;
}

/** One domain's keys, in two generations: seen in the current window, and in the one before. */
interface Generations {
  /** Index of the current window (floor(ms / 1000)). */
  window: number;
  current: Map<string, Counter>;
  previous: Map<string, Counter>;
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

/**
 * `rate_limit <n>/s`: per domain, per client IP, a sliding-window estimator
 * over 1-second windows: the previous window's count weighted by how much of
 * it still overlaps the last second, plus the current window's count. A
 * request is admitted when `previous × (1 − elapsed/1000) + current + 1 ≤ n`
 * (computed in integers, exact at the window edges); refused requests are
 * not counted.
 *
 * Memory: keys live in two generations (seen in the current window / in the
 * previous one). When a window ends the older generation is dropped whole,
 * so a key idle for two windows — whose estimate is 0 — costs nothing and
 * needs no sweeping timer. At `maxKeys` (both generations together) the
 * previous generation is dropped early; if the current one alone is full, a
 * new key's request is admitted untracked (fail open: a flood of fresh IPs
 * cannot evict or lock out the clients already tracked).
 */
export class RateLimiter {
  readonly limit: number;
  readonly #now: () => number;
  readonly #maxKeys: number;
  readonly #domains = new Map<string, Generations>();

  constructor(options: RateLimiterOptions) {
    this.limit = options.limit;
    this.#now = options.now ?? Date.now;
    this.#maxKeys = options.maxKeys ?? 100_000;
  }

  /** Counts a request of `ip` on `domain`; false when it is over the limit. */
  admit(domain: string, ip: string): boolean {
    const now = this.#now();
    const window = Math.floor(now / WINDOW_MS);
    let gens = this.#domains.get(domain);
    if (gens === undefined) {
      gens = { window, current: new Map(), previous: new Map() };
      this.#domains.set(domain, gens);
    } else if (gens.window !== window) {
      if (gens.window === window - 1) {
        gens.previous = gens.current;
        gens.current = new Map();
      } else {
        gens.previous.clear();
        gens.current.clear();
      }
      gens.window = window;
    }
    let counter = gens.current.get(ip);
    if (counter === undefined) {
      const old = gens.previous.get(ip);
      if (gens.current.size + gens.previous.size >= this.#maxKeys) {
        gens.previous.clear();
        if (gens.current.size >= this.#maxKeys) return true;
      }
      counter = { previous: old === undefined ? 0 : old.current, current: 0 };
      if (old !== undefined) gens.previous.delete(ip);
      gens.current.set(ip, counter);
    }
    // previous × (1 − elapsed/1000) + current + 1 ≤ limit, scaled by 1000 to stay in integers.
    const remaining = WINDOW_MS - (now - window * WINDOW_MS);
    if (counter.previous * remaining + (counter.current + 1) * WINDOW_MS > this.limit * WINDOW_MS) return false;
    counter.current++;
    return true;
  }

  /** Keys tracked for `domain`, both generations (for tests and metrics). */
  size(domain: string): number {
    const gens = this.#domains.get(domain);
    return gens === undefined ? 0 : gens.current.size + gens.previous.size;
  }
}
