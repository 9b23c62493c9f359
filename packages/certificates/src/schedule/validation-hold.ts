/** Validation failures of one name within {@link VALIDATION_FAILURE_WINDOW_MS} that put it on hold: 5 (Let's Encrypt's limit per name and hour). */
export const VALIDATION_FAILURE_LIMIT = 5;
/** The window in which {@link VALIDATION_FAILURE_LIMIT} failures put a name on hold, ms: 1 hour. */
export const VALIDATION_FAILURE_WINDOW_MS = 60 * 60 * 1000;

/**
 * Adds a failed validation of a name at `at` (epoch ms) to its list of
 * failure times and returns the new list: oldest first, only those still
 * inside the window, at most the limit. Plain data, so the caller can keep
 * it in the name's metadata across restarts. A success does not clear it:
 * the CA counts failures, not streaks.
 */
export function recordValidationFailure(
  failures: readonly number[],
  at: number,
  limit = VALIDATION_FAILURE_LIMIT,
  windowMs = VALIDATION_FAILURE_WINDOW_MS,
): number[] {
  return [...failures, at].filter((t) => t > at - windowMs).slice(-limit);
}

/**
 * Until when (epoch ms) a name with these validation failure times must
 * wait before its next attempt, or null when it need not: a name that
 * failed `limit` times within the last `windowMs` waits until the oldest
 * of those failures is `windowMs` old.
 */
export function validationHeldUntil(
  failures: readonly number[],
  now: number,
  limit = VALIDATION_FAILURE_LIMIT,
  windowMs = VALIDATION_FAILURE_WINDOW_MS,
): number | null {
  const recent = failures.filter((t) => t > now - windowMs && t <= now).sort((a, b) => a - b);
  const oldest = recent.length >= limit ? recent[recent.length - limit] : undefined;
  return oldest === undefined ? null : oldest + windowMs;
}
