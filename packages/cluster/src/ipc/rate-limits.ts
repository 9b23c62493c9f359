import type { Channel } from '../channel.js';

/** The request a worker sends with a turn's admissions: `[limit, domain, ip, limit, domain, ip, …]`. */
export const RATE_LIMIT_ADMIT = 'rate-limit.admit';

interface Waiting {
  resolve(admitted: boolean): void;
  reject(error: Error): void;
}

/**
 * A worker's `rate_limit` counters: each admission is asked of the primary
 * (the fleet's `RateLimitAuthority`); the admissions of one event-loop turn go
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
  counter(limit: number): { admit(domain: string, ip: string): Promise<boolean> } {
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
