/** The global admin limit (spec §8): requests per window; also the Unix socket's own window by default. */
export const DEFAULT_RATE_LIMIT = { max: 60, windowMs: 60_000 } as const;

/** A fixed-window request counter. */
export interface RateLimiter {
  /** Counts one request at `now` (ms); returns 0 when allowed, else whole seconds until the window ends (≥ 1). */
  take(now: number): number;
}

/**
 * A fixed window of `windowMs` that opens with the first counted request:
 * `max` requests pass, the next ones get the seconds left until the window
 * closes. Refused requests are not counted.
 */
export function createRateLimiter(max: number, windowMs: number): RateLimiter {
  let windowStart = Number.NEGATIVE_INFINITY;
  let count = 0;
  return {
    take(now) {
      if (now >= windowStart + windowMs || now < windowStart) {
        windowStart = now;
        count = 0;
      }
      if (count < max) {
        count++;
        return 0;
      }
      return Math.max(1, Math.ceil((windowStart + windowMs - now) / 1000));
    },
  };
}
