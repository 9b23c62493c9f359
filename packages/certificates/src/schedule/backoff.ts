/** The retry policy for a failing name (all durations ms). */
export interface BackoffPolicy {
  /** Delay after the first failure: 60,000 (1 minute). Doubles with each further failure. */
  initialDelayMs: number;
  /** Longest delay between attempts, also the cap on a CA's `Retry-After`: 21,600,000 (6 hours). */
  maxDelayMs: number;
  /** After failing this long without a success, give up: 2,592,000,000 (30 days). */
  giveUpAfterMs: number;
  /** Jitter, a fraction in [0, 1]: each delay is shortened by up to this share of itself (default 0.2), so names that failed together do not retry together. */
  jitter: number;
}

/** The default {@link BackoffPolicy}: 1 minute doubling to 6 hours, ≤ 20 % jitter, give up after 30 days. */
export const DEFAULT_BACKOFF_POLICY: Readonly<BackoffPolicy> = Object.freeze({
  initialDelayMs: 60 * 1000,
  maxDelayMs: 6 * 60 * 60 * 1000,
  giveUpAfterMs: 30 * 24 * 60 * 60 * 1000,
  jitter: 0.2,
});

/** A run of consecutive failures for one name (times epoch ms). Plain data: the caller persists it in the name's metadata. */
interface FailureRun {
  /** The first failure since the last success. */
  firstFailureAt: number;
  /** The latest failure. */
  lastFailureAt: number;
  /** Consecutive failures, ≥ 1. */
  failures: number;
  /** What the latest failure was (the CA's problem or the real network/TLS error). */
  lastError: string;
}

/**
 * A failing name's schedule: still retrying with `nextAttemptAt` (epoch ms),
 * or given up at `gaveUpAt` (epoch ms) after failing for
 * {@link BackoffPolicy.giveUpAfterMs}. No state (null) means no failure
 * since the last success: a success resets the backoff by dropping it.
 */
export type BackoffState =
  | (FailureRun & { gaveUp: false; nextAttemptAt: number })
  | (FailureRun & { gaveUp: true; gaveUpAt: number });

/** One failed attempt, as {@link recordFailure} takes it. */
export interface BackoffFailure {
  /** When it failed, epoch ms. */
  at: number;
  /** What failed and why. */
  error: string;
  /** The CA's `Retry-After` as an absolute time, epoch ms ({@link parseRetryAfter}); null or absent when none. */
  retryAt?: number | null;
}

/**
 * The backoff delay before attempt `failures + 1`, ms, before jitter:
 * `initialDelayMs × 2^(failures − 1)`, capped at `maxDelayMs`.
 */
export function backoffDelay(failures: number, policy: Readonly<BackoffPolicy> = DEFAULT_BACKOFF_POLICY): number {
  return Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.max(0, failures - 1));
}

/**
 * Records a failed attempt and schedules the next one.
 *
 * The delay is {@link backoffDelay} shortened by `jitter × random()` of
 * itself (`random` returns [0, 1), e.g. `Math.random`; a fixed value makes
 * the sequence exact). A CA's `Retry-After` is honoured (no attempt before
 * it) but capped at `maxDelayMs` from the failure, so a CA cannot park a
 * name for a week. Once the run of failures has lasted `giveUpAfterMs`, the
 * state is "gave up" at this failure's time and no next attempt is
 * scheduled; the caller says so in its log and summary. A failure recorded
 * on a gave-up state (an attempt someone asked for anew, e.g. by changing
 * the route) starts a new run.
 */
export function recordFailure(
  previous: BackoffState | null,
  failure: BackoffFailure,
  random: () => number,
  policy: Readonly<BackoffPolicy> = DEFAULT_BACKOFF_POLICY,
): BackoffState {
  const continuing = previous !== null && !previous.gaveUp;
  const run: FailureRun = {
    firstFailureAt: continuing ? previous.firstFailureAt : failure.at,
    lastFailureAt: failure.at,
    failures: continuing ? previous.failures + 1 : 1,
    lastError: failure.error,
  };
  if (failure.at - run.firstFailureAt >= policy.giveUpAfterMs) return { ...run, gaveUp: true, gaveUpAt: failure.at };
  const base = backoffDelay(run.failures, policy);
  const share = Math.min(1, Math.max(0, policy.jitter * random()));
  let delay = base - Math.floor(base * share);
  if (failure.retryAt !== null && failure.retryAt !== undefined) {
    delay = Math.max(delay, Math.min(failure.retryAt - failure.at, policy.maxDelayMs));
  }
  return { ...run, gaveUp: false, nextAttemptAt: failure.at + delay };
}
