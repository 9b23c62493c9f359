/** One `rate_limit` window: proxy-core's `RateLimiter` satisfies it. */
export interface Limiter {
  /** Whether the request of `ip` to `domain` is admitted now (counted if so). */
  admit(domain: string, ip: string): boolean;
}

/**
 * The fleet's side of `rate_limit` with several nodes: one
 * {@link Limiter} per limit value, fed by every node, so a client's
 * `n` admissions a second are `n` across all nodes, whichever one each of
 * its connections reached, and whatever its address (behind a trusted
 * proxy the key is the client IP the worker resolved from
 * `X-Forwarded-For`, as in one process). Batches are answered in arrival
 * order, one request at a time, so the counts are those of one process.
 */
export class RateLimitAuthority {
  readonly #limiters = new Map<number, Limiter>();
  readonly #create: (limit: number) => Limiter;

  /** `create`: a limiter of `limit` admissions a second per client (proxy-core's `RateLimiter`). */
  constructor(create: (limit: number) => Limiter) {
    this.#create = create;
  }

  /** Answers a batch: 1 admitted, 0 over the limit, per request. */
  admit(batch: readonly unknown[]): Uint8Array {
    const answers = new Uint8Array(batch.length / 3);
    for (let i = 0, j = 0; i + 2 < batch.length; i += 3, j++) {
      const limit = batch[i] as number;
      let limiter = this.#limiters.get(limit);
      if (limiter === undefined) {
        limiter = this.#create(limit);
        this.#limiters.set(limit, limiter);
      }
      answers[j] = limiter.admit(batch[i + 1] as string, batch[i + 2] as string) ? 1 : 0;
    }
    return answers;
  }
}
