/** A source of the current time, epoch ms. */
export interface Clock {
  now(): number;
}

/** Options of {@link OrderRateLimiter}. */
export interface OrderRateLimiterOptions {
  /** The current time (inject a fake in tests). */
  clock: Clock;
  /** Orders allowed per window and account (default 10). */
  limit?: number;
  /** The sliding window, ms (default 10,000). */
  windowMs?: number;
}

/** Default orders per window and account of {@link OrderRateLimiter}: 10. */
export const ORDER_RATE_LIMIT = 10;
/** Default window of {@link OrderRateLimiter}, ms: 10 seconds. */
export const ORDER_RATE_WINDOW_MS = 10 * 1000;

/**
 * At most `limit` new orders per `windowMs` per ACME account, over a
 * sliding window: an order placed at `t` counts until `t + windowMs`
 * (exclusive). Kept in memory: a restart takes longer than the window
 * matters for. Accounts are keys of the caller's choice (e.g. the account
 * URL or CA + email).
 */
export class OrderRateLimiter {
  readonly #clock: Clock;
  readonly #limit: number;
  readonly #windowMs: number;
  /** Per account, the times of orders still inside the window, oldest first (at most `limit`). */
  readonly #orders = new Map<string, number[]>();

  constructor(options: OrderRateLimiterOptions) {
    this.#clock = options.clock;
    this.#limit = options.limit ?? ORDER_RATE_LIMIT;
    this.#windowMs = options.windowMs ?? ORDER_RATE_WINDOW_MS;
  }

  /** The earliest time (epoch ms, ≥ now) at which `account` may place an order. */
  availableAt(account: string): number {
    const now = this.#clock.now();
    const orders = this.#current(account, now);
    const oldest = orders[0];
    return orders.length < this.#limit || oldest === undefined ? now : oldest + this.#windowMs;
  }

  /**
   * Takes a slot for an order by `account` now if one is free. Returns
   * `{ ok: true }`, or `{ ok: false, retryAt }` with the time (epoch ms) to
   * wait until; a refused call takes nothing.
   */
  tryAcquire(account: string): { ok: true } | { ok: false; retryAt: number } {
    const now = this.#clock.now();
    const retryAt = this.availableAt(account);
    if (retryAt > now) return { ok: false, retryAt };
    const orders = this.#orders.get(account) ?? [];
    orders.push(now);
    this.#orders.set(account, orders);
    return { ok: true };
  }

  /** Drops the account's orders that left the window and returns the rest. */
  #current(account: string, now: number): number[] {
    const orders = this.#orders.get(account);
    if (orders === undefined) return [];
    const firstInside = orders.findIndex((at) => at > now - this.#windowMs);
    if (firstInside === -1) {
      this.#orders.delete(account);
      return [];
    }
    if (firstInside > 0) orders.splice(0, firstInside);
    return orders;
  }
}
