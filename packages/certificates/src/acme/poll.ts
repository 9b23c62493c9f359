import { CertificatesError, CertificatesErrorCode } from '../errors.js';

/** How {@link pollUntilSettled} waits. */
export interface PollOptions {
  /** First wait between two polls, ms; doubles after each poll. */
  intervalMs: number;
  /** Longest wait between two polls, ms; also caps the CA's `Retry-After`. */
  maxIntervalMs: number;
  /** When to give up, ms since the epoch on `now`'s clock. */
  deadline: number;
  /** The clock, ms since the epoch. */
  now: () => number;
  /** Waits `ms` milliseconds. */
  sleep: (ms: number) => Promise<void>;
}

/** One poll's answer: the resource's `status`, and the CA's `Retry-After` in ms if it sent one. */
export interface PollAnswer<T> {
  status: string;
  value: T;
  retryAfterMs?: number | undefined;
}

/**
 * Fetches a resource (an authorization or an order) until its status leaves
 * `pending`/`processing`, and returns the last answer, whatever its status
 * (the caller knows which of `valid`, `ready` or `invalid` it wanted).
 * Waits `intervalMs`, doubling up to `maxIntervalMs`, or the CA's
 * `Retry-After` capped at `maxIntervalMs`. Throws `CERT_ACME_TIMEOUT`, naming
 * `what`, when the resource is still pending at `deadline`.
 */
export async function pollUntilSettled<T>(
  what: string,
  fetch: () => Promise<PollAnswer<T>>,
  options: PollOptions,
): Promise<PollAnswer<T>> {
  let interval = options.intervalMs;
  for (;;) {
    const answer = await fetch();
    if (answer.status !== 'pending' && answer.status !== 'processing') return answer;
    const remaining = options.deadline - options.now();
    if (remaining <= 0) {
      throw new CertificatesError(
        CertificatesErrorCode.ACME_TIMEOUT,
        `${what} still ${answer.status} after the deadline; the CA did not finish`,
      );
    }
    const wait = Math.min(answer.retryAfterMs ?? interval, options.maxIntervalMs, remaining);
    await options.sleep(wait);
    interval = Math.min(interval * 2, options.maxIntervalMs);
  }
}
