import type { Channel } from '@proxyd/cluster';
import { type RateLimitCounter, RateLimiter } from '@proxyd/proxy-core';

/** The request a worker sends with a turn's admissions: `[limit, domain, ip, limit, domain, ip, …]`. */
export const RATE_LIMIT_ADMIT = 'rate-limit.admit';

/**
 * The primary's side of `rate_limit` with several workers: one
 * {@link RateLimiter} per limit value, fed by every worker, so a client's
 * `n` admissions a second are `n` across all workers, whichever one each of
 * its connections reached, and whatever its address (behind a trusted
 * proxy the key is the client IP the worker resolved from
 * `X-Forwarded-For`, as in one process). Batches are answered in arrival
 * order, one request at a time, so the counts are those of one process.
 */
export class RateLimitAuthority {
  readonly #limiters = new Map<number, RateLimiter>();
  readonly #now: (() => number) | undefined;

  constructor(now?: () => number) {
    this.#now = now;
  }

  /** Answers a batch: 1 admitted, 0 over the limit, per request. */
  admit(batch: readonly unknown[]): Uint8Array {
    const answers = new Uint8Array(batch.length / 3);
    for (let i = 0, j = 0; i + 2 < batch.length; i += 3, j++) {
      const limit = batch[i] as number;
      let limiter = this.#limiters.get(limit);
      if (limiter === undefined) {
        limiter = new RateLimiter({ limit, ...(this.#now === undefined ? {} : { now: this.#now }) });
        this.#limiters.set(limit, limiter);
      }
      answers[j] = limiter.admit(batch[i + 1] as string, batch[i + 2] as string) ? 1 : 0;
    }
    return answers;
  }
}

interface Waiting {
  resolve(admitted: boolean): void;
  reject(error: Error): void;
}

/**
 * A worker's `rate_limit` counters: each admission is asked of the primary
 * ({@link RateLimitAuthority}); the admissions of one event-loop turn go
 * in one message. An answer that does not come within `timeoutMs` (the
 * primary is stuck or gone) rejects, and the site step admits the request.
 */
export class RemoteRateLimits {
  readonly #channel: Channel;
  readonly #timeoutMs: number;
  #batch: unknown[] = [];
  #waiting: Waiting[] = [];
  #scheduled = false;
  readonly #flush = (): void => this.#send();

  constructor(channel: Channel, timeoutMs = 1000) {
    this.#channel = channel;
    this.#timeoutMs = timeoutMs;
  }

  /** The counter of a site with `rate_limit <limit>/s`. */
  counter(limit: number): RateLimitCounter {
    return { admit: (domain, ip) => this.#ask(limit, domain, ip) };
  }

  #ask(limit: number, domain: string, ip: string): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.#batch.push(limit, domain, ip);
      this.#waiting.push({ resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(this.#flush);
      }
    });
  }

  #send(): void {
    const batch = this.#batch;
    const waiting = this.#waiting;
    this.#batch = [];
    this.#waiting = [];
    this.#scheduled = false;
    this.#channel.request<Uint8Array>(RATE_LIMIT_ADMIT, batch, this.#timeoutMs).then(
      (answers) => {
        for (let i = 0; i < waiting.length; i++) (waiting[i] as Waiting).resolve(answers[i] === 1);
      },
      (err: Error) => {
        for (const w of waiting) w.reject(err);
      },
    );
  }
}
